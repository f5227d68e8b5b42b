//! The report in formats CI tools read, from [`super::gate`]'s cells:
//! JUnit XML (a test case per compared cell, a failure per cell the gate
//! fails on, a skip per cell without a verdict) and Bencher's metric
//! format (JSON keyed by benchmark, then measure, each with its value and
//! where known its interval as `lower_value` / `upper_value`). Instruction
//! counts (`run --instructions`) are cells of the suite `instructions`,
//! measured as `instructions` (per query) and `relative-instructions`.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use super::gate::{FailOn, GateCell, cells};
use super::model::Report;
use super::render::svg::esc;
use crate::record::SuiteName;
use crate::stats::Verdict;

/// The JUnit XML of `r`: one `testsuite` per suite and group, one
/// `testcase` per compared cell (class `suite.group.target`, name the
/// test); a cell whose verdict `on` matches is a `failure`, one without a
/// verdict (`not verified`, `unknown`) is `skipped`.
pub fn junit(r: &Report, on: FailOn) -> String {
    let all = cells(r);
    let mut groups: Vec<(String, Vec<&GateCell>)> = Vec::new();
    for c in &all {
        let name = format!("{}: {}", c.suite, c.group);
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(c),
            None => groups.push((name, vec![c])),
        }
    }
    let failed = |c: &GateCell| on.matches(c.verdict());
    let skipped = |c: &GateCell| matches!(c.verdict(), Verdict::Unknown | Verdict::Unverified);
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        o,
        "<testsuites name=\"tidemark\" tests=\"{}\" failures=\"{}\">",
        all.len(),
        all.iter().filter(|c| failed(c)).count()
    );
    for (name, list) in &groups {
        let _ = writeln!(
            o,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">",
            esc(name),
            list.len(),
            list.iter().filter(|c| failed(c)).count(),
            list.iter().filter(|c| skipped(c)).count()
        );
        for c in list {
            let _ = write!(
                o,
                "    <testcase classname=\"{}\" name=\"{}\"",
                esc(&format!("{}.{}.{}", c.suite, c.group, c.target)),
                esc(&c.test)
            );
            if failed(c) {
                let _ = writeln!(
                    o,
                    ">\n      <failure type=\"{}\" message=\"{}\"/>\n    </testcase>",
                    esc(c.verdict),
                    esc(&c.line())
                );
            } else if skipped(c) {
                let _ = writeln!(
                    o,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                    esc(&c.line())
                );
            } else {
                o.push_str("/>\n");
            }
        }
        o.push_str("  </testsuite>\n");
    }
    o.push_str("</testsuites>\n");
    o
}

/// Bencher's metric format for `r`: each target's throughput per test
/// (`throughput`: its QPS or rows/s) under the benchmark `suite/test
/// [target]`, and for a target other than the base its ratio to the base
/// (`relative-throughput`, with the interval's ends when it has one).
/// Instruction counts go under `instructions/test [target]` as
/// `instructions` (per query) and `relative-instructions`.
pub fn bencher(r: &Report) -> String {
    let mut out = Map::new();
    let mut put = |suite: &str, test: &str, target: &str, measure: &str, v: Value| {
        let key = format!("{suite}/{test} [{target}]");
        let entry = out.entry(key).or_insert_with(|| json!({}));
        entry[measure] = v;
    };
    if let Some(s) = &r.sysbench {
        for t in s.groups.iter().flat_map(|g| &g.tests) {
            if let Some(c) = t.cells.first().and_then(Option::as_ref) {
                put(
                    SuiteName::Sysbench.as_str(),
                    &t.name,
                    &r.targets[0].label,
                    "throughput",
                    json!({ "value": c.qps }),
                );
            }
        }
    }
    if let Some(s) = &r.ibench
        && let Some(row) = s.throughput.first()
    {
        for (step, c) in s.steps.iter().zip(&row.cells) {
            if let Some(v) = c.value {
                put(
                    SuiteName::Ibench.as_str(),
                    step,
                    &r.targets[0].label,
                    "throughput",
                    json!({ "value": v }),
                );
            }
        }
    }
    if let Some(s) = &r.instructions {
        for t in &s.tests {
            if let Some(c) = t.cells.first().and_then(Option::as_ref) {
                put(
                    "instructions",
                    &t.name,
                    &r.targets[0].label,
                    "instructions",
                    json!({ "value": c.per_query }),
                );
            }
        }
    }
    for c in cells(r) {
        let (measure, relative) = if c.suite == "instructions" {
            ("instructions", "relative-instructions")
        } else {
            ("throughput", "relative-throughput")
        };
        if let Some(v) = c.value {
            put(c.suite, &c.test, &c.target, measure, json!({ "value": v }));
        }
        if let Some(ratio) = c.ratio {
            let mut m = json!({ "value": ratio });
            if let Some(iv) = &c.interval {
                m["lower_value"] = json!(iv.lo);
                m["upper_value"] = json!(iv.hi);
            }
            put(c.suite, &c.test, &c.target, relative, m);
        }
    }
    serde_json::to_string_pretty(&Value::Object(out)).expect("a JSON object serializes") + "\n"
}
