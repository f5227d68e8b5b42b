//! "Did you mean …?" for a name tidemark does not know: the known name
//! most like it, when one is close enough to be the likely intent.

/// How alike (Jaro–Winkler, 0 to 1, case ignored) a known name must be to
/// be offered: close enough for a swapped, missing or extra letter or two
/// (`point-qurey`, `qiuck`), far enough that an unrelated word gets no
/// suggestion.
const ALIKE: f64 = 0.85;

/// The known name most like `name`, if any is alike enough; ties go to
/// the first.
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let name = name.to_lowercase();
    let mut best: Option<(&str, f64)> = None;
    for k in known {
        let score = strsim::jaro_winkler(&name, &k.to_lowercase());
        if score >= ALIKE && best.is_none_or(|(_, b)| score > b) {
            best = Some((k, score));
        }
    }
    best.map(|(k, _)| k)
}

/// ` (did you mean 'x'?)` for the known name closest to `name`, or
/// nothing: put right after the unknown name in an error line.
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, known).map_or_else(String::new, |k| format!(" (did you mean '{k}'?)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_gets_the_name_it_was_meant_to_be_and_a_stranger_nothing() {
        let tests = ["point-query", "random-points", "hot-points", "scan"];
        assert_eq!(closest("point-qurey", tests), Some("point-query"));
        assert_eq!(closest("Point-Query", tests), Some("point-query"));
        assert_eq!(closest("hotpoints", tests), Some("hot-points"));
        assert_eq!(closest("tpcc", tests), None);
        assert_eq!(closest("", tests), None);
        let profiles = ["quick", "small", "large", "cpu-bound", "io-bound"];
        assert_eq!(closest("qiuck", profiles), Some("quick"));
        assert_eq!(closest("cpubound", profiles), Some("cpu-bound"));
        assert_eq!(closest("huge", profiles), None);
        assert_eq!(
            did_you_mean("smal", profiles),
            " (did you mean 'small'?)".to_string()
        );
        assert_eq!(did_you_mean("huge", profiles), "");
    }
}
