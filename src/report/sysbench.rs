//! The sysbench section: per group (point queries, range queries without
//! and with aggregation, writes) the absolute and relative QPS of each test
//! on each target, the per-query cost, and a summary in basis points.
//!
//! The seeds define relative QPS as QPS(target) / QPS(base) and one basis
//! point as 0.01 of it; a group is summed up by its median change and its
//! largest one, which is what this module computes.

use serde::Serialize;

use super::basis::{Band, Column, ReportOptions, is_pre, relative};
use super::cost::{CostColumn, SYSBENCH_COST, sysbench_cost};
pub use super::sysbench_cell::{Cell, Comparison};
use super::sysbench_summary::with_verdicts;
pub use super::sysbench_summary::{
    GroupSummary, TestChange, basis_points, majority_method, summarize,
};
use crate::record::{Group, StepStatus, SuiteName, slices};
use crate::stats::{
    Interval, Measured, Pool, RepetitionLog, Verdict, median, ratio_interval, repetition_logs,
    verdict,
};
use crate::store::StoredStep;

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

impl SysbenchSection {
    /// The indexes of the cost columns some target has a value in, and the
    /// keys of those none has (said below a cost table).
    pub fn cost_split(&self) -> (Vec<usize>, Vec<&'static str>) {
        let (shown, absent): (Vec<usize>, Vec<usize>) =
            (0..self.cost_columns.len()).partition(|&k| self.cost_present[k]);
        let absent = absent.iter().map(|&k| self.cost_columns[k].key).collect();
        (shown, absent)
    }
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
    /// The step name as stored (`random-points_range=10`).
    pub name: String,
    /// The name as the seeds' tables print it: without `_range=N` when
    /// the test has only one range (`point-query`, `point-query.pre`).
    pub label: String,
    /// For a `.pre` run (measured before the writes): the name of its
    /// post-write twin, listed just after it.
    pub twin: Option<String>,
    /// One per target, base first; `None`: the target did not run it.
    pub cells: Vec<Option<Cell>>,
}

impl TestRow {
    /// Each target's workload-file counts for this test (`None` where it
    /// did not run it, and for every sysbench test).
    pub fn workload_counts(&self) -> Vec<Option<&serde_json::Value>> {
        self.cells
            .iter()
            .map(|c| c.as_ref().and_then(|c| c.workload.as_ref()))
            .collect()
    }
}

/// Whether a step's QPS can be compared: it ran to its end (errors are
/// flagged, not excluded).
fn comparable(s: &StoredStep) -> bool {
    matches!(s.status, StepStatus::Ok | StepStatus::Errors)
}

