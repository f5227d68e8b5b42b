//! What the report shows of a workload file's steps beyond a sysbench
//! test's: the transactions by name, the retries and failures by error
//! class, and each statement's mean latency, that the step stored in its
//! metrics.

use crate::record::SuiteName;
use crate::store::StoredStep;

/// Adds the counts of `v` into `into`: numbers summed key by key, text
/// (a statement's SQL) kept.
fn add(into: &mut serde_json::Value, v: &serde_json::Value) {
    if v.is_object() && !into.is_object() {
        *into = serde_json::json!({});
    }
    match (into, v) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, x) in b {
                let into = a.entry(k.clone()).or_insert(serde_json::json!(0));
                if k == "schedule" {
                    worst(into, x);
                } else {
                    add(into, x);
                }
            }
        }
        (a, b) if b.is_u64() => *a = (a.as_u64().unwrap_or(0) + b.as_u64().unwrap_or(0)).into(),
        // A statement's SQL: the same text in every repetition.
        (a, b) if b.is_string() => *a = b.clone(),
        _ => {}
    }
}

/// A paced step's schedule over repetitions: each latency and count at
/// its worst (percentiles of separate runs do not add up).
fn worst(into: &mut serde_json::Value, v: &serde_json::Value) {
    if !into.is_object() {
        *into = serde_json::json!({});
    }
    if let (Some(a), Some(b)) = (into.as_object_mut(), v.as_object()) {
        for (k, x) in b {
            let e = a.entry(k.clone()).or_insert(serde_json::json!(0));
            *e = e.as_u64().unwrap_or(0).max(x.as_u64().unwrap_or(0)).into();
        }
    }
}

/// A workload file's counts over the repetitions of a cell: the stored
/// metrics (transactions by name, retries and failures by error class)
/// added up; `None` for sysbench steps.
pub fn counts<'a>(steps: impl Iterator<Item = &'a StoredStep>) -> Option<serde_json::Value> {
    let mut sum: Option<serde_json::Value> = None;
    for s in steps.filter(|s| s.info.suite_is(SuiteName::WorkloadFile)) {
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
    let s = &counts["schedule"];
    if let Some(p99) = s["intended_p99_us"].as_u64() {
        out.push_str(&format!(
            "; from the intended start: p99 {} ms, max {} ms, {} events 1 ms or more late",
            ms(p99),
            ms(s["intended_max_us"].as_u64().unwrap_or(0)),
            s["late_events"].as_u64().unwrap_or(0)
        ));
    }
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

/// Microseconds as milliseconds, three significant digits or more.
fn ms(us: u64) -> String {
    crate::report::format::amount(us as f64 / 1000.0)
}

/// One statement of a workload file across the report's targets.
#[derive(Clone, Debug, PartialEq)]
pub struct StatementRow {
    /// `transaction#NN`, in the file's order.
    pub key: String,
    pub sql: String,
    /// Per target: the mean latency in milliseconds over the executions
    /// measured (summed over repetitions); `None` where it did not run.
    pub mean_ms: Vec<Option<f64>>,
}

/// The statements of one workload step, from each target's summed counts
/// (`None` for a target without the step).
pub fn statement_rows(cells: &[Option<&serde_json::Value>]) -> Vec<StatementRow> {
    let mut rows: Vec<StatementRow> = Vec::new();
    for (col, counts) in cells.iter().enumerate() {
        let Some(stmts) = counts.and_then(|c| c["statements"].as_object()) else {
            continue;
        };
        for (key, v) in stmts {
            let (n, ns) = (
                v["count"].as_u64().unwrap_or(0),
                v["ns"].as_u64().unwrap_or(0),
            );
            let i = match rows.iter().position(|r| &r.key == key) {
                Some(i) => i,
                None => {
                    let sql = counts.and_then(|c| c["statement_sql"][key].as_str());
                    rows.push(StatementRow {
                        key: key.clone(),
                        sql: sql.unwrap_or("").to_string(),
                        mean_ms: vec![None; cells.len()],
                    });
                    rows.len() - 1
                }
            };
            rows[i].mean_ms[col] = (n > 0).then(|| ns as f64 / n as f64 / 1e6);
        }
    }
    rows.sort_by(|a, b| a.key.cmp(&b.key));
    rows
}

/// A statement's SQL on one line, cut to `max` characters with an ellipsis.
pub fn sql_excerpt(sql: &str, max: usize) -> String {
    let one: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max {
        one
    } else {
        format!(
            "{}…",
            one.chars().take(max.saturating_sub(1)).collect::<String>()
        )
    }
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
        // A paced step: its schedule, the worst of its repetitions.
        let one = |p99: u64, late: u64| {
            serde_json::json!({
                "transactions": {"read": 10},
                "schedule": {"intended_p99_us": p99, "intended_max_us": 2 * p99, "late_events": late},
            })
        };
        let mut sum = serde_json::json!({});
        super::add(&mut sum, &one(1500, 0));
        super::add(&mut sum, &one(800, 4));
        assert_eq!(sum["transactions"]["read"], 20);
        assert_eq!(
            super::summary(&sum),
            "read 20 (100.0 %); from the intended start: p99 1.50 ms, max 3.00 ms, 4 events 1 ms or more late"
        );
    }

    #[test]
    fn statement_means_per_target_in_the_files_order() {
        let a = serde_json::json!({
            "statements": {"read#01": {"count": 4, "ns": 8_000_000}, "read#02": {"count": 0, "ns": 0}},
            "statement_sql": {"read#01": "SELECT v FROM kv WHERE k = $1", "read#02": "SELECT 1"},
        });
        let b = serde_json::json!({
            "statements": {"read#01": {"count": 2, "ns": 1_000_000}},
            "statement_sql": {"read#01": "SELECT v FROM kv WHERE k = $1"},
        });
        let rows = super::statement_rows(&[Some(&a), None, Some(&b)]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].key, "read#01");
        assert_eq!(rows[0].mean_ms, [Some(2.0), None, Some(0.5)]);
        assert_eq!(rows[1].mean_ms, [None, None, None]);
        assert_eq!(
            super::sql_excerpt("SELECT  a,\n b FROM t", 10),
            "SELECT a,…"
        );
        // Repetitions add up; the SQL stays text.
        let mut sum = serde_json::json!({});
        super::add(&mut sum, &a);
        super::add(&mut sum, &a);
        assert_eq!(sum["statements"]["read#01"]["count"], 8);
        assert_eq!(
            sum["statement_sql"]["read#01"],
            "SELECT v FROM kv WHERE k = $1"
        );
    }
}
