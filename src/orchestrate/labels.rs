//! Target labels within a run: a target's own settings carried in its
//! label, and repeated labels numbered (`#2`, `#3`) so every target reads
//! apart in the terminal, the store, the report and the export.

use crate::record::TargetInfo;
use crate::store::Store;

/// `info` with its label made unique within run `run_id`: a target with
/// settings of its own (`pg@system:synchronous_commit=off`) carries them
/// in its label (`pg1518.base:synchronous_commit=off`), so two targets that
/// differ only in settings read apart; the same label at an earlier
/// position (the same spec given twice) makes this one `label#2`,
/// `label#3`…, as the terminal, the store, the report and the export all
/// show it.
pub(super) fn unique_in_run(
    store: &Store,
    run_id: i64,
    pos: u32,
    info: &TargetInfo,
) -> anyhow::Result<TargetInfo> {
    let mut info = info.clone();
    info.label = label_with_settings(&info.label, &info.spec);
    let earlier = store
        .position_labels(run_id)?
        .into_iter()
        .filter(|(p, l)| *p < pos && l.split('#').next() == Some(info.label.as_str()))
        .count();
    if earlier > 0 {
        info.label = format!("{}#{}", info.label, earlier + 1);
    }
    Ok(info)
}

/// `label` followed by the target's own `:name=value` settings as the
/// spec writes them; the label alone when it has none (or is a URL).
pub(super) fn label_with_settings(label: &str, spec: &str) -> String {
    match crate::plan::target::split_target_settings(spec) {
        Ok((_, own)) if !own.is_empty() => {
            let own = crate::plan::target::join_target_settings("", &own);
            format!("{label}{own}")
        }
        _ => label.to_string(),
    }
}

/// Makes labels unique (two targets of one version and config differ only
/// in settings): later duplicates get `#2`, `#3`.
pub(super) fn dedupe_labels(labels: &mut [String]) {
    for i in 1..labels.len() {
        let n = labels[..i]
            .iter()
            .filter(|l| l.split('#').next() == Some(labels[i].as_str()))
            .count();
        if n > 0 {
            labels[i] = format!("{}#{}", labels[i], n + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_with_settings_of_its_own_carries_them_in_its_label() {
        assert_eq!(
            label_with_settings("pg1518.base", "pg@system:synchronous_commit=off"),
            "pg1518.base:synchronous_commit=off"
        );
        assert_eq!(
            label_with_settings(
                "sqlite3541.wal",
                "sqlite:/tmp/a.db+wal:cache_size=1:mmap_size=0"
            ),
            "sqlite3541.wal:cache_size=1:mmap_size=0"
        );
        assert_eq!(
            label_with_settings("pg1518.base", "pg@system"),
            "pg1518.base"
        );
        assert_eq!(
            label_with_settings("pg1518.external", "postgres://u@127.0.0.1:5432/db"),
            "pg1518.external"
        );
    }

    #[test]
    fn duplicate_labels_get_numbers() {
        let mut l = vec![
            "pg1518.base".to_string(),
            "pg1518.base".into(),
            "pg169.base".into(),
            "pg1518.base".into(),
        ];
        dedupe_labels(&mut l);
        assert_eq!(
            l,
            [
                "pg1518.base",
                "pg1518.base#2",
                "pg169.base",
                "pg1518.base#3"
            ]
        );
    }
}
