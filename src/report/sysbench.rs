//! The sysbench section: per group (point queries, range queries without
//! and with aggregation, writes) the absolute and relative QPS of each test
//! on each target, the per-query cost, and a summary in basis points.
//!
//! The seeds define relative QPS as QPS(target) / QPS(base) and one basis
//! point as 0.01 of it; a group is summed up by its median change and its
//! largest one, which is what this module computes.

use serde::Serialize;

use super::cost::{CostColumn, SYSBENCH_COST, sysbench_cost};
use super::format;
use super::model::{Band, Column, ReportOptions, relative, round2};
use crate::record::{Group, StepStatus};
use crate::store::StepRecord;

/// Everything the report says about sysbench tests.
#[derive(Clone, Debug, Serialize)]
pub struct SysbenchSection {
    /// The groups that have at least one test, in the seeds' order.
    pub groups: Vec<GroupSection>,
    /// The per-query cost columns, aligned with [`Cell::cost`].
    pub cost_columns: Vec<CostColumn>,
    /// Whether any target has a value in each cost column.
    pub cost_present: Vec<bool>,
}

/// One group of tests.
#[derive(Clone, Debug, Serialize)]
pub struct GroupSection {
    /// `Group::as_str` (`point`, `range-noagg`, `range-agg`, `write`).
    pub group: &'static str,
    /// The heading (`point queries`…).
    pub title: &'static str,
    pub tests: Vec<TestRow>,
    /// One per target other than the base.
    pub summaries: Vec<GroupSummary>,
}

/// One test across the targets.
#[derive(Clone, Debug, Serialize)]
pub struct TestRow {
    /// The step name as the seeds write it (`random-points_range=10`).
    pub name: String,
    /// One per target, base first; `None`: the target did not run it.
    pub cells: Vec<Option<Cell>>,
}

/// One test on one target.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub qps: f64,
    pub tps: f64,
    /// `ok`, `errors`, `interrupted` or `failed`.
    pub status: &'static str,
    pub errors: u64,
    pub p99_us: u64,
    /// QPS / base QPS; `None` for the base and when either step did not
    /// run to its end.
    pub relative: Option<f64>,
    pub band: Option<Band>,
    /// Per-query costs, aligned with [`SysbenchSection::cost_columns`].
    pub cost: Vec<Option<f64>>,
    /// Each cost / the base's cost.
    pub cost_relative: Vec<Option<f64>>,
}

impl Cell {
    /// Whether the cell needs a mark: errors, or the step did not finish.
    pub fn flagged(&self) -> bool {
        self.status != "ok" || self.errors > 0
    }
}

/// How one target compares with the base over a group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupSummary {
    pub target: String,
    /// `col-1`, `col-2`…
    pub column: String,
    /// Tests with a relative QPS.
    pub compared: usize,
    /// Tests within ±`within_bp` basis points.
    pub within: usize,
    /// Median change, basis points.
    pub median_bp: Option<f64>,
    /// The test with the highest relative QPS.
    pub best: Option<TestChange>,
    /// The test with the lowest relative QPS.
    pub worst: Option<TestChange>,
    /// The test furthest from 1.00, either way.
    pub largest: Option<TestChange>,
    /// The summary in one sentence.
    pub text: String,
}

/// A test's relative QPS and its change in basis points.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TestChange {
    pub test: String,
    pub relative: f64,
    pub bp: f64,
}

/// Basis points of a relative QPS, from the value as printed: 0.95 is -5.
pub fn basis_points(relative: f64) -> f64 {
    ((round2(relative) - 1.0) * 100.0).round()
}

/// The median of `xs` (mean of the middle two for an even count).
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Sums up one target's relative QPS over a group's tests, given as
/// (test, relative) in the group's order.
pub fn summarize(
    target: &str,
    column: &str,
    changes: &[(String, f64)],
    within_bp: f64,
) -> GroupSummary {
    let change = |(test, rel): &(String, f64)| TestChange {
        test: test.clone(),
        relative: *rel,
        bp: basis_points(*rel),
    };
    let bps: Vec<f64> = changes.iter().map(|(_, r)| basis_points(*r)).collect();
    let within = bps.iter().filter(|b| b.abs() <= within_bp).count();
    let pick = |better: &dyn Fn(f64, f64) -> bool| {
        let mut best: Option<usize> = None;
        for i in 0..changes.len() {
            if best.is_none_or(|b| better(changes[i].1, changes[b].1)) {
                best = Some(i);
            }
        }
        best.map(|i| change(&changes[i]))
    };
    let best = pick(&|a, b| a > b);
    let worst = pick(&|a, b| a < b);
    let largest = pick(&|a, b| basis_points(a).abs() > basis_points(b).abs());
    let median_bp = median(&bps);
    let text = match (&largest, median_bp) {
        (Some(l), Some(m)) => format!(
            "{within} of {n} {tests} within ±{w} basis points; median change {m} basis points; largest change: {t} {b} basis points (rQPS {r})",
            n = changes.len(),
            tests = if changes.len() == 1 { "test" } else { "tests" },
            w = format::amount(within_bp).trim_end_matches(".00"),
            m = format::bp(m),
            t = l.test,
            b = format::bp(l.bp),
            r = format::rel(l.relative),
        ),
        _ => "no test was measured on both this target and the base".into(),
    };
    GroupSummary {
        target: target.to_string(),
        column: column.to_string(),
        compared: changes.len(),
        within,
        median_bp,
        best,
        worst,
        largest,
        text,
    }
}

