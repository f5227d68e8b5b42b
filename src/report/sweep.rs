//! The concurrency sweep section (`--threads 1,4,64`): per test, each
//! target's QPS and p99 latency at every client count, QPS relative to the
//! base at the same count, and the knee — the count after which QPS stops
//! growing. Built from the steps stored with a `sweep_threads`; the other
//! sections see only a sweep's first point of each test.

use serde::Serialize;

use super::basis::{Column, relative};
use crate::store::StoredStep;

/// A later count must beat a point's QPS by more than this fraction for
/// QPS to count as still growing there (below it is noise on a shared
/// host).
pub const KNEE_GROWTH: f64 = 0.05;

/// Every swept test of the compared targets.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepSection {
    pub tests: Vec<SweepTest>,
    /// One line per test and target naming the peak and the knee.
    pub summary: Vec<String>,
}

/// One test across the sweep's client counts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepTest {
    pub name: String,
    /// Every count any target ran, ascending.
    pub counts: Vec<u32>,
    /// One line per target, base first (the report's target order).
    pub lines: Vec<SweepLine>,
}

/// One target's points of a test, aligned with [`SweepTest::counts`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepLine {
    pub target: String,
    pub points: Vec<Option<SweepPoint>>,
    /// The count after which QPS stops growing (no later count is more
    /// than [`KNEE_GROWTH`] faster); `None` while it still grows at the
    /// largest count.
    pub knee: Option<u32>,
    /// The count of the highest QPS.
    pub peak: Option<u32>,
}

/// One target at one client count (medians over repetitions).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepPoint {
    pub threads: u32,
    pub qps: f64,
    pub p99_us: u64,
    /// QPS over the base's at the same count.
    pub relative: Option<f64>,
    /// Repetitions measured.
    pub n: usize,
}

/// The sweep section of `columns` (base first); `None` when no target
/// stored sweep points.
pub fn build(columns: &[Column<'_>]) -> Option<SweepSection> {
    let mut names: Vec<String> = Vec::new();
    for c in columns {
        for s in swept(c) {
            if !names.contains(&s.info.name) {
                names.push(s.info.name.clone());
            }
        }
    }
    if names.is_empty() {
        return None;
    }
    let tests: Vec<SweepTest> = names.iter().map(|n| test(columns, n)).collect();
    let mut summary = Vec::new();
    for t in &tests {
        for l in &t.lines {
            summary.push(summary_line(t, l));
        }
    }
    Some(SweepSection { tests, summary })
}

/// The reported sweep points of every repetition of `c`.
fn swept<'a>(c: &Column<'a>) -> impl Iterator<Item = &'a StoredStep> + use<'a> {
    c.repetitions
        .clone()
        .into_iter()
        .flat_map(|t| t.steps.iter())
        .filter(|s| s.info.reported && s.info.sweep_threads.is_some())
}

