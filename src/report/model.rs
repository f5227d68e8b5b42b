//! The comparison model: what a report says, computed once from stored runs
//! and then drawn by every renderer (Markdown, HTML, JSON, CSV).
//!
//! Keeping the numbers here and the drawing elsewhere means the Markdown a
//! user pastes, the HTML they publish and the JSON a script reads can never
//! disagree. Everything in it is plain data (serialisable, no references),
//! built by pure functions of the selected [`crate::store::StoredRun`]s and the options.

use anyhow::{Result, bail};
use serde::Serialize;

pub use super::basis::{
    Band, Bands, Column, ReportOptions, TestOrder, column_name, is_pre, relative, round2,
};
use super::context::{self, Context};
use super::cpu_profile::{self, ProfileSection};
use super::ibench::{self, IbenchSection};
use super::query_plans::{self, PlanChange};
use super::select::Selection;
use super::server_counters::{self, ServerSection};
use super::sweep::{self, SweepSection};
use super::sysbench::{self, SysbenchSection};

/// Version of the report JSON's shape; it only grows by adding keys.
pub const REPORT_FORMAT: u32 = 1;

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
    /// Tests whose query plan differs between the base and a target
    /// (`plan_changes` in report.json).
    #[serde(rename = "plan_changes")]
    pub query_plan_changes: Vec<PlanChange>,
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
        query_plan_changes: query_plans::changes(&columns),
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