/// Builds the section; `None` when no target has a reported sysbench step.
pub fn build(columns: &[Column<'_>], opts: &ReportOptions) -> Option<SysbenchSection> {
    let mut names: Vec<(String, Group)> = Vec::new();
    for c in columns {
        for s in &c.target.steps {
            if (s.info.reported || is_pre(&s.info.name))
                && (s.info.suite_is(SuiteName::Sysbench)
                    || s.info.suite_is(SuiteName::WorkloadFile))
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
    let all: Vec<String> = names.iter().map(|(n, _)| n.clone()).collect();
    let labels = super::test_names::labels(&all);
    let label_of = |name: &str| {
        let i = all.iter().position(|n| n == name).unwrap_or(0);
        labels[i].clone()
    };
    let mut cost_present = vec![false; SYSBENCH_COST.len()];
    let mut groups = Vec::new();
    for group in Group::ALL {
        let mut in_group: Vec<String> = names
            .iter()
            .filter(|(_, g)| *g == group)
            .map(|(n, _)| n.clone())
            .collect();
        super::test_names::sort(&mut in_group, opts.test_order);
        // The group's variance is pooled over its reported tests only. A
        // `.pre` run comes right after the load, where one server's early
        // start shows most, and varies more than they do: it keeps the
        // interval of its own repetitions.
        let reported: Vec<String> = in_group.iter().filter(|n| !is_pre(n)).cloned().collect();
        let pools = pools(columns, &reported, opts.chain);
        let unpooled: Vec<ColumnPools> = columns.iter().map(|_| ColumnPools::default()).collect();
        let tests: Vec<TestRow> = in_group
            .iter()
            .map(|name| {
                let pools = if is_pre(name) { &unpooled } else { &pools };
                test_row(columns, name, label_of(name), opts, pools)
            })
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
                        Some((t.label.clone(), rel))
                    })
                    .collect();
                let mut summary = summarize(
                    columns[i].label,
                    &super::basis::column_name(i),
                    &changes,
                    opts.within_bp,
                );
                let cells: Vec<&Cell> = tests
                    .iter()
                    .filter_map(|t| t.cells[i].as_ref())
                    .filter(|c| c.verdict.is_some())
                    .collect();
                with_verdicts(&mut summary, &cells, opts.min_effect);
                summary
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

/// Per-second QPS of a step (statements per measured second).
fn qps_series(s: &StoredStep) -> Vec<f64> {
    s.per_second
        .iter()
        .map(|x| x.counts.statements as f64)
        .collect()
}

/// One target's measurements of a test: the comparable repetitions, or
/// (when none ran to its end) all of them, so the cell still shows.
struct Measurements<'a> {
    steps: Vec<(u32, &'a StoredStep)>,
    comparable: bool,
}

impl<'a> Measurements<'a> {
    fn of(c: &Column<'a>, name: &str) -> Option<Measurements<'a>> {
        let all = c.steps(name);
        if all.is_empty() {
            return None;
        }
        let ok: Vec<_> = all.iter().copied().filter(|(_, s)| comparable(s)).collect();
        Some(if ok.is_empty() {
            Measurements {
                steps: all,
                comparable: false,
            }
        } else {
            Measurements {
                steps: ok,
                comparable: true,
            }
        })
    }

    fn median_of(&self, f: impl Fn(&StoredStep) -> Option<f64>) -> Option<f64> {
        let v: Vec<f64> = self.steps.iter().filter_map(|(_, s)| f(s)).collect();
        median(&v)
    }
}

/// One repetition of a measure: its value, and its per-second and
/// per-slice values (empty when not kept or not sliced).
pub(super) struct Sample {
    pub repetition: u32,
    pub value: f64,
    pub seconds: Vec<f64>,
    pub slices: Vec<f64>,
    /// A read test: a repetition's ratio may be its slices' median.
    pub slice_median: bool,
}

/// A measure's samples, one per repetition.
pub(super) type Series = Vec<Sample>;

fn measured(v: &[Sample]) -> Vec<Measured<'_>> {
    v.iter()
        .map(|x| Measured {
            repetition: x.repetition,
            value: x.value,
            seconds: &x.seconds,
            slices: &x.slices,
            slice_median: x.slice_median,
        })
        .collect()
}

/// A sliced step's per-slice values of cost column `key`: the server's
/// CPU (`srv/o`) and the host's (`cpu/o`) per statement, from the host
/// sampler's rows of each slice; empty for the other columns, for steps
/// measured whole and when the rows do not match the slices (the cost
/// then keeps the repetitions' interval, or none).
fn slice_costs(s: &StoredStep, key: &str) -> Vec<f64> {
    let Some(host) = &s.host else {
        return Vec::new();
    };
    let pick: fn(&slices::SliceCost) -> Option<f64> = match key {
        "server_cpu" => |c| c.server_cpu_us_per_op,
        "cpupq" => |c| c.host_cpu_us_per_op,
        _ => return Vec::new(),
    };
    let list = slices::of_metrics(s.metrics.as_ref());
    slices::costs(&list, &host.seconds, host.metrics.ncpu)
        .and_then(|c| c.iter().map(pick).collect::<Option<Vec<f64>>>())
        .unwrap_or_default()
}

/// The interval and verdict on `other / base` of one measure; `pool`: the
/// variance of a repetition's log ratio pooled over the group's tests.
pub(super) fn compare(
    base: &Series,
    other: &Series,
    min_effect: f64,
    pool: Option<&Pool>,
) -> (Option<Interval>, Verdict) {
    let iv = ratio_interval(&measured(base), &measured(other), pool);
    (iv, verdict(iv.as_ref(), min_effect))
}

/// One column's pools over a group's tests: of QPS against the base, of
/// each cost column against the base, and of QPS against the column
/// before (`--chain`).
#[derive(Default)]
struct ColumnPools {
    qps: Option<Pool>,
    cost: Vec<Option<Pool>>,
    previous: Option<Pool>,
}

/// Per column, the variance of a repetition's log ratio pooled over the
/// group's tests `names`, from exactly the pairs [`test_row`] compares.
fn pools(columns: &[Column<'_>], names: &[String], chain: bool) -> Vec<ColumnPools> {
    let logs = |b: &Series, o: &Series| repetition_logs(&measured(b), &measured(o));
    (0..columns.len())
        .map(|i| {
            if i == 0 {
                return ColumnPools::default();
            }
            let (mut qps, mut previous) = (Vec::new(), Vec::new());
            let mut cost = vec![Vec::new(); SYSBENCH_COST.len()];
            for name in names {
                let Some(m) = Measurements::of(&columns[i], name) else {
                    continue;
                };
                if let Some(b) = comparable_base(&columns[0], name, &m) {
                    qps.extend(logs(&qps_of(&b), &qps_of(&m)));
                    for (k, c) in cost.iter_mut().enumerate() {
                        if cost_compared(&b, &m, k) {
                            c.extend(logs(&cost_of(&b, k), &cost_of(&m, k)));
                        }
                    }
                }
                if let Some(p) = previous_of(columns, i, name, chain, &m) {
                    previous.extend(logs(&qps_of(&p), &qps_of(&m)));
                }
            }
            let pool = |v: &Vec<Vec<RepetitionLog>>| Pool::of(v.iter().map(Vec::as_slice));
            ColumnPools {
                qps: pool(&qps),
                cost: cost.iter().map(pool).collect(),
                previous: pool(&previous),
            }
        })
        .collect()
}

/// The base's measurements of test `name` when column measurements `m`
/// are compared with them: both ran it to its end, both or neither under
/// Valgrind (`--instructions` is 30-100x slower: its QPS is never compared
/// with a normal run's).
fn comparable_base<'a>(
    base: &Column<'a>,
    name: &str,
    m: &Measurements<'_>,
) -> Option<Measurements<'a>> {
    let valgrind = |m: &Measurements<'_>| {
        m.steps
            .iter()
            .any(|(_, s)| super::instructions::under_valgrind(s))
    };
    Measurements::of(base, name)
        .filter(|b| b.comparable && m.comparable && valgrind(b) == valgrind(m))
}

/// The previous column's measurements of test `name` for the chain
/// (`--chain`, from the third column on).
fn previous_of<'a>(
    columns: &[Column<'a>],
    i: usize,
    name: &str,
    chain: bool,
    m: &Measurements<'_>,
) -> Option<Measurements<'a>> {
    (chain && i >= 2)
        .then(|| Measurements::of(&columns[i - 1], name))
        .flatten()
        .filter(|p| p.comparable && m.comparable)
}

