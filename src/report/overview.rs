//! The report's first screen, derived from the [`Report`] model: per suite
//! and group how many tests each target got of each verdict, the largest
//! real changes (a decided verdict) with their interval and the cost
//! metrics that moved with them, and for a single-target run the headline
//! numbers and the command that compares it with something.
//!
//! It only reads the model (no store, no statistics of its own), so every
//! renderer's first screen says what the tables below it say.

use serde::Serialize;

use super::format::{amount, rel_pm};
use super::model::Report;
use super::sysbench::Cell;
use crate::stats::{Interval, VerdictCounts, median};

/// How many real changes the first screen lists per group.
pub const PER_GROUP: usize = 2;

/// The first screen.
#[derive(Clone, Debug, Serialize)]
pub struct Overview {
    /// One row per suite and group.
    pub groups: Vec<GroupVerdicts>,
    /// The largest changes with a decided verdict: up to [`PER_GROUP`] per
    /// group, in the groups' order, largest first within a group.
    pub changes: Vec<RealChange>,
    /// Changes with a verdict beyond the ones listed.
    pub more_changes: usize,
    /// When no change is real: the largest point estimates of at least the
    /// minimum effect whose verdict is unknown (no interval), so the
    /// reader sees where to look and that it needs more measurement.
    pub unverified: Vec<RealChange>,
    /// When no change is real: the largest changes whose interval says
    /// "no difference", so the reader sees how far they went and how wide
    /// the intervals are (at most three).
    pub within_noise: Vec<RealChange>,
    /// Only for a single-target report.
    pub headline: Option<Headline>,
}

/// One suite's group and each compared target's verdict counts there.
#[derive(Clone, Debug, Serialize)]
pub struct GroupVerdicts {
    /// `sysbench` or `ibench`.
    pub suite: &'static str,
    /// `point queries`, …, `Insert Benchmark`.
    pub title: String,
    /// The id of the detail it links to.
    pub anchor: String,
    /// Tests (or steps) in the group.
    pub tests: usize,
    /// One per target other than the base, aligned with `targets[1..]`.
    pub counts: Vec<VerdictCounts>,
    /// Per target other than the base: the smallest change this run could
    /// have called real in the group, the median half-width of its cells'
    /// intervals (a fraction: 0.04 is ±4 %); `None` when no cell has an
    /// interval that can carry a verdict.
    pub detectable: Vec<Option<f64>>,
}

/// `sees ±4.1%`: what [`GroupVerdicts::detectable`] says, for the first
/// screen's cells.
pub fn sees(detectable: Option<f64>) -> Option<String> {
    detectable.map(|d| format!("sees ±{:.1}%", d * 100.0))
}

/// The median half-width, as a fraction of the ratio, of the intervals
/// that can carry a verdict (not the within-measurement bootstrap's).
fn detectable(intervals: &[Option<crate::stats::Interval>]) -> Option<f64> {
    let mut hw: Vec<f64> = intervals
        .iter()
        .flatten()
        .filter(|iv| iv.method.verifies())
        .map(|iv| iv.half_width().exp() - 1.0)
        .collect();
    if hw.is_empty() {
        return None;
    }
    hw.sort_by(f64::total_cmp);
    let n = hw.len();
    Some(if n % 2 == 1 {
        hw[n / 2]
    } else {
        (hw[n / 2 - 1] + hw[n / 2]) / 2.0
    })
}

/// A change the interval says is real.
#[derive(Clone, Debug, Serialize)]
pub struct RealChange {
    /// `col-1`, …
    pub column: String,
    pub target: String,
    pub title: String,
    pub anchor: String,
    pub test: String,
    pub relative: f64,
    pub interval: Option<Interval>,
    /// `faster` or `slower` (`unknown` in [`Overview::unverified`], `no
    /// difference` in [`Overview::within_noise`]).
    pub verdict: &'static str,
    /// The cost metrics that moved with it, in words
    /// (`+2.1 µs host CPU per query`).
    pub moved: Vec<String>,
}

impl RealChange {
    /// `1.08 ± 0.02`.
    pub fn rqps(&self) -> String {
        rel_pm(self.relative, self.interval.as_ref())
    }
}

/// The headline numbers of a single-target run, per group.
#[derive(Clone, Debug, Serialize)]
pub struct Headline {
    pub rows: Vec<HeadlineRow>,
    /// Commands that compare this run with something, ready to paste.
    pub next: Vec<String>,
}

/// One group's numbers on the single target.
#[derive(Clone, Debug, Serialize)]
pub struct HeadlineRow {
    pub title: String,
    pub anchor: String,
    pub tests: usize,
    pub median_qps: Option<f64>,
    pub median_p99_us: Option<f64>,
    pub median_cpu_us: Option<f64>,
}

