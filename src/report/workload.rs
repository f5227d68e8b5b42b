//! What the report shows of a workload file's steps beyond a sysbench
//! test's: the transactions by name and the retries and failures by error
//! class that the step stored in its metrics.

use crate::store::StepRecord;

/// A workload file's counts over the repetitions of a cell: the stored
/// metrics (transactions by name, retries and failures by error class)
/// added up; `None` for sysbench steps.
pub fn counts<'a>(steps: impl Iterator<Item = &'a StepRecord>) -> Option<serde_json::Value> {
    fn add(into: &mut serde_json::Value, v: &serde_json::Value) {
        if v.is_object() && !into.is_object() {
            *into = serde_json::json!({});
        }
        match (into, v) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, x) in b {
                    add(a.entry(k.clone()).or_insert(serde_json::json!(0)), x);
                }
            }
            (a, b) if b.is_u64() => *a = (a.as_u64().unwrap_or(0) + b.as_u64().unwrap_or(0)).into(),
            _ => {}
        }
    }
    let mut sum: Option<serde_json::Value> = None;
    for s in steps.filter(|s| s.info.suite == "workload") {
        if let Some(m) = &s.metrics {
            add(sum.get_or_insert_with(|| serde_json::json!({})), m);
        }
    }
    sum
}

/// One line for a cell's counts: `read 7512 (75.1 %), write 2490 (24.9 %);
/// retries: serialization 3; failed: deadlock 1` (zero classes left out).
pub fn summary(counts: &serde_json::Value) -> String {
    let entries = |key: &str| -> Vec<(String, u64)> {
        counts[key]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                    .collect()
            })
            .unwrap_or_default()
    };
    let tx = entries("transactions");
    let total: u64 = tx.iter().map(|(_, n)| n).sum();
    let mut out = tx
        .iter()
        .map(|(name, n)| {
            format!(
                "{name} {n} ({:.1} %)",
                100.0 * *n as f64 / total.max(1) as f64
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    for (key, title) in [("retries", "retries"), ("failed", "failed after retries")] {
        let nonzero: Vec<String> = entries(key)
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        if !nonzero.is_empty() {
            out.push_str(&format!("; {title}: {}", nonzero.join(", ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_summary_gives_shares_and_only_nonzero_classes() {
        let c = serde_json::json!({
            "transactions": {"read": 750, "write": 250},
            "retries": {"serialization": 3, "deadlock": 0},
            "failed": {"serialization": 0},
        });
        assert_eq!(
            super::summary(&c),
            "read 750 (75.0 %), write 250 (25.0 %); retries: serialization 3"
        );
    }
}