/// Whether a step's QPS can be compared: it ran to its end (errors are
/// flagged, not excluded).
fn comparable(s: &StepRecord) -> bool {
    matches!(s.status, StepStatus::Ok | StepStatus::Errors)
}

/// Builds the section; `None` when no target has a reported sysbench step.
pub fn build(columns: &[Column<'_>], opts: &ReportOptions) -> Option<SysbenchSection> {
    let mut names: Vec<(String, Group)> = Vec::new();
    for c in columns {
        for s in &c.target.steps {
            if s.info.reported
                && s.info.suite == "sysbench"
                && let Some(g) = s.info.group
                && !names.iter().any(|(n, _)| *n == s.info.name)
            {
                names.push((s.info.name.clone(), g));
            }
        }
    }
    if names.is_empty() {
        return None;
    }
    let mut cost_present = vec![false; SYSBENCH_COST.len()];
    let mut groups = Vec::new();
    for group in Group::ALL {
        let tests: Vec<TestRow> = names
            .iter()
            .filter(|(_, g)| *g == group)
            .map(|(name, _)| test_row(columns, name, opts))
            .collect();
        if tests.is_empty() {
            continue;
        }
        for cell in tests.iter().flat_map(|t| t.cells.iter().flatten()) {
            for (p, v) in cost_present.iter_mut().zip(&cell.cost) {
                *p |= v.is_some();
            }
        }
        let summaries = (1..columns.len())
            .map(|i| {
                let changes: Vec<(String, f64)> = tests
                    .iter()
                    .filter_map(|t| {
                        let rel = t.cells[i].as_ref()?.relative?;
                        Some((t.name.clone(), rel))
                    })
                    .collect();
                summarize(
                    columns[i].label,
                    &super::model::column_name(i),
                    &changes,
                    opts.within_bp,
                )
            })
            .collect();
        groups.push(GroupSection {
            group: group.as_str(),
            title: group.title(),
            tests,
            summaries,
        });
    }
    Some(SysbenchSection {
        groups,
        cost_columns: SYSBENCH_COST.to_vec(),
        cost_present,
    })
}

fn test_row(columns: &[Column<'_>], name: &str, opts: &ReportOptions) -> TestRow {
    let base = columns[0].step(name);
    let base_cost = base.map(sysbench_cost);
    let cells = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let s = c.step(name)?;
            let rel = match base {
                Some(b) if i > 0 && comparable(b) && comparable(s) => relative(s.qps, b.qps),
                _ => None,
            };
            let cost = sysbench_cost(s);
            let cost_relative = match (&base_cost, i) {
                (Some(bc), 1..) => cost
                    .iter()
                    .zip(bc)
                    .map(|(v, b)| relative((*v)?, (*b)?))
                    .collect(),
                _ => vec![None; cost.len()],
            };
            Some(Cell {
                qps: s.qps,
                tps: s.tps,
                status: s.status.as_str(),
                errors: s.counts.errors,
                p99_us: s.latency.p99,
                relative: rel,
                band: rel.map(|r| opts.bands.classify(r)),
                cost,
                cost_relative,
            })
        })
        .collect();
    TestRow {
        name: name.to_string(),
        cells,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changes(v: &[(&str, f64)]) -> Vec<(String, f64)> {
        v.iter().map(|(n, r)| (n.to_string(), *r)).collect()
    }

    #[test]
    fn basis_points_follow_the_seeds_definition() {
        assert_eq!(basis_points(0.95), -5.0);
        assert_eq!(basis_points(2.47), 147.0);
        assert_eq!(basis_points(1.004), 0.0);
        // From 0.95 to 0.85 is 10 basis points.
        assert_eq!(basis_points(0.95) - basis_points(0.85), 10.0);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, -1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[3.0, -1.0, 2.0, 0.0]), Some(1.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn summary_counts_tests_within_the_limit_and_names_the_largest_change() {
        // The seeds' 19beta1 range-with-aggregation group.
        let c = changes(&[
            ("read-only-count", 2.47),
            ("read-only-distinct", 0.99),
            ("read-only-order", 1.01),
            ("read-only_range=10", 0.97),
            ("read-only_range=100", 1.00),
            ("read-only_range=10000", 1.03),
            ("read-only-simple", 1.09),
            ("read-only-sum", 1.01),
        ]);
        let s = summarize("pg19b1", "col-2", &c, 2.0);
        assert_eq!(s.compared, 8);
        assert_eq!(s.within, 4);
        assert_eq!(s.median_bp, Some(1.0));
        assert_eq!(s.best.as_ref().unwrap().test, "read-only-count");
        assert_eq!(s.worst.as_ref().unwrap().test, "read-only_range=10");
        assert_eq!(s.largest.as_ref().unwrap().bp, 147.0);
        assert_eq!(
            s.text,
            "4 of 8 tests within ±2 basis points; median change +1 basis points; largest change: read-only-count +147 basis points (rQPS 2.47)"
        );
    }

    #[test]
    fn summary_of_nothing_says_so() {
        let s = summarize("x", "col-1", &[], 2.0);
        assert_eq!(s.compared, 0);
        assert!(s.best.is_none());
        assert!(s.text.contains("no test"));
    }
}