/// Whether the column's run kept several servers up at once
/// (`--interleave steps` or `together`), so that the host-wide costs of one
/// include the others' background work.
pub(super) fn servers_together(c: &Column<'_>) -> bool {
    matches!(c.interleave(), Some("steps" | "together"))
}

/// Whether cost column `k` is compared between `b` and `m`: both have a
/// value and one is above the column's floor.
fn cost_compared(b: &Measurements<'_>, m: &Measurements<'_>, k: usize) -> bool {
    let of = |x: &Measurements<'_>| x.median_of(|s| sysbench_cost(s)[k]);
    match (of(m), of(b)) {
        (Some(v), Some(bv)) => v.max(bv) >= SYSBENCH_COST[k].floor,
        _ => false,
    }
}

/// A test's QPS per repetition.
fn qps_of(m: &Measurements<'_>) -> Series {
    m.steps
        .iter()
        .map(|(r, s)| Sample {
            repetition: *r,
            value: s.qps,
            seconds: qps_series(s),
            slices: slices::of_metrics(s.metrics.as_ref())
                .iter()
                .map(slices::Slice::qps)
                .collect(),
            slice_median: is_read(s),
        })
        .collect()
}

/// Whether `s` is a read test (the point and range groups): a
/// repetition's ratio may be the median of its slices' ratios, where a
/// write test's own stalls belong in its rate.
fn is_read(s: &StoredStep) -> bool {
    matches!(
        s.info.group,
        Some(Group::Point | Group::RangeNoAgg | Group::RangeAgg)
    )
}

/// A test's cost column `k` per repetition.
fn cost_of(m: &Measurements<'_>, k: usize) -> Series {
    m.steps
        .iter()
        .filter_map(|(r, s)| {
            Some(Sample {
                repetition: *r,
                value: sysbench_cost(s)[k]?,
                seconds: Vec::new(),
                slices: slice_costs(s, SYSBENCH_COST[k].key),
                slice_median: is_read(s),
            })
        })
        .collect()
}

/// The colour of a cell: its verdict's, never the point estimate's alone.
pub(super) fn band_of(verdict: Verdict) -> Band {
    match verdict {
        Verdict::Higher => Band::Faster,
        Verdict::Lower => Band::Slower,
        Verdict::NoDifference | Verdict::Unknown | Verdict::Unverified => Band::Similar,
    }
}

