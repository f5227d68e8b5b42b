//! The sysbench suite on one target: guard and load the tables, run each
//! test (EXPLAIN first, outside the measurement), and the postwrite
//! housekeeping after the tests that call for it.
//!
//! The pieces are separate so that two orders can share them: all tests
//! on one target ([`run`]), or one test at a time across targets kept up
//! together (`super::interleave`).

use std::sync::Arc;

use super::cancelled;
use super::shards::{self, ShardSpec, ShardWork};
use super::step::StepContext;
use crate::db::postgres::PgConnectOptions;
use crate::db::{Conn, Connector};
use crate::knobs::ThreadCounts;
use crate::plan::Plan;
use crate::plan::client_hosts::ClientHosts;
use crate::runner::{mux, run_step};
use crate::server::valgrind::Counting;
use crate::workload::sysbench::catalog::After;
use crate::workload::sysbench::{Sysbench, load};

/// A target whose tables are loaded: the connections its tests use.
pub struct Loaded {
    connector: Arc<dyn Connector>,
    /// Closed during housekeeping, opened again after it.
    admin: Option<Box<dyn Conn>>,
}

impl Loaded {
    fn admin(&mut self) -> anyhow::Result<&mut dyn Conn> {
        if self.admin.is_none() {
            self.admin = Some(self.connector.connect()?);
        }
        Ok(self.admin.as_mut().expect("just opened").as_mut())
    }
}

/// Runs the plan's sysbench tests on the context's target: each test at
/// every client count of the sweep (one count unless `--threads` gives
/// several) before the next test.
pub fn run(plan: &Plan, ctx: &mut StepContext<'_>) -> anyhow::Result<()> {
    let mut loaded = prepare(plan, ctx)?;
    for seq in 0..plan.tests.len() {
        for point in 0..points(plan) {
            if cancelled() {
                return Ok(());
            }
            run_test(plan, ctx, &mut loaded, (seq, point), plan.sysbench.seed)?;
        }
    }
    Ok(())
}

/// How many client counts each test runs at (1 unless a sweep).
pub fn points(plan: &Plan) -> usize {
    plan.sysbench.threads.counts().len()
}

/// How many sysbench steps each target and repetition stores: one per
/// test and client count.
pub fn step_count(plan: &Plan) -> usize {
    plan.tests.len() * points(plan)
}

/// The cell keys ([`crate::record::StepInfo::cell_key`]) of the sysbench
/// steps of one target and repetition, in order.
pub fn planned_keys(plan: &Plan) -> Vec<String> {
    let sweep = plan.sysbench.threads.is_sweep();
    plan.tests
        .iter()
        .flat_map(|t| {
            plan.sysbench
                .threads
                .counts()
                .iter()
                .map(move |&n| crate::record::step_info::cell_key(&t.name(), sweep.then_some(n)))
        })
        .collect()
}

/// Checks for foreign tables and loads the plan's tables on the context's
/// target (unless `--existing` reuses them).
pub fn prepare(plan: &Plan, ctx: &mut StepContext<'_>) -> anyhow::Result<Loaded> {
    let connector = ctx.server.connector();
    let p = &plan.sysbench;
    let label = ctx.label.clone();
    let mut admin = connector.connect()?;
    if load::check_existing(admin.as_mut(), plan.existing)? {
        ctx.view.line(&format!(
            "target {label}: loading {} table(s) × {} rows",
            p.tables, p.table_size
        ));
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get() as u32);
        let view = ctx.view;
        load::create_and_load(
            connector.as_ref(),
            p.tables,
            p.table_size,
            p.seed,
            threads,
            super::cancel_flag(),
            &mut |done, total| view.load_phase(&label, done, total),
        )?;
    }
    Ok(Loaded {
        connector,
        admin: Some(admin),
    })
}

/// With `--client-hosts`: where the step's shards run, the target they
/// reach (with its password) and what they run; `None` without.
fn sharding(
    plan: &Plan,
    ctx: &StepContext<'_>,
    suite: &Sysbench,
    test: &crate::workload::sysbench::TestDef,
    label: &str,
) -> anyhow::Result<Option<(ClientHosts, PgConnectOptions, ShardSpec)>> {
    let Some((hosts, target)) = shards::sharded_target(plan, &ctx.server.info().spec)? else {
        return Ok(None);
    };
    let spec = ShardSpec {
        target_url: target.display_url(),
        work: ShardWork::Sysbench {
            test: test.name(),
            params: suite.params.clone(),
        },
        label: label.to_string(),
        threads: suite.step_plan(test, label).threads,
    };
    Ok(Some((hosts, target, spec)))
}

