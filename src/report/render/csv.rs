//! `report.csv`: one row per test (or Insert Benchmark step) and target,
//! for spreadsheets.

use std::fmt::Write as _;

use anyhow::Result;

use super::Renderer;
use crate::record::{Group, SuiteName};
use crate::report::model::{Band, Report};
use crate::store::export::csv_line;

/// The CSV columns.
pub const CSV_HEADER: [&str; 19] = [
    "suite",
    "group",
    "test",
    "target",
    "column",
    "run_id",
    "rate",
    "relative",
    "band",
    "status",
    "errors",
    "p99_us",
    "client_cpu_us_per_query",
    "sla_failed",
    "lo",
    "hi",
    "n",
    "verdict",
    "method",
];

/// One row per sysbench test × target and per Insert Benchmark step ×
/// target; `rate` is QPS (ips for load steps). Empty fields: not measured.
pub fn render(r: &Report) -> String {
    let mut o = CSV_HEADER.join(",");
    o.push('\n');
    let opt = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    let band = |b: Option<Band>| match b {
        Some(Band::Slower) => "slower",
        Some(Band::Similar) => "similar",
        Some(Band::Faster) => "faster",
        None => "",
    };
    if let Some(s) = &r.sysbench {
        let client = s.cost_columns.iter().position(|c| c.key == "client_cpu");
        for g in &s.groups {
            for t in &g.tests {
                for (c, target) in t.cells.iter().zip(&r.targets) {
                    let Some(c) = c else { continue };
                    let suite = if g.group == Group::WorkloadFile.as_str() {
                        SuiteName::WorkloadFile
                    } else {
                        SuiteName::Sysbench
                    };
                    let fields = [
                        suite.to_string(),
                        g.group.to_string(),
                        t.name.clone(),
                        target.label.clone(),
                        target.column.clone(),
                        target.run_id.to_string(),
                        c.qps.to_string(),
                        opt(c.relative),
                        band(c.band).into(),
                        c.status.into(),
                        c.errors.to_string(),
                        c.p99_us.to_string(),
                        opt(client.and_then(|k| c.cost[k])),
                        String::new(),
                    ];
                    row(
                        &mut o,
                        &with_interval(&fields, c.interval.as_ref(), c.n, c.verdict),
                    );
                }
            }
        }
    }
    if let Some(s) = &r.ibench {
        for (row_data, target) in s.throughput.iter().zip(&r.targets) {
            for (step, c) in s.steps.iter().zip(&row_data.cells) {
                if c.value.is_none() && c.status.is_none() {
                    continue;
                }
                let fields = [
                    SuiteName::Ibench.to_string(),
                    String::new(),
                    step.clone(),
                    target.label.clone(),
                    target.column.clone(),
                    target.run_id.to_string(),
                    opt(c.value),
                    opt(c.relative),
                    band(c.band).into(),
                    c.status.unwrap_or("ok").into(),
                    String::new(),
                    String::new(),
                    String::new(),
                    c.sla_failed.to_string(),
                ];
                row(
                    &mut o,
                    &with_interval(&fields, c.interval.as_ref(), c.n, c.verdict),
                );
            }
        }
    }
    o
}

/// The CSV renderer (`report.csv` in a report directory).
pub struct Csv;

impl Renderer for Csv {
    fn render(&self, report: &Report) -> Result<String> {
        Ok(render(report))
    }
}

/// `fields` followed by the interval columns: `lo`, `hi`, `n`, `verdict`
/// and the method as the JSON spells it (`paired-t`…); empty where none.
fn with_interval(
    fields: &[String],
    iv: Option<&crate::stats::Interval>,
    n: u32,
    verdict: Option<&str>,
) -> Vec<String> {
    let opt = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    let method = iv
        .and_then(|i| serde_json::to_value(i.method).ok())
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let mut out = fields.to_vec();
    out.extend([
        opt(iv.map(|i| i.lo)),
        opt(iv.map(|i| i.hi)),
        n.to_string(),
        verdict.unwrap_or_default().to_string(),
        method,
    ]);
    out
}

fn row(o: &mut String, fields: &[String]) {
    let _ = writeln!(o, "{}", csv_line(fields));
}
