//! The comparison model: what a report says, computed once from stored runs
//! and then drawn by every renderer (Markdown, HTML, JSON, CSV).
//!
//! Keeping the numbers here and the drawing elsewhere means the Markdown a
//! user pastes, the HTML they publish and the JSON a script reads can never
//! disagree. Everything in it is plain data (serialisable, no references),
//! built by pure functions of the selected [`RunRecord`]s and the options.

use anyhow::{Result, bail};
use serde::Serialize;

use super::context::{self, Context};
use super::cpu_profile::{self, ProfileSection};
use super::ibench::{self, IbenchSection};
use super::plans::{self, PlanChange};
use super::select::Selection;
use super::server_counters::{self, ServerSection};
use super::sweep::{self, SweepSection};
use super::sysbench::{self, SysbenchSection};
use crate::store::{RunRecord, StepRecord, TargetRecord};

/// Version of the report JSON's shape; it only grows by adding keys.
pub const REPORT_FORMAT: u32 = 1;

/// Colour bands of relative QPS: at or below `low` is slower (red), at or
/// above `high` faster (green), between is similar (grey).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Bands {
    pub low: f64,
    pub high: f64,
}

impl Bands {
    /// The seeds' sysbench posts: red ≤ 0.97, green ≥ 1.03.
    pub const SYSBENCH: Bands = Bands {
        low: 0.97,
        high: 1.03,
    };
    /// The Insert Benchmark report's convention: 0.95 and 1.05.
    pub const IBENCH: Bands = Bands {
        low: 0.95,
        high: 1.05,
    };

    /// Parses `LOW,HIGH` (e.g. `0.97,1.03`); `what` names the option.
    pub fn parse(s: &str, what: &str) -> Result<Bands, String> {
        let err = || format!("{what} {s:?}: write LOW,HIGH with LOW < 1 < HIGH, e.g. 0.97,1.03");
        let (a, b) = s.split_once(',').ok_or_else(err)?;
        let low: f64 = a.trim().parse().map_err(|_| err())?;
        let high: f64 = b.trim().parse().map_err(|_| err())?;
        if !(low > 0.0 && low < 1.0 && high > 1.0 && high.is_finite()) {
            return Err(err());
        }
        Ok(Bands { low, high })
    }

    /// The band of a relative value, judged on the value as printed (two
    /// decimals), so a cell's colour always matches its text.
    pub fn classify(self, relative: f64) -> Band {
        let shown = round2(relative);
        if shown <= round2(self.low) {
            Band::Slower
        } else if shown >= round2(self.high) {
            Band::Faster
        } else {
            Band::Similar
        }
    }
}

/// Where a relative value falls among the [`Bands`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Band {
    Slower,
    Similar,
    Faster,
}

/// `x` rounded to two decimals exactly as relative values are printed
/// (formatting rounds ties to even, `f64::round` away from zero).
pub fn round2(x: f64) -> f64 {
    format!("{x:.2}").parse().unwrap_or(x)
}

/// What the user chose about a report.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportOptions {
    /// Label of the base target (default: the first selected).
    pub base: Option<String>,
    /// Colour bands of the sysbench section.
    pub bands: Bands,
    /// Colour bands of the Insert Benchmark section.
    pub ibench_bands: Bands,
    /// Lowest relative QPS the bar charts show (the seeds draw from 0.8).
    pub chart_floor: f64,
    /// A test "did not change" when within this many basis points.
    pub within_bp: f64,
    /// When the report was made (RFC 3339 UTC).
    pub generated_at: String,
    /// The smallest change a verdict reports (`--min-effect`, 0.03).
    pub min_effect: f64,
    /// The order of the sysbench tests within a group (`--order`).
    pub test_order: TestOrder,
    /// Also compare each target with the one before it (`--chain`).
    pub chain: bool,
}

/// How the sysbench tests of a group are listed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TestOrder {
    /// The seeds' tables: by test name, then range, each `.pre` run just
    /// before its post-write twin (the default).
    #[default]
    Seeds,
    /// The order the run measured them in.
    Run,
}

