//! The Insert Benchmark on one target: create the tables, run the ten
//! steps in order (each measured and stored the moment it ends), and the
//! housekeeping and wait between l.i2 and the query steps. A failed step
//! stops the suite on this target with a message naming what is skipped.
//!
//! Each step builds on the tables the steps before it left, so a resumed
//! run (a fresh server) runs the load steps it keeps again, unstored; the
//! query steps leave the row count as they found it and are not rerun.

use super::cancelled;
use super::shards::{ShardSpec, ShardWork, run_sharded};
use super::step::{Reading, StepContext, StepLine, qps_line};
use crate::plan::Plan;
use crate::record::SuiteName;
use crate::report::Report;
use crate::runner::{StepResult, process_cpu_secs, run_roles};
use crate::store::Store;
use crate::workload::ibench::metrics::{self, IbenchMetrics};
use crate::workload::ibench::{self, Ibench, StepKind, housekeeping, schema};

/// The Insert Benchmark as a run carries it out.
pub struct IbenchSuite;

impl super::suite::SuiteDriver for IbenchSuite {
    fn name(&self) -> SuiteName {
        SuiteName::Ibench
    }

    fn planned_keys(&self, plan: &Plan) -> Vec<String> {
        ibench::steps(&plan.ibench)
            .into_iter()
            .map(|s| s.name)
            .collect()
    }

    fn params(&self, plan: &Plan) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(&plan.ibench)
    }

    fn run(&self, plan: &Plan, ctx: &mut StepContext<'_>) -> anyhow::Result<()> {
        run(plan, ctx)
    }

    fn summary(
        &self,
        store: &Store,
        run_id: i64,
        model: Option<&Report>,
    ) -> anyhow::Result<String> {
        Ok(crate::console::ibench_terminal::summary(
            &store.load_run(run_id)?,
            model,
        ))
    }
}

/// Runs the plan's Insert Benchmark on the context's target.
pub fn run(plan: &Plan, ctx: &mut StepContext<'_>) -> anyhow::Result<()> {
    let connector = ctx.server.connector();
    let ib = Ibench::new(plan.ibench.clone(), ctx.server.dialect());
    let p = &ib.params;
    let steps = ibench::steps(p);
    // Steps are numbered after those of the suites before this one on
    // the same target (sysbench's tests with `--suite all`).
    let base = super::suite::steps_before(plan, SuiteName::Ibench) as u32;
    let total = base as usize + steps.len();
    let label = ctx.label.clone();
    {
        let mut admin = connector.connect()?;
        schema::setup_tables(admin.as_mut(), &ib, plan.existing)?;
    }
    ctx.view.line(&format!(
        "target {label}: Insert Benchmark, {} client(s) on {}, {} / {} / {} rows per table in l.i0 / l.i1 / l.i2",
        p.clients,
        ib.tables().join(","),
        p.rows_load,
        p.rows_l_i1,
        p.rows_l_i2
    ));
    let sharded = super::shards::sharded_target(plan, &ctx.server.info().spec)?;
    let store_url = plan.input.store.clone().unwrap_or_default();
    let mut housekept = false;
    for (i, step) in steps.iter().enumerate() {
        if cancelled() {
            break;
        }
        let skip_rest = |ctx: &StepContext<'_>, what: &str, from: usize| {
            let rest: Vec<&str> = steps[from..].iter().map(|s| s.name.as_str()).collect();
            if rest.is_empty() {
                ctx.view.line(&format!("target {label}: {what}"));
            } else {
                ctx.view.line(&format!(
                    "target {label}: {what}; skipping the remaining Insert Benchmark steps: {}",
                    rest.join(", ")
                ));
            }
        };
        if matches!(step.kind, StepKind::Query(_)) && !housekept {
            housekept = true;
            let budget = housekeeping::wait_budget(ib.rows_loaded(), p.wait_scale);
            ctx.view.phase(
                &format!(
                    "{label} housekeeping after l.i2 (wait {:.0}s)",
                    budget.as_secs_f64()
                ),
                1.0,
            );
            match housekeeping::run(
                connector.as_ref(),
                &ib.tables(),
                budget,
                super::cancel_flag(),
            ) {
                Ok(notes) => {
                    for note in notes {
                        ctx.view.line(&format!("target {label}: {note}"));
                    }
                }
                Err(e) => {
                    skip_rest(ctx, &format!("housekeeping after l.i2 failed ({e:#})"), i);
                    return Err(e.context("housekeeping after l.i2"));
                }
            }
            if cancelled() {
                break;
            }
        }
        let seq = base + i as u32;
        if ctx.is_measured(&step.name) && !matches!(step.kind, StepKind::Query(_)) {
            // A resumed run keeps this step's earlier measurement, but the
            // fresh server needs the tables it builds: run it, unstored.
            ctx.view.line(&format!(
                "target {label}: {} was measured before: running it again, unstored, to rebuild the tables",
                step.name
            ));
            let r = run_roles(
                ib.roles_plan(step, seq, &label),
                connector.as_ref(),
                super::cancel_flag(),
                &mut |_| {},
            );
            match r {
                Ok(r) if r.status == crate::runner::StepStatus::Ok => {}
                Ok(r) => {
                    let why = r.failure.unwrap_or_else(|| r.status.as_str().to_string());
                    skip_rest(ctx, &format!("rebuilding {} failed ({why})", step.name), i);
                    anyhow::bail!("rebuilding {} for the resumed run failed: {why}", step.name);
                }
                Err(e) => {
                    skip_rest(ctx, &format!("rebuilding {} failed ({e})", step.name), i);
                    anyhow::bail!("rebuilding {} for the resumed run failed: {e}", step.name);
                }
            }
        }
        let plans = match step.kind {
            _ if ctx.is_measured(&step.name) => Vec::new(),
            StepKind::Query(_) => match connector.connect() {
                Ok(mut admin) => ib.explain(step, admin.as_mut()),
                Err(_) => Vec::new(),
            },
            _ => Vec::new(),
        };
        let info = ib.step_info(step, seq);
        let roles_plan = ib.roles_plan(step, seq, &label);
        let outcome = ctx.measure(
            seq,
            total,
            &info,
            &plans,
            |conn, cancel, progress| {
                if let Some((hosts, target)) = &sharded {
                    let spec = ShardSpec {
                        target_url: target.display_url(),
                        work: ShardWork::Ibench {
                            step: step.name.clone(),
                            seq,
                            params: p.clone(),
                        },
                        label: label.clone(),
                        threads: p.clients,
                    };
                    let r = run_sharded(&store_url, hosts, target, &spec, None, cancel, progress)?;
                    return Ok(with_metrics(step, r, ib.rows_loaded(), p.clients));
                }
                let cpu0 = process_cpu_secs();
                let mut r = run_roles(roles_plan, conn, cancel, progress)?;
                let cpu = process_cpu_secs() - cpu0;
                let m = metrics::derive(step, &r, ib.rows_loaded(), p.clients, Some(cpu));
                r.metrics = serde_json::to_value(&m).ok();
                Ok(r)
            },
            Reading {
                line: &describe,
                per_op: &|r| metrics::op_rates_of(step.kind, r),
            },
        );
        if let Err(e) = outcome {
            skip_rest(ctx, &format!("{} did not finish", step.name), i + 1);
            return Err(e);
        }
    }
    Ok(())
}

