//! The suites a run carries out, behind one trait: what the matrix,
//! `--resume` and the end of a run need from a suite, so that nothing
//! outside a suite's own files matches on which suite it is.
//!
//! A suite implements [`SuiteDriver`] in its own file (`sysbench.rs`,
//! `ibench.rs`, `workload.rs`) and is registered once, in [`driver`]. The
//! plan's `--suite` choice names the suites to run, in order
//! ([`crate::plan::Suite::suites`]); [`drivers`] turns it into theirs.

use super::provide::Provider;
use super::step::StepContext;
use crate::console::progress::ProgressView;
use crate::plan::Plan;
use crate::record::SuiteName;
use crate::report::Report;
use crate::store::Store;

pub use super::interleave::PositionOutcome;

/// One suite as a run carries it out: its steps, the parameters stored
/// with the run, its sequence on a target, its terminal summary.
pub trait SuiteDriver: Sync {
    /// The suite's name, as its steps store it.
    fn name(&self) -> SuiteName;

    /// The cell keys ([`crate::record::StepInfo::cell_key`]) of the steps
    /// it stores on each target and repetition, in order.
    fn planned_keys(&self, plan: &Plan) -> Vec<String>;

    /// The parameters stored with the run when this suite runs alone
    /// (under its name beside the others' when several run).
    fn params(&self, plan: &Plan) -> serde_json::Result<serde_json::Value>;

    /// Runs the suite on the context's target.
    fn run(&self, plan: &Plan, ctx: &mut StepContext<'_>) -> anyhow::Result<()>;

    /// Runs the suite on every target's server at once, step by step
    /// (`--interleave steps`), returning one outcome per plan target;
    /// `None` for a suite that runs target by target only.
    fn run_interleaved(
        &self,
        _plan: &Plan,
        _store: &mut Store,
        _run_id: i64,
        _providers: &[Provider],
        _resuming: bool,
        _view: &ProgressView,
    ) -> Option<anyhow::Result<Vec<PositionOutcome>>> {
        None
    }

    /// What the suite prints at the end of `tidemark run` after the step
    /// table every run prints; empty by default.
    fn summary(
        &self,
        _store: &Store,
        _run_id: i64,
        _model: Option<&Report>,
    ) -> anyhow::Result<String> {
        Ok(String::new())
    }
}

/// The registration of every suite: its driver by name.
pub fn driver(name: SuiteName) -> &'static dyn SuiteDriver {
    match name {
        SuiteName::Sysbench => &super::sysbench::SysbenchSuite,
        SuiteName::Ibench => &super::ibench::IbenchSuite,
        SuiteName::WorkloadFile => &super::workload_file::WorkloadFileSuite,
    }
}

/// The drivers of the suites the plan runs, in order.
pub fn drivers(plan: &Plan) -> Vec<&'static dyn SuiteDriver> {
    plan.suite.suites().iter().map(|&n| driver(n)).collect()
}

/// The names of the steps the plan's suites run on each target, in order.
pub fn planned_step_names(plan: &Plan) -> Vec<String> {
    (drivers(plan).iter())
        .flat_map(|d| d.planned_keys(plan))
        .collect()
}

/// How many steps the suites before `name` store on each target: where
/// `name`'s own steps start counting.
pub fn steps_before(plan: &Plan, name: SuiteName) -> usize {
    (drivers(plan).iter())
        .take_while(|d| d.name() != name)
        .map(|d| d.planned_keys(plan).len())
        .sum()
}

/// The suites' parameters stored with the run: one suite's own, or an
/// object with each suite's under its name.
pub fn run_params(plan: &Plan) -> serde_json::Result<serde_json::Value> {
    match drivers(plan).as_slice() {
        [one] => one.params(plan),
        several => {
            let mut out = serde_json::Map::new();
            for d in several {
                out.insert(d.name().as_str().to_string(), d.params(plan)?);
            }
            Ok(serde_json::Value::Object(out))
        }
    }
}
