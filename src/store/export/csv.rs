//! The CSV export: one row per step, the hardware summary's and the
//! instruction counts' columns after the step's own.

use std::io::Write;

use anyhow::Result;

use super::{Store, load};
use crate::store::StoredStep;
use crate::store::hw_columns::{HW_NUMERIC, HW_TEXT, numeric_values, text_values};

/// Columns of the CSV export, in order.
pub const CSV_COLUMNS: [&str; 35] = [
    "run_id",
    "run_started_at",
    "run_status",
    "suite",
    "profile",
    "target_position",
    "target_label",
    "dbms",
    "version_number",
    "config_name",
    "step_seq",
    "step_name",
    "test",
    "range",
    "group",
    "reported",
    "step_status",
    "step_started_at",
    "secs",
    "threads",
    "events",
    "statements",
    "rows",
    "errors",
    "retries",
    "qps",
    "tps",
    "rows_per_sec",
    "lat_avg_us",
    "lat_p50_us",
    "lat_p95_us",
    "lat_p99_us",
    "lat_p999_us",
    "lat_max_us",
    "client_cpu_us_per_query",
];

/// The CSV's instruction-count columns (`run --instructions`; empty for
/// a normal step): whether the step ran under Valgrind (its QPS and
/// latencies are then that mode's wall-clock numbers), the client
/// backends' instructions per statement and per event, the background
/// processes' per statement, the events and statements counted.
pub const INSTRUCTION_COLUMNS: [&str; 6] = [
    "under_valgrind",
    "instr_per_query",
    "instr_per_event",
    "instr_background_per_query",
    "instr_events",
    "instr_statements",
];

/// The CSV header: [`CSV_COLUMNS`], then the hardware summary's columns
/// ([`HW_NUMERIC`], [`HW_TEXT`]), then [`INSTRUCTION_COLUMNS`].
pub fn csv_header() -> Vec<&'static str> {
    CSV_COLUMNS
        .iter()
        .chain(&HW_NUMERIC)
        .chain(&HW_TEXT)
        .chain(&INSTRUCTION_COLUMNS)
        .copied()
        .collect()
}

/// A step's [`INSTRUCTION_COLUMNS`] cells.
fn instruction_cells(s: &StoredStep) -> [String; 6] {
    let valgrind = s.host.as_ref().is_some_and(|h| h.under_valgrind());
    let Some(i) = s.host.as_ref().and_then(|h| h.instructions.as_ref()) else {
        return [
            valgrind.to_string(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ];
    };
    let num = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    [
        "true".to_string(),
        num(i.per_statement()),
        num(i.per_event()),
        num(i.background_per_statement()),
        i.events.to_string(),
        i.statements.to_string(),
    ]
}

/// Writes run `run` (or every stored run) as CSV: a header line
/// ([`csv_header`]), then one row per step. Empty cells mean "none" (for
/// hardware columns: missing; `hw_missing` says why).
pub fn export_csv(store: &Store, run: Option<i64>, out: &mut dyn Write) -> Result<()> {
    write_csv_row(out, csv_header().into_iter().map(String::from))?;
    for r in load(store, run)? {
        for t in &r.targets {
            for s in &t.steps {
                let opt = |v: Option<String>| v.unwrap_or_default();
                let l = &s.latency;
                let row: [String; 35] = [
                    r.id.to_string(),
                    r.info.started_at.clone(),
                    r.status.clone(),
                    s.info.suite.clone(),
                    r.info.profile.clone(),
                    t.position.to_string(),
                    t.info.label.clone(),
                    t.info.dbms.clone(),
                    t.info.version_number.clone(),
                    opt(t.info.config_name.clone()),
                    s.seq.to_string(),
                    s.info.name.clone(),
                    s.info.test.clone(),
                    opt(s.info.range.map(|v| v.to_string())),
                    opt(s.info.group.map(|g| g.as_str().to_string())),
                    s.info.reported.to_string(),
                    s.status.as_str().to_string(),
                    s.started_at.clone(),
                    s.secs.to_string(),
                    s.threads.to_string(),
                    s.counts.events.to_string(),
                    s.counts.statements.to_string(),
                    s.counts.rows.to_string(),
                    s.counts.errors.to_string(),
                    s.counts.retries.to_string(),
                    s.qps.to_string(),
                    s.tps.to_string(),
                    s.rows_per_sec.to_string(),
                    l.avg.to_string(),
                    l.p50.to_string(),
                    l.p95.to_string(),
                    l.p99.to_string(),
                    l.p999.to_string(),
                    l.max.to_string(),
                    opt(s.client_cpu_us_per_statement().map(|v| v.to_string())),
                ];
                let (numeric, text) = match &s.host {
                    Some(h) => (numeric_values(&h.metrics), text_values(&h.metrics)),
                    None => (
                        [None; HW_NUMERIC.len()],
                        [
                            String::new(),
                            String::new(),
                            "stored without samplers".to_string(),
                        ],
                    ),
                };
                let hw = numeric
                    .into_iter()
                    .map(|v| opt(v.map(|v| v.to_string())))
                    .chain(text)
                    .chain(instruction_cells(s));
                write_csv_row(out, row.into_iter().chain(hw))?;
            }
        }
    }
    Ok(())
}

fn write_csv_row(out: &mut dyn Write, cells: impl Iterator<Item = String>) -> Result<()> {
    out.write_all(csv_line(cells).as_bytes())?;
    out.write_all(b"\n")?;
    Ok(())
}

/// One CSV line (RFC 4180), without its line break: the cells, each quoted
/// by [`csv_field`], separated by commas. The report's CSV uses it too.
pub fn csv_line<S: AsRef<str>>(cells: impl IntoIterator<Item = S>) -> String {
    let fields: Vec<String> = cells.into_iter().map(|c| csv_field(c.as_ref())).collect();
    fields.join(",")
}

/// One CSV cell (RFC 4180): quoted when it holds a comma, quote, line break
/// or edge whitespace, with quotes doubled.
pub fn csv_field(s: &str) -> String {
    let needs_quotes = s.contains([',', '"', '\n', '\r'])
        || s.starts_with(char::is_whitespace)
        || s.ends_with(char::is_whitespace);
    if needs_quotes {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