impl TestOrder {
    /// Parses `seeds` or `run`.
    pub fn parse(s: &str) -> Result<TestOrder, String> {
        match s.trim() {
            "seeds" => Ok(TestOrder::Seeds),
            "run" => Ok(TestOrder::Run),
            other => Err(format!(
                "--order {other:?}: write seeds (the blog posts' order) or run (the order measured)"
            )),
        }
    }
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            base: None,
            bands: Bands::SYSBENCH,
            ibench_bands: Bands::IBENCH,
            chart_floor: 0.8,
            within_bp: 2.0,
            generated_at: crate::util::time::now_rfc3339(),
            min_effect: crate::stats::DEFAULT_MIN_EFFECT,
            test_order: TestOrder::Seeds,
            chain: false,
        }
    }
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// [`REPORT_FORMAT`].
    pub format: u32,
    /// The build that made the report.
    pub tidemark_version: String,
    pub generated_at: String,
    /// Label of the base target (always `targets[0]`).
    pub base: String,
    pub bands: Bands,
    pub ibench_bands: Bands,
    pub chart_floor: f64,
    pub within_bp: f64,
    /// The smallest change a verdict reports (a fraction: 0.03).
    pub min_effect: f64,
    /// Whether each target is also compared with the one before it.
    pub chain: bool,
    /// How the sysbench intervals were computed, in words (the method of
    /// most cells); `None` when there are none.
    pub interval_method: Option<String>,
    /// The compared targets, base first; the others are `col-1`, `col-2`…
    pub targets: Vec<TargetColumn>,
    pub context: Context,
    pub sysbench: Option<SysbenchSection>,
    pub ibench: Option<IbenchSection>,
    /// The server's own counters per step (absent when none were sampled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerSection>,
    /// CPU profiles per step (absent when none were asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profiles: Option<ProfileSection>,
    /// Instructions per query counted under Valgrind (`run
    /// --instructions`); `None` when no selected step was counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<super::instructions::InstructionSection>,
    /// iostat detail and `dbgb2` per step (empty when no disk was watched).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub storage: Vec<super::storage::StorageStep>,
    /// QPS and p99 against client connections (`--threads` sweeps);
    /// absent from the JSON of a report without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepSection>,
    /// Per-shard throughput of steps run as client shards (absent from
    /// the JSON when none were).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<super::shards::ShardedStep>,
    /// Tests whose query plan differs between the base and a target.
    pub plan_changes: Vec<PlanChange>,
    /// Things a reader must know before trusting a number.
    pub notes: Vec<String>,
}

/// One compared target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TargetColumn {
    /// The label the report shows (unique; see `select::unique_labels`).
    pub label: String,
    /// `base`, `col-1`, `col-2`… as the seeds' legends name them.
    pub column: String,
    /// The label as stored.
    pub stored_label: String,
    pub run_id: i64,
    pub position: u32,
    pub spec: String,
    pub dbms: String,
    pub version_number: String,
    pub config_name: Option<String>,
    pub managed: bool,
    /// The target's stored status (`finished`, `failed`…).
    pub status: String,
    pub failure: Option<String>,
}

/// A compared target as the section builders see it: its report label and
/// the stored run and target it came from.
#[derive(Clone, Debug)]
pub struct Column<'a> {
    pub label: &'a str,
    pub run: &'a RunRecord,
    /// The first repetition: what the target is, and its steps where one
    /// measurement is wanted (plans, context).
    pub target: &'a TargetRecord,
    /// Every repetition, in order (the first is `target`).
    pub repetitions: Vec<&'a TargetRecord>,
}

impl<'a> Column<'a> {
    /// The first reported step named `name`, if this target ran it.
    pub fn step(&self, name: &str) -> Option<&'a StepRecord> {
        self.target
            .steps
            .iter()
            .find(|s| s.info.reported && s.info.name == name)
    }

    /// The reported (or `.pre`, see [`is_pre`]) step named `name` in each
    /// repetition that ran it, with the repetition's index.
    pub fn steps(&self, name: &str) -> Vec<(u32, &'a StepRecord)> {
        self.repetitions
            .iter()
            .filter_map(|t| {
                let s = t
                    .steps
                    .iter()
                    .find(|s| (s.info.reported || is_pre(&s.info.name)) && s.info.name == name)?;
                Some((t.repetition, s))
            })
            .collect()
    }
}

/// Whether a step is a `.pre` run (a read test measured before the write
/// block): not a reported test, but shown beside its post-write twin.
pub fn is_pre(name: &str) -> bool {
    name.contains(".pre_") || name.ends_with(".pre")
}