/// What each sysbench cost column is, as a change is written.
const COST_WORDS: [(&str, &str); 7] = [
    ("cpupq", "µs host CPU per query"),
    ("cspq", "context switches per query"),
    ("rpq", "storage reads per query"),
    ("rkbpq", "KB read per query"),
    ("wkbpi", "KB written per query"),
    ("server_cpu", "µs server CPU per query"),
    ("client_cpu", "µs client CPU per query"),
];

/// The anchor of a sysbench group's detail.
pub fn group_anchor(group: &str) -> String {
    format!("g-{group}")
}

/// Builds the first screen of `r`.
pub fn build(r: &Report) -> Overview {
    let others = r.targets.len().saturating_sub(1);
    let mut groups = Vec::new();
    let mut changes = Vec::new();
    if let Some(s) = &r.sysbench {
        for g in &s.groups {
            let anchor = group_anchor(g.group);
            let mut counts = vec![VerdictCounts::default(); others];
            let mut intervals: Vec<Vec<Option<crate::stats::Interval>>> = vec![Vec::new(); others];
            for t in &g.tests {
                let base = t.cells[0].as_ref();
                for (i, c) in t.cells.iter().enumerate().skip(1) {
                    let Some(c) = c else { continue };
                    counts[i - 1].add(verdict_of(c.verdict));
                    intervals[i - 1].push(c.interval);
                    if let (
                        Some(
                            v
                            @ ("faster" | "slower" | "unknown" | "not verified" | "no difference"),
                        ),
                        Some(x),
                    ) = (c.verdict, c.relative)
                    {
                        changes.push(RealChange {
                            column: r.targets[i].column.clone(),
                            target: r.targets[i].label.clone(),
                            title: g.title.to_string(),
                            anchor: anchor.clone(),
                            test: t.label.clone(),
                            relative: x,
                            interval: c.interval,
                            verdict: v,
                            moved: base
                                .map(|b| moved(s.cost_columns.len(), b, c))
                                .unwrap_or_default(),
                        });
                    }
                }
            }
            groups.push(GroupVerdicts {
                suite: "sysbench",
                title: g.title.to_string(),
                anchor,
                tests: g.tests.len(),
                counts,
                detectable: intervals.iter().map(|v| detectable(v)).collect(),
            });
        }
    }
    if let Some(s) = &r.ibench {
        let mut counts = vec![VerdictCounts::default(); others];
        let mut intervals: Vec<Vec<Option<crate::stats::Interval>>> = vec![Vec::new(); others];
        for (i, row) in s.throughput.iter().enumerate().skip(1) {
            for (step, c) in s.steps.iter().zip(&row.cells) {
                if c.value.is_none() || i > others {
                    continue;
                }
                counts[i - 1].add(verdict_of(c.verdict));
                intervals[i - 1].push(c.interval);
                if let (
                    Some(v @ ("faster" | "slower" | "unknown" | "not verified" | "no difference")),
                    Some(x),
                ) = (c.verdict, c.relative)
                {
                    changes.push(RealChange {
                        column: r.targets[i].column.clone(),
                        target: row.target.clone(),
                        title: "Insert Benchmark".into(),
                        anchor: "ibench".into(),
                        test: step.clone(),
                        relative: x,
                        interval: c.interval,
                        verdict: v,
                        moved: Vec::new(),
                    });
                }
            }
        }
        groups.push(GroupVerdicts {
            suite: "ibench",
            title: "Insert Benchmark".into(),
            anchor: "ibench".into(),
            tests: s.steps.len(),
            counts,
            detectable: intervals.iter().map(|v| detectable(v)).collect(),
        });
    }
    if let Some(s) = &r.instructions {
        groups.push(GroupVerdicts {
            suite: "instructions",
            title: "instructions per query (Valgrind)".into(),
            anchor: "instructions".into(),
            tests: s.tests.len(),
            counts: s.summaries.iter().map(|x| x.verdicts).collect(),
            detectable: (1..=s.summaries.len())
                .map(|i| {
                    let ivs: Vec<_> = s
                        .tests
                        .iter()
                        .map(|t| t.cells.get(i).and_then(|c| c.as_ref()?.interval))
                        .collect();
                    detectable(&ivs)
                })
                .collect(),
        });
    }
    changes.sort_by(|a, b| b.relative.ln().abs().total_cmp(&a.relative.ln().abs()));
    let (same, changes): (Vec<RealChange>, Vec<RealChange>) = changes
        .into_iter()
        .partition(|c| c.verdict == "no difference");
    let (real, unknown): (Vec<RealChange>, Vec<RealChange>) = changes
        .into_iter()
        .partition(|c| !matches!(c.verdict, "unknown" | "not verified"));
    let changes = per_group(&groups, &real);
    let more_changes = real.len() - changes.len();
    let unverified: Vec<RealChange> = if changes.is_empty() {
        let big: Vec<RealChange> = unknown
            .into_iter()
            .filter(|c| c.relative.ln().abs() >= (1.0 + r.min_effect).ln())
            .collect();
        per_group(&groups, &big)
    } else {
        Vec::new()
    };
    let within_noise = if real.is_empty() {
        same.into_iter().take(3).collect()
    } else {
        Vec::new()
    };
    Overview {
        groups,
        changes,
        more_changes,
        unverified,
        within_noise,
        headline: (others == 0).then(|| headline(r)),
    }
}

