//! The `--threads` knob: one client count, or a sweep of counts that every
//! selected sysbench test runs at in turn.
//!
//! The grammar, items separated by commas (their union, ascending):
//!
//! | item | counts |
//! |---|---|
//! | `N` | N |
//! | `A..B` | A, A+1, … B |
//! | `A..B/S` | A, A+S, A+2S, … up to B (`1..250/10`: 1, 11, … 241) |
//! | `pow2:A..B` | the powers of two from A to B |
//! | `cores:A..B` | the multiples of this host's core count from A to B |
//! | `pow2+cores:A..B` | both (`pow2+cores:1..1024` on 36 cores: 1, 2, 4 … 32, 36, 64, 72 … 1008, 1024) |
//!
//! So `1,2,4,8,16,32,64,128,256,512,1024` and `pow2:1..1024` are the same
//! sweep. A single count serializes as a number (as before sweeps), a
//! sweep as its expanded list (`"1,4,64"`), so a stored plan replays the
//! same counts on any host.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// The largest client count one point may have.
pub const MAX_THREADS: u32 = 100_000;
/// The most points one sweep may have.
pub const MAX_POINTS: usize = 1_000;

/// One or more client counts, ascending and distinct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadCounts(Vec<u32>);

impl ThreadCounts {
    /// One count.
    pub fn one(n: u32) -> ThreadCounts {
        ThreadCounts(vec![n])
    }

    /// The counts, ascending.
    pub fn counts(&self) -> &[u32] {
        &self.0
    }

    /// The smallest count (the only one when this is not a sweep).
    pub fn first(&self) -> u32 {
        self.0[0]
    }

    /// The largest count.
    pub fn largest(&self) -> u32 {
        *self.0.last().expect("at least one count")
    }

    /// Whether there is more than one count.
    pub fn is_sweep(&self) -> bool {
        self.0.len() > 1
    }

    /// Parses `text` (the grammar above) with `cores` for `cores:`.
    pub fn parse_with_cores(text: &str, cores: u32) -> Result<ThreadCounts, String> {
        let bad = |why: String| format!("--threads {text}: {why}");
        let mut out = Vec::new();
        for item in text.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(bad(
                    "an empty item; write e.g. 1,4,64 or pow2:1..1024".into()
                ));
            }
            expand_item(item, cores, &mut out).map_err(bad)?;
            if out.len() > MAX_POINTS * 4 {
                break;
            }
        }
        out.sort_unstable();
        out.dedup();
        if out.is_empty() {
            return Err(bad("the range holds no count; check its bounds".into()));
        }
        if out.len() > MAX_POINTS {
            return Err(bad(format!(
                "more than {MAX_POINTS} counts; use a larger step (A..B/S)"
            )));
        }
        Ok(ThreadCounts(out))
    }
}

/// This host's online CPUs.
fn host_cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

fn count(text: &str) -> Result<u32, String> {
    let n: u32 = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a count; write e.g. 1,4,64 or pow2:1..1024"))?;
    if n == 0 {
        return Err("every count must be at least 1 (one connection per client)".into());
    }
    if n > MAX_THREADS {
        return Err(format!(
            "{n} is above the limit of {MAX_THREADS} connections"
        ));
    }
    Ok(n)
}

fn range(text: &str) -> Result<(u32, u32), String> {
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| format!("'{text}' is not a range A..B"))?;
    let (a, b) = (count(a)?, count(b)?);
    if a > b {
        return Err(format!(
            "the range {text} runs backwards; write it low..high"
        ));
    }
    Ok((a, b))
}

