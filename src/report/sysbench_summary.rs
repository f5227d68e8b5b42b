//! How one target compares with the base over a sysbench group: the
//! seeds' basis points (0.01 of relative QPS), the median and largest
//! change, and how many cells each verdict got with the method behind them.

use serde::Serialize;

use super::basis::round2;
use super::format;
use super::sysbench_cell::Cell;
use crate::stats::{Method, Verdict, VerdictCounts, median};

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
    /// How many of the group's tests got each verdict.
    pub verdicts: VerdictCounts,
    /// How the intervals behind the verdicts were computed (the method of
    /// most cells), `None` when no cell has one.
    pub method: Option<Method>,
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
        verdicts: VerdictCounts::default(),
        method: None,
    }
}

/// Adds the verdict counts of a group's `cells` to its summary, and says
/// in the text how many cells could be flagged by chance alone.
pub(super) fn with_verdicts(summary: &mut GroupSummary, cells: &[&Cell], min_effect: f64) {
    for c in cells {
        summary.verdicts.add(Verdict::parse(c.verdict));
    }
    summary.method = majority_method(cells.iter().filter_map(|c| c.interval.map(|i| i.method)));
    if cells.is_empty() {
        return;
    }
    let decided = summary.verdicts.decided();
    if decided == 0 && summary.verdicts.unverified > 0 {
        summary.text = format!(
            "{} (one measurement per side: its interval cannot see drift between servers or over time; repeat with --repeat 3 for verdicts); {}",
            summary.verdicts.phrase_for_rate(),
            summary.text
        );
        return;
    }
    if decided == 0 {
        summary.text = format!(
            "{} (no interval: too few seconds or repetitions; use longer steps or --repeat 3); {}",
            summary.verdicts.phrase_for_rate(),
            summary.text
        );
        return;
    }
    let by_chance = decided as f64 * (1.0 - crate::stats::LEVEL);
    summary.text = format!(
        "{} (95 % intervals{}, minimum effect {}%; about {by_chance:.1} of {decided} could be flagged by chance); {}",
        summary.verdicts.phrase_for_rate(),
        match summary.method {
            Some(Method::PairedT) => " from repetitions paired in time",
            Some(Method::WelchT) => " from unpaired repetitions",
            Some(Method::BlockBootstrap) => " from per-second rates within one measurement each",
            Some(Method::PairedSlices) => " from slices paired in time",
            Some(Method::PooledRepetitions) => {
                " from repetitions on fresh servers, variance pooled over the group"
            }
            Some(Method::InstructionFloor) => " from the A/A floor of instruction counts",
            None => "",
        },
        format::amount(min_effect * 100.0).trim_end_matches(".00"),
        summary.text
    );
}

/// The method most of `methods` used.
pub fn majority_method(methods: impl Iterator<Item = Method>) -> Option<Method> {
    let mut counts: Vec<(Method, usize)> = Vec::new();
    for m in methods {
        match counts.iter_mut().find(|(k, _)| *k == m) {
            Some((_, n)) => *n += 1,
            None => counts.push((m, 1)),
        }
    }
    counts.into_iter().max_by_key(|(_, n)| *n).map(|(m, _)| m)
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