/// The first [`PER_GROUP`] of `sorted` (largest first) in each group, the
/// groups in the report's order.
fn per_group(groups: &[GroupVerdicts], sorted: &[RealChange]) -> Vec<RealChange> {
    groups
        .iter()
        .flat_map(|g| {
            sorted
                .iter()
                .filter(|c| c.anchor == g.anchor)
                .take(PER_GROUP)
                .cloned()
        })
        .collect()
}

fn verdict_of(v: Option<&str>) -> crate::stats::Verdict {
    crate::stats::Verdict::parse(v)
}

/// The cost metrics whose interval says they changed, as the difference
/// from the base (`+2.1 µs host CPU per query`): CPU and context switches
/// first, then the largest relative change; at most two. When no cost has a decided verdict (no interval), the point
/// estimates that moved by at least 10 % are given, marked `~`.
fn moved(columns: usize, base: &Cell, c: &Cell) -> Vec<String> {
    let words = |k: usize, mark: &str| -> Option<(u8, f64, String)> {
        let (x, b) = (c.cost[k]?, base.cost[k]?);
        let size = c.cost_relative[k]?.ln().abs();
        let d = x - b;
        let sign = if d >= 0.0 { "+" } else { "−" };
        Some((
            rank(k),
            size,
            format!("{mark}{sign}{} {}", amount(d.abs()), COST_WORDS[k].1),
        ))
    };
    let n = columns.min(COST_WORDS.len());
    let mut v: Vec<(u8, f64, String)> = (0..n)
        .filter(|&k| matches!(c.cost_verdict[k], Some("higher" | "lower")))
        .filter_map(|k| words(k, ""))
        .collect();
    if v.is_empty() {
        v = (0..n)
            .filter_map(|k| words(k, "~"))
            .filter(|(_, size, _)| *size >= 1.1f64.ln())
            .collect();
    }
    // CPU and context switches first, as the seeds explain a change;
    // then the largest relative change.
    v.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    v.truncate(2);
    v.into_iter().map(|(_, _, s)| s).collect()
}

/// 0 for the CPU and context-switch columns, 1 for the others.
fn rank(k: usize) -> u8 {
    u8::from(!matches!(COST_WORDS[k].0, "cpupq" | "cspq" | "server_cpu"))
}

fn headline(r: &Report) -> Headline {
    let mut rows = Vec::new();
    if let Some(s) = &r.sysbench {
        let cpu = s.cost_columns.iter().position(|c| c.key == "cpupq");
        for g in &s.groups {
            let cells: Vec<&Cell> = g.tests.iter().filter_map(|t| t.cells[0].as_ref()).collect();
            let qps: Vec<f64> = cells.iter().map(|c| c.qps).collect();
            let p99: Vec<f64> = cells.iter().map(|c| c.p99_us as f64).collect();
            let cpu: Vec<f64> = cells
                .iter()
                .filter_map(|c| cpu.and_then(|k| c.cost[k]))
                .collect();
            rows.push(HeadlineRow {
                title: g.title.to_string(),
                anchor: group_anchor(g.group),
                tests: g.tests.len(),
                median_qps: median(&qps),
                median_p99_us: median(&p99),
                median_cpu_us: median(&cpu),
            });
        }
    }
    if let Some(s) = &r.ibench {
        rows.push(HeadlineRow {
            title: "Insert Benchmark".into(),
            anchor: "ibench".into(),
            tests: s.steps.len(),
            median_qps: None,
            median_p99_us: None,
            median_cpu_us: None,
        });
    }
    let t = &r.targets[0];
    let spec = shell_word(&t.spec);
    let next = vec![
        format!("tidemark run --target {spec} --target OTHER --repeat 3"),
        format!("tidemark report {} RUN", t.run_id),
    ];
    Headline { rows, next }
}

/// `s` quoted for a POSIX shell when it needs it.
fn shell_word(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("pg@17.10+cx10b"), "pg@17.10+cx10b");
        assert_eq!(shell_word("sqlite:/tmp/a b"), "'sqlite:/tmp/a b'");
    }
}