fn expand_item(item: &str, cores: u32, out: &mut Vec<u32>) -> Result<(), String> {
    if let Some((kinds, r)) = item.split_once(':') {
        let (a, b) = range(r)?;
        let mut any = false;
        for kind in kinds.split('+').map(str::trim) {
            any = true;
            match kind {
                "pow2" => out.extend(
                    (0..32)
                        .map(|i| 1u64 << i)
                        .filter(|&v| v >= u64::from(a) && v <= u64::from(b))
                        .map(|v| v as u32),
                ),
                "cores" => {
                    let c = cores.max(1);
                    out.extend((1..=b / c).map(|k| k * c).filter(|&v| v >= a));
                }
                other => {
                    return Err(format!(
                        "unknown series '{other}'; use pow2, cores or pow2+cores"
                    ));
                }
            }
        }
        if !any {
            return Err("name a series before ':' (pow2, cores or pow2+cores)".into());
        }
        return Ok(());
    }
    if item.contains("..") {
        let (r, step) = match item.split_once('/') {
            Some((r, s)) => (r, count(s)?),
            None => (item, 1),
        };
        let (a, b) = range(r)?;
        if (b - a) / step >= MAX_POINTS as u32 * 4 {
            return Err(format!(
                "more than {MAX_POINTS} counts; use a larger step (A..B/S)"
            ));
        }
        out.extend((a..=b).step_by(step as usize));
        return Ok(());
    }
    out.push(count(item)?);
    Ok(())
}

impl FromStr for ThreadCounts {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ThreadCounts::parse_with_cores(s, host_cores())
    }
}

impl fmt::Display for ThreadCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let texts: Vec<String> = self.0.iter().map(u32::to_string).collect();
        f.write_str(&texts.join(","))
    }
}

impl Serialize for ThreadCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_sweep() {
            s.serialize_str(&self.to_string())
        } else {
            s.serialize_u32(self.first())
        }
    }
}

impl<'de> Deserialize<'de> for ThreadCounts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ThreadCounts;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a client count or a sweep such as \"1,4,64\" or \"pow2:1..1024\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ThreadCounts, E> {
                let n = u32::try_from(v).map_err(|_| E::custom("count too large"))?;
                count(&n.to_string())
                    .map(ThreadCounts::one)
                    .map_err(|e| E::custom(format!("threads {v}: {e}")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ThreadCounts, E> {
                let n = u64::try_from(v).map_err(|_| {
                    E::custom(format!("threads {v}: every count must be at least 1"))
                })?;
                self.visit_u64(n)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ThreadCounts, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str, cores: u32) -> Vec<u32> {
        ThreadCounts::parse_with_cores(text, cores)
            .unwrap()
            .counts()
            .to_vec()
    }

    #[test]
    fn lists_ranges_and_series_expand_ascending() {
        assert_eq!(p("4", 2), [4]);
        assert_eq!(p("64,1,4,4", 2), [1, 4, 64]);
        assert_eq!(p("1..5", 2), [1, 2, 3, 4, 5]);
        assert_eq!(p("1..250/10", 2).len(), 25);
        assert_eq!(p("1..250/10", 2)[..3], [1, 11, 21]);
        assert_eq!(
            p("pow2:1..1024", 2),
            p("1,2,4,8,16,32,64,128,256,512,1024", 2)
        );
        assert_eq!(
            p("pow2+cores:1..150", 36),
            [1, 2, 4, 8, 16, 32, 36, 64, 72, 108, 128, 144]
        );
        assert_eq!(p("cores:1..10", 4), [4, 8]);
    }

    #[test]
    fn bad_counts_are_one_line_errors_naming_the_flag() {
        for (text, says) in [
            ("0", "at least 1"),
            ("1,0", "at least 1"),
            ("four", "not a count"),
            ("8..2", "backwards"),
            ("fib:1..8", "unknown series"),
            ("1,,2", "empty item"),
            ("1..100000/1", "more than"),
            ("200000", "above the limit"),
        ] {
            let e = ThreadCounts::parse_with_cores(text, 2).unwrap_err();
            assert!(
                e.starts_with("--threads ") && e.contains(says),
                "{text}: {e}"
            );
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn one_count_serializes_as_a_number_a_sweep_as_its_list() {
        let one = ThreadCounts::one(4);
        assert_eq!(serde_json::to_value(&one).unwrap(), serde_json::json!(4));
        let sweep = ThreadCounts::parse_with_cores("pow2:1..8", 2).unwrap();
        let v = serde_json::to_value(&sweep).unwrap();
        assert_eq!(v, serde_json::json!("1,2,4,8"));
        assert_eq!(serde_json::from_value::<ThreadCounts>(v).unwrap(), sweep);
        assert_eq!(
            serde_json::from_value::<ThreadCounts>(serde_json::json!(4)).unwrap(),
            one
        );
        assert!(serde_json::from_value::<ThreadCounts>(serde_json::json!(0)).is_err());
    }
}
