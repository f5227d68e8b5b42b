//! A workload file on one target: create and load its tables, then one
//! step per client count of the sweep, each measured, sampled, stored and
//! reported like a sysbench test (suite `workload`, its own group), with
//! the per-transaction counts, retries and failures stored in the step's
//! metrics.

use std::sync::Arc;

use super::cancelled;
use super::step::StepContext;
use crate::plan::Plan;
use crate::record::SuiteName;
use crate::runner::{ClientWork, Schedule, StepPlan, run_step};
use crate::workload::file::client::{Compiled, Tally, WorkloadClient};
use crate::workload::file::{Workload, load};
use crate::workload::{Group, StepInfo};

/// A workload file as a run carries it out.
pub struct WorkloadFileSuite;

impl super::suite::SuiteDriver for WorkloadFileSuite {
    fn name(&self) -> SuiteName {
        SuiteName::WorkloadFile
    }

    fn planned_keys(&self, plan: &Plan) -> Vec<String> {
        planned_keys(plan)
    }

    /// The file's description beside the sysbench knobs it runs with
    /// (client counts, seconds, seed).
    fn params(&self, plan: &Plan) -> serde_json::Result<serde_json::Value> {
        Ok(serde_json::json!({
            "sysbench": plan.sysbench,
            "workload": plan.workload.as_ref().map(|w| w.describe()),
        }))
    }

    fn run(&self, plan: &Plan, ctx: &mut StepContext<'_>) -> anyhow::Result<()> {
        run(plan, ctx)
    }
}

/// The cell keys of the workload's steps: its name at each client count.
pub fn planned_keys(plan: &Plan) -> Vec<String> {
    let Some(w) = &plan.workload else {
        return Vec::new();
    };
    let sweep = plan.sysbench.threads.is_sweep();
    plan.sysbench
        .threads
        .counts()
        .iter()
        .map(|&n| crate::record::step_info::cell_key(&w.name, sweep.then_some(n)))
        .collect()
}

/// Runs the plan's workload file on the context's target.
pub fn run(plan: &Plan, ctx: &mut StepContext<'_>) -> anyhow::Result<()> {
    let w = plan
        .workload
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("suite workload without a workload file"))?;
    let connector = ctx.server.connector();
    let label = ctx.label.clone();
    let mut created = Vec::new();
    let outcome = load_and_measure(plan, w, ctx, &mut created);
    // The tables are this run's: dropped at the end (a repetition, a
    // resumed run or a second run on an external server starts from a
    // fresh load); kept with --keep-datadir when every step ran.
    let keep = plan.keep_datadir && outcome.is_ok() && !cancelled();
    if !created.is_empty() && !keep {
        let dropped = connector
            .connect()
            .map(|mut admin| load::drop_created(admin.as_mut(), &created));
        for note in
            dropped.unwrap_or_else(|e| vec![format!("could not drop the workload's tables: {e}")])
        {
            ctx.view.line(&format!("target {label}: {note}"));
        }
    }
    outcome
}

/// Loads the tables (unless every step was measured before) and measures
/// one step per client count.
fn load_and_measure(
    plan: &Plan,
    w: &Workload,
    ctx: &mut StepContext<'_>,
    created: &mut Vec<String>,
) -> anyhow::Result<()> {
    let connector = ctx.server.connector();
    let label = ctx.label.clone();
    if planned_keys(plan).iter().any(|k| !ctx.is_measured(k)) {
        let mut admin = connector.connect()?;
        ctx.view.line(&format!(
            "target {label}: creating and loading the tables of workload {}",
            w.name
        ));
        let view = ctx.view;
        load::create_and_load(
            w,
            admin.as_mut(),
            created,
            plan.sysbench.seed,
            super::cancel_flag(),
            &mut |done, total| view.load_phase(&label, done, total),
        )?;
    }
    let compiled =
        Arc::new(Compiled::new(w.clone(), ctx.server.dialect()).map_err(anyhow::Error::msg)?);
    let counts = plan.sysbench.threads.counts().to_vec();
    for (point, &threads) in counts.iter().enumerate() {
        if cancelled() {
            return Ok(());
        }
        let info = step_info(w, plan, threads);
        let step_plan = StepPlan {
            label: format!("{label} {}", w.name),
            threads,
            warmup: std::time::Duration::from_secs_f64(plan.sysbench.warmup_secs),
            duration: std::time::Duration::from_secs_f64(plan.sysbench.write_secs),
        };
        let tally = Arc::new(Tally::new(&compiled, threads));
        let seed = plan.sysbench.seed;
        let (c, t) = (Arc::clone(&compiled), Arc::clone(&tally));
        let rate_per_client = w.rate.map(|r| r / f64::from(threads));
        let result = ctx.measure(
            point as u32,
            counts.len(),
            &info,
            &[],
            move |conn, cancel, progress| {
                let make = |client: u32| -> Box<dyn ClientWork> {
                    Box::new(
                        WorkloadClient::new(Arc::clone(&c), Arc::clone(&t), seed, client, threads)
                            .expect("bounds were checked when the file was read"),
                    )
                };
                let schedule = Schedule {
                    rate_per_client,
                    ..Schedule::PLAIN
                };
                let mut result = run_step(&step_plan, schedule, conn, &make, cancel, progress)?;
                // The tally, beside what the runner measured of a paced
                // step's schedule.
                let mut metrics = t.to_json(&c);
                if let Some(serde_json::Value::Object(runner)) = result.metrics.take() {
                    metrics.as_object_mut().expect("an object").extend(runner);
                }
                result.metrics = Some(metrics);
                Ok(result)
            },
            super::step::PER_QUERY,
        )?;
        if let Some(m) = &result.metrics {
            ctx.view
                .line(&format!("  {}", crate::report::workload_file::summary(m)));
            let means: Vec<String> = crate::report::workload_file::statement_rows(&[Some(m)])
                .iter()
                .filter_map(|s| Some(format!("{} {:.3}", s.key, s.mean_ms[0]?)))
                .collect();
            if !means.is_empty() {
                ctx.view.line(&format!(
                    "  statement latency, mean ms: {}",
                    means.join(", ")
                ));
            }
        }
    }
    Ok(())
}

/// How the store records the step: suite `workload`, group
/// [`Group::WorkloadFile`], the file's name, params, weights and retry rules.
fn step_info(w: &Workload, plan: &Plan, threads: u32) -> StepInfo {
    let mut params = w.describe();
    params["threads"] = threads.into();
    params["secs"] = plan.sysbench.write_secs.into();
    params["warmup_secs"] = plan.sysbench.warmup_secs.into();
    params["seed"] = plan.sysbench.seed.into();
    StepInfo {
        suite: SuiteName::WorkloadFile.as_str().into(),
        name: w.name.clone(),
        test: w.name.clone(),
        range: None,
        group: Some(Group::WorkloadFile),
        reported: true,
        note: None,
        params,
        sweep_threads: plan.sysbench.threads.is_sweep().then_some(threads),
    }
}