fn test(columns: &[Column<'_>], name: &str) -> SweepTest {
    let mut counts: Vec<u32> = columns
        .iter()
        .flat_map(|c| swept(c).filter(|s| s.info.name == name))
        .filter_map(|s| s.info.sweep_threads)
        .collect();
    counts.sort_unstable();
    counts.dedup();
    let mut lines: Vec<SweepLine> = columns
        .iter()
        .map(|c| {
            let points: Vec<Option<SweepPoint>> =
                counts.iter().map(|&n| point(c, name, n)).collect();
            SweepLine {
                target: c.label.to_string(),
                knee: knee(&points),
                peak: points
                    .iter()
                    .flatten()
                    .max_by(|a, b| a.qps.total_cmp(&b.qps))
                    .map(|p| p.threads),
                points,
            }
        })
        .collect();
    let base: Vec<Option<f64>> = lines[0]
        .points
        .iter()
        .map(|p| p.as_ref().map(|p| p.qps))
        .collect();
    for l in &mut lines {
        for (p, b) in l.points.iter_mut().zip(&base) {
            if let (Some(p), Some(b)) = (p, b) {
                p.relative = relative(p.qps, *b);
            }
        }
    }
    SweepTest {
        name: name.to_string(),
        counts,
        lines,
    }
}

/// Target `c`'s point of test `name` at `threads` clients: the median QPS
/// and p99 over its repetitions.
fn point(c: &Column<'_>, name: &str, threads: u32) -> Option<SweepPoint> {
    let steps: Vec<&StoredStep> = swept(c)
        .filter(|s| s.info.name == name && s.info.sweep_threads == Some(threads))
        .collect();
    if steps.is_empty() {
        return None;
    }
    let qps: Vec<f64> = steps.iter().map(|s| s.qps).collect();
    let mut p99: Vec<u64> = steps.iter().map(|s| s.latency.p99).collect();
    p99.sort_unstable();
    Some(SweepPoint {
        threads,
        qps: crate::stats::median(&qps)?,
        p99_us: p99[p99.len() / 2],
        relative: None,
        n: steps.len(),
    })
}

/// The first count after which no later count is more than
/// [`KNEE_GROWTH`] faster; `None` when the last point still grew.
pub fn knee(points: &[Option<SweepPoint>]) -> Option<u32> {
    let measured: Vec<&SweepPoint> = points.iter().flatten().collect();
    let last = measured.len().checked_sub(1)?;
    (0..last)
        .find(|&i| {
            measured[i + 1..]
                .iter()
                .all(|later| later.qps <= measured[i].qps * (1.0 + KNEE_GROWTH))
        })
        .map(|i| measured[i].threads)
}

/// `point-select on pg15: peak 44,479 QPS at 4 connections; knee at 4 (…)`.
fn summary_line(t: &SweepTest, l: &SweepLine) -> String {
    let peak = l
        .points
        .iter()
        .flatten()
        .find(|p| Some(p.threads) == l.peak);
    let Some(peak) = peak else {
        return format!("{} on {}: no points measured", t.name, l.target);
    };
    let knee = match l.knee {
        Some(k) => format!(
            "knee at {} (no larger count is more than {:.0} % faster)",
            connections(k),
            KNEE_GROWTH * 100.0
        ),
        None => format!(
            "no knee: QPS still grew at {}",
            connections(t.counts.last().copied().unwrap_or(0))
        ),
    };
    format!(
        "{} on {}: peak {} QPS at {}; {knee}",
        t.name,
        l.target,
        super::format::amount(peak.qps),
        connections(peak.threads)
    )
}

/// `1 connection`, `64 connections`.
fn connections(n: u32) -> String {
    format!("{n} connection{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(qps: &[(u32, f64)]) -> Vec<Option<SweepPoint>> {
        qps.iter()
            .map(|&(threads, qps)| {
                Some(SweepPoint {
                    threads,
                    qps,
                    p99_us: 100,
                    relative: None,
                    n: 1,
                })
            })
            .collect()
    }

    #[test]
    fn the_knee_is_where_qps_stops_growing() {
        let flat_after_4 = pts(&[(1, 10.0), (2, 19.0), (4, 30.0), (8, 31.0), (16, 29.0)]);
        assert_eq!(knee(&flat_after_4), Some(4));
        let growing = pts(&[(1, 10.0), (4, 30.0), (64, 60.0)]);
        assert_eq!(knee(&growing), None);
        let falls = pts(&[(1, 40.0), (4, 30.0), (64, 20.0)]);
        assert_eq!(knee(&falls), Some(1));
        let mut gap = pts(&[(1, 10.0), (4, 30.0), (64, 31.0)]);
        gap[1] = None;
        assert_eq!(knee(&gap), None, "a missing point is skipped");
        assert_eq!(knee(&pts(&[(1, 10.0)])), None);
        assert_eq!(knee(&[]), None);
    }
}