/// Builds the report for `sel` (see [`super::select::select`]).
pub fn build(sel: &Selection, opts: &ReportOptions) -> Result<Report> {
    let labels: Vec<&str> = sel.picks.iter().map(|p| p.label.as_str()).collect();
    let base = match &opts.base {
        None => 0,
        Some(want) => find_base(sel, want)?,
    };
    let mut order: Vec<usize> = vec![base];
    order.extend((0..sel.picks.len()).filter(|&i| i != base));
    let columns: Vec<Column<'_>> = order
        .iter()
        .map(|&i| Column {
            label: labels[i],
            run: sel.run(&sel.picks[i]),
            target: sel.target(&sel.picks[i]),
            repetitions: sel.repetitions(&sel.picks[i]),
        })
        .collect();

    let targets = columns
        .iter()
        .enumerate()
        .map(|(i, c)| TargetColumn {
            label: c.label.to_string(),
            column: column_name(i),
            stored_label: c.target.info.label.clone(),
            run_id: c.run.id,
            position: c.target.position,
            spec: c.target.info.spec.clone(),
            dbms: c.target.info.dbms.clone(),
            version_number: c.target.info.version_number.clone(),
            config_name: c.target.info.config_name.clone(),
            managed: c.target.info.managed,
            status: c.target.status.clone(),
            failure: c.target.failure.clone(),
        })
        .collect();

    let context = context::build(&columns);
    let mut notes = context::notes(&columns, &context);
    let sysbench = sysbench::build(&columns, opts);
    let ibench = ibench::build(&columns, opts.ibench_bands).map(|mut s| {
        super::ibench_verdicts::apply(&mut s, &columns, opts.min_effect, opts.chain);
        s
    });
    let sweep = sweep::build(&columns);
    if sweep.is_some() {
        notes.push("a concurrency sweep: the sysbench tables show each test at its first client count; the sweep section has every count".into());
    }
    if let Some(note) = super::instructions::wall_clock_note(&columns) {
        notes.push(note);
    }
    if sysbench.is_none() && ibench.is_none() {
        notes.push("the selected targets have no reported steps to compare".into());
    }
    Ok(Report {
        format: REPORT_FORMAT,
        tidemark_version: env!("CARGO_PKG_VERSION").to_string(),
        generated_at: opts.generated_at.clone(),
        base: columns[0].label.to_string(),
        bands: opts.bands,
        ibench_bands: opts.ibench_bands,
        chart_floor: opts.chart_floor,
        within_bp: opts.within_bp,
        min_effect: opts.min_effect,
        chain: opts.chain,
        interval_method: sysbench.as_ref().and_then(|s| {
            let cells = s
                .groups
                .iter()
                .flat_map(|g| &g.tests)
                .flat_map(|t| &t.cells);
            sysbench::majority_method(cells.flatten().filter_map(|c| c.interval.map(|i| i.method)))
                .map(|m| m.describe().to_string())
        }),
        targets,
        context,
        plan_changes: plans::changes(&columns),
        server: server_counters::build(&columns),
        profiles: cpu_profile::build(&columns),
        instructions: super::instructions::build(&columns),
        storage: super::storage::build(&columns),
        shards: super::shards::build(&columns),
        sweep,
        sysbench,
        ibench,
        notes,
    })
}

/// `base` for the first column, then `col-1`, `col-2`…
pub fn column_name(i: usize) -> String {
    if i == 0 {
        "base".into()
    } else {
        format!("col-{i}")
    }
}

/// The pick `want` names: a report label, or a stored label only one
/// selected target has.
fn find_base(sel: &Selection, want: &str) -> Result<usize> {
    if let Some(i) = sel.picks.iter().position(|p| p.label == want) {
        return Ok(i);
    }
    let stored: Vec<usize> = (0..sel.picks.len())
        .filter(|&i| sel.target(&sel.picks[i]).info.label == want)
        .collect();
    if let [i] = stored.as_slice() {
        return Ok(*i);
    }
    let labels: Vec<&str> = sel.picks.iter().map(|p| p.label.as_str()).collect();
    if stored.is_empty() {
        bail!(
            "--base {want}: no selected target has that label (labels: {}): pass one of them",
            labels.join(", ")
        );
    }
    bail!(
        "--base {want}: several selected targets have that label: pass one of {}",
        stored
            .iter()
            .map(|&i| labels[i])
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The relative value `value / base`, when both are positive and finite.
pub fn relative(value: f64, base: f64) -> Option<f64> {
    (value.is_finite() && base.is_finite() && base > 0.0 && value >= 0.0).then(|| value / base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_judge_the_printed_value() {
        let b = Bands::SYSBENCH;
        assert_eq!(b.classify(0.97), Band::Slower);
        assert_eq!(b.classify(0.9749), Band::Slower, "prints 0.97");
        assert_eq!(b.classify(0.9751), Band::Similar, "prints 0.98");
        assert_eq!(b.classify(1.0), Band::Similar);
        assert_eq!(b.classify(1.026), Band::Faster, "prints 1.03");
        assert_eq!(b.classify(1.025), Band::Similar, "prints 1.02");
        assert_eq!(b.classify(2.47), Band::Faster);
    }

    #[test]
    fn bands_parse_and_reject_nonsense() {
        assert_eq!(
            Bands::parse("0.95, 1.05", "--bands").unwrap(),
            Bands::IBENCH
        );
        for bad in ["0.97", "1.03,0.97", "a,b", "0,1.03", "0.9,inf"] {
            assert!(Bands::parse(bad, "--bands").is_err(), "{bad}");
        }
    }

    #[test]
    fn relative_needs_a_positive_base() {
        assert_eq!(relative(2.0, 4.0), Some(0.5));
        assert_eq!(relative(2.0, 0.0), None);
        assert_eq!(relative(f64::NAN, 1.0), None);
    }

    #[test]
    fn columns_are_named_like_the_seeds_legends() {
        assert_eq!(column_name(0), "base");
        assert_eq!(column_name(2), "col-2");
    }
}