/// How a step of `threads` clients is counted under Valgrind on the
/// context's server (`--instructions`): `events` split over the clients,
/// each warming up with a tenth as many (at least 10, so PostgreSQL has
/// chosen its generic plans) before its interval.
fn counting(ctx: &StepContext<'_>, events: u64, threads: u32) -> anyhow::Result<Counting> {
    let (Some(data), Some(pid)) = (ctx.server.data_dir(), ctx.server.server_pid()) else {
        anyhow::bail!("--instructions: the server is not one tidemark started");
    };
    let dir = data
        .parent()
        .map(|p| p.join("callgrind"))
        .ok_or_else(|| anyhow::anyhow!("--instructions: no directory above {}", data.display()))?;
    let per_client = events.div_ceil(u64::from(threads.max(1)));
    Ok(Counting {
        dir,
        postmaster_pid: pid,
        events_per_client: per_client,
        warmup_events: (per_client / 10).max(10),
    })
}

/// Runs test `seq` of the plan once on the context's target at client
/// count number `point` of the sweep, with key seed `seed`, then its
/// postwrite housekeeping when it has one.
pub fn run_test(
    plan: &Plan,
    ctx: &mut StepContext<'_>,
    loaded: &mut Loaded,
    (seq, point): (usize, usize),
    seed: u64,
) -> anyhow::Result<()> {
    let dialect = ctx.server.dialect();
    let mut params = plan.sysbench.clone();
    params.seed = seed;
    let threads = plan.sysbench.threads.counts()[point];
    params.threads = ThreadCounts::one(threads);
    let suite = Sysbench { params, dialect };
    let p = &plan.sysbench;
    let label = ctx.label.clone();
    let test = &plan.tests[seq];
    if let Some(note) = load::reset_binlog(loaded.admin()?)? {
        ctx.view.line(&format!("target {label}: {note}"));
    }
    let mut info = suite.step_info(test, dialect);
    if plan.sysbench.threads.is_sweep() {
        info.sweep_threads = Some(threads);
    }
    let measured_before = ctx.is_measured(&info.cell_key());
    // EXPLAIN once per test: the plan does not depend on the client count.
    let plans = if measured_before || point > 0 {
        Vec::new()
    } else {
        suite.explain(test, loaded.admin()?)
    };
    let step_plan = suite.step_plan(test, &label);
    let sharded = sharding(plan, ctx, &suite, test, &label)?;
    let counting = match ctx.instructions {
        Some(events) => Some(counting(ctx, events.for_test(test), step_plan.threads)?),
        None => None,
    };
    let slot = ctx.counted.clone();
    let multiplexed = sharded.is_none()
        && counting.is_none()
        && p.mux_from > 0
        && threads >= p.mux_from
        && suite.mux_client(test, 0).is_some()
        && ctx.server.connector().multiplexes();
    let loops = mux::loops_for(threads);
    if multiplexed && let Some(params) = info.params.as_object_mut() {
        params.insert("client_loops".into(), loops.into());
    }
    ctx.measure(
        (seq * points(plan) + point) as u32,
        step_count(plan),
        &info,
        &plans,
        |conn, cancel, progress| {
            if let Some((hosts, target, spec)) = &sharded {
                let store = plan.input.store.as_deref().unwrap_or_default();
                let span = Some((step_plan.warmup, step_plan.duration));
                shards::run_sharded(store, hosts, target, spec, span, cancel, progress)
            } else if let Some(counting) = &counting {
                let make = |client| suite.client(test, client);
                let (result, count) = counting.run(&step_plan, conn, &make, cancel, progress)?;
                *slot.lock().expect("count slot") = Some(count);
                Ok(result)
            } else if multiplexed {
                mux::run_step_mux(
                    &step_plan,
                    conn,
                    &|client| suite.mux_client(test, client).expect("a single-read test"),
                    cancel,
                    progress,
                    loops,
                )
            } else {
                run_step(
                    &step_plan,
                    conn,
                    &|client| suite.client(test, client),
                    cancel,
                    progress,
                )
            }
        },
    )?;
    if test.after == After::Postwrite && !cancelled() {
        let budget = load::postwrite_budget(u64::from(p.tables) * p.table_size, p.postwrite_scale);
        ctx.view.phase(
            &format!(
                "{label} housekeeping (analyze, flush, wait {:.0}s)",
                budget.as_secs_f64()
            ),
            1.0,
        );
        loaded.admin = None;
        for note in load::postwrite(
            loaded.connector.as_ref(),
            p.tables,
            budget,
            super::cancel_flag(),
        )? {
            ctx.view.line(&format!("target {label}: {note}"));
        }
    }
    Ok(())
}