fn test_row(
    columns: &[Column<'_>],
    name: &str,
    label: String,
    opts: &ReportOptions,
    pools: &[ColumnPools],
) -> TestRow {
    let cells = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let m = Measurements::of(c, name)?;
            let first = m.steps[0].1;
            let qps = m.median_of(|s| Some(s.qps)).unwrap_or(first.qps);
            let tps = m.median_of(|s| Some(s.tps)).unwrap_or(first.tps);
            let cost: Vec<Option<f64>> = (0..SYSBENCH_COST.len())
                .map(|k| m.median_of(|s| sysbench_cost(s)[k]))
                .collect();
            let vs_base = (i > 0)
                .then(|| comparable_base(&columns[0], name, &m))
                .flatten();
            let (interval, verdict_qps, rel) = match &vs_base {
                Some(b) => {
                    let (iv, v) = compare(
                        &qps_of(b),
                        &qps_of(&m),
                        opts.min_effect,
                        pools[i].qps.as_ref(),
                    );
                    let base_qps = b.median_of(|s| Some(s.qps)).unwrap_or(0.0);
                    let rel = iv.map(|iv| iv.estimate).or_else(|| relative(qps, base_qps));
                    (iv, Some(v), rel)
                }
                None => (None, None, None),
            };
            let mut cost_relative = vec![None; cost.len()];
            let mut cost_interval = vec![None; cost.len()];
            let mut cost_verdict = vec![None; cost.len()];
            if let Some(b) = &vs_base {
                for k in 0..cost.len() {
                    if !cost_compared(b, &m, k) {
                        continue;
                    }
                    let pool = pools[i].cost.get(k).and_then(Option::as_ref);
                    let (iv, verdict) =
                        compare(&cost_of(b, k), &cost_of(&m, k), opts.min_effect, pool);
                    // A host-wide cost with servers up together counts the
                    // others' background work: an A/A of 32 tests here had
                    // cpu/o "lower" for the second server on 5 (4 writes).
                    // Measured at once, tidemark's own CPU counts every
                    // target's clients too.
                    let shared = |c: &Column<'_>| {
                        SYSBENCH_COST[k].host_wide && servers_together(c)
                            || SYSBENCH_COST[k].key == "client_cpu" && c.measured_at_once()
                    };
                    let verdict = if shared(&columns[0]) || shared(c) {
                        Verdict::Unverified
                    } else {
                        verdict
                    };
                    let bv = b.median_of(|s| sysbench_cost(s)[k]);
                    cost_relative[k] = iv.map(|iv| iv.estimate).or_else(|| relative(cost[k]?, bv?));
                    cost_interval[k] = iv;
                    cost_verdict[k] = Some(verdict.for_cost());
                }
            }
            let vs_previous = previous_of(columns, i, name, opts.chain, &m).and_then(|p| {
                let (iv, v) = compare(
                    &qps_of(&p),
                    &qps_of(&m),
                    opts.min_effect,
                    pools[i].previous.as_ref(),
                );
                let prev = p.median_of(|s| Some(s.qps)).unwrap_or(0.0);
                Some(Comparison {
                    relative: iv.map(|iv| iv.estimate).or_else(|| relative(qps, prev))?,
                    interval: iv,
                    verdict: v.for_rate(),
                })
            });
            Some(Cell {
                qps,
                tps,
                vs_previous,
                n: m.steps.len() as u32,
                interval,
                verdict: verdict_qps.map(Verdict::for_rate),
                status: first.status.as_str(),
                errors: m.steps.iter().map(|(_, s)| s.counts.errors).sum(),
                p50_us: m.median_of(|s| Some(s.latency.p50 as f64)).unwrap_or(0.0) as u64,
                p95_us: m.median_of(|s| Some(s.latency.p95 as f64)).unwrap_or(0.0) as u64,
                p99_us: m
                    .steps
                    .iter()
                    .map(|(_, s)| s.latency.p99)
                    .max()
                    .unwrap_or(0),
                max_us: m
                    .steps
                    .iter()
                    .map(|(_, s)| s.latency.max)
                    .max()
                    .unwrap_or(0),
                relative: rel,
                band: verdict_qps.map(band_of),
                workload: super::workload_file::counts(m.steps.iter().map(|(_, s)| *s)),
                cost,
                cost_relative,
                cost_interval,
                cost_verdict,
            })
        })
        .collect();
    TestRow {
        name: name.to_string(),
        label,
        twin: super::test_names::twin_of(name),
        cells,
    }
}