/// A merged sharded step with the Insert Benchmark's metrics derived from
/// it (client CPU: the shards' client threads), its `shards` list kept.
fn with_metrics(step: &ibench::StepDef, mut r: StepResult, rows: u64, clients: u32) -> StepResult {
    if r.status == crate::runner::StepStatus::Failed {
        return r;
    }
    let shards = r
        .metrics
        .take()
        .and_then(|mut m| m.get_mut("shards").map(serde_json::Value::take));
    let m = metrics::derive(step, &r, rows, clients, Some(r.client_cpu_secs));
    let mut value = serde_json::to_value(&m).ok();
    if let (Some(serde_json::Value::Object(o)), Some(list)) = (value.as_mut(), shards) {
        o.insert("shards".into(), list);
    }
    r.metrics = value;
    r
}

/// The progress line of an ibench step: its rate (ips or qps), the insert
/// rate, the largest response time, the SLA and the spread of finish times.
fn describe(r: &StepResult) -> StepLine {
    let Some(m) = r
        .metrics
        .clone()
        .and_then(|v| serde_json::from_value::<IbenchMetrics>(v).ok())
    else {
        return qps_line(r);
    };
    let sla = match &m.sla {
        Some(s) if s.failed => format!(
            "  SLA FAILED: {:.0} of {:.0} ips ({:.1}%)",
            s.achieved_ips,
            s.target_ips,
            s.ratio * 100.0
        ),
        Some(s) => format!(
            "  SLA ok ({:.1}%, {} of {} s below 95%)",
            s.ratio * 100.0,
            s.secs_below,
            s.secs_measured
        ),
        None => String::new(),
    };
    let fair = m
        .fairness
        .as_ref()
        .filter(|f| f.clients.len() > 1)
        .map(|f| format!("  finish spread {:.1}s ({:.1}%)", f.diff, f.pct))
        .unwrap_or_default();
    let inserts = if m.sla.is_some() {
        format!("  ips {:.0}", m.ips)
    } else {
        String::new()
    };
    StepLine {
        text: format!(
            "{:>10.0} {}  {:.1}s  maxop {:.3}s{inserts}{sla}{fair}",
            m.rate, m.rate_unit, m.secs, m.maxop_secs
        ),
        rate: m.rate,
    }
}

/// Runs a `tidemark shard`'s part of Insert Benchmark step `name`, number
/// `seq` of the target, on PostgreSQL: the shard's clients with all their
/// roles, held for the published start.
pub fn run_shard_part(
    name: &str,
    seq: u32,
    params: &ibench::IbenchParams,
    part: super::shards::ShardPart<'_>,
) -> anyhow::Result<StepResult> {
    let ib = Ibench::new(params.clone(), crate::db::Dialect::Postgres);
    let def = ibench::steps(params)
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| anyhow::anyhow!("no Insert Benchmark step {name} in this tidemark"))?;
    let mut plan = ib.roles_plan_for(&def, seq, part.label, part.first..part.first + part.count);
    plan.hold = Some(part.hold);
    run_roles(plan, part.connector, part.cancel, part.live).map_err(|e| anyhow::anyhow!("{e}"))
}
