//! The sysbench suite on one target: guard and load the tables, run each
//! test (EXPLAIN first, outside the measurement), and the postwrite
//! housekeeping after the tests that call for it.
//!
//! The pieces are separate so that two orders can share them: all tests
//! on one target ([`run`]), or one test at a time across targets kept up
//! together (`super::interleave`).

use std::os::unix::fs::MetadataExt;
use std::sync::Arc;

use super::cancelled;
use super::interleave::PositionOutcome;
use super::provide::Provider;
use super::shards::{self, ShardSpec, ShardWork};
use super::step::StepContext;
use crate::console::progress::ProgressView;
use crate::db::postgres::PgConnectOptions;
use crate::db::{Conn, Connector};
use crate::knobs::ThreadCounts;
use crate::plan::Plan;
use crate::plan::client_hosts::ClientHosts;
use crate::record::SuiteName;
use crate::runner::{Schedule, mux, run_step};
use crate::server::valgrind::{Counting, Server};
use crate::store::Store;
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

/// The sysbench suite as a run carries it out.
pub struct SysbenchSuite;

impl super::suite::SuiteDriver for SysbenchSuite {
    fn name(&self) -> SuiteName {
        SuiteName::Sysbench
    }

    fn planned_keys(&self, plan: &Plan) -> Vec<String> {
        planned_keys(plan)
    }

    fn params(&self, plan: &Plan) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(&plan.sysbench)
    }

    fn run(&self, plan: &Plan, ctx: &mut StepContext<'_>) -> anyhow::Result<()> {
        run(plan, ctx)
    }

    fn run_interleaved(
        &self,
        plan: &Plan,
        store: &mut Store,
        run_id: i64,
        providers: &[Provider],
        resuming: bool,
        view: &ProgressView,
    ) -> Option<anyhow::Result<Vec<PositionOutcome>>> {
        Some(super::interleave::run_sysbench(
            plan, store, run_id, providers, resuming, view,
        ))
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
        // Every server starts its first test in the same state, not in
        // whatever its autovacuum reached by then: hint bits, visibility
        // map and statistics set (VACUUM ANALYZE / ANALYZE TABLE / ANALYZE)
        // and a checkpoint. Without this, the first test of a run without
        // warm-up steps jumped about 40 % in its last slices, on one server
        // before the others (most likely as each one's autovacuum reached
        // the loaded table; not confirmed from the servers' logs).
        for note in load::postwrite(
            connector.as_ref(),
            p.tables,
            std::time::Duration::ZERO,
            super::cancel_flag(),
        )? {
            ctx.view
                .line(&format!("target {label}: after the load: {note}"));
        }
        if plan.sizing.sizing == crate::plan::sizing::Sizing::IoBound
            && admin.dialect() == crate::db::Dialect::Postgres
        {
            // The load leaves the data dirty in the page cache, where an
            // IO-bound run's memory cgroup must let it stay until written
            // (it never fails a read for want of memory): a checkpoint
            // writes it, and the cgroup's watcher then holds the now clean
            // cache to its target before the first step.
            admin.execute_text("CHECKPOINT")?;
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
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
    let server = match ctx.server.dialect() {
        crate::db::Dialect::Postgres => Server::Postgres {
            postmaster_pid: pid,
        },
        // vgdb runs as the account that owns the server's callgrind files.
        _ => Server::Mariadb {
            pid,
            owner: std::fs::metadata(&dir)
                .ok()
                .map(|m| (m.uid(), m.gid()))
                .filter(|_| nix::unistd::geteuid().is_root()),
        },
    };
    Ok(Counting {
        dir,
        server,
        events_per_client: per_client,
        warmup_events: (per_client / 10).max(10),
    })
}

/// How many slices test `seq` is cut into when interleaved: 1 when its
/// steps run on shards or are counted under Valgrind, or for an unreported
/// warm-up; else
/// [`SysbenchParams::slices_for`](crate::workload::sysbench::SysbenchParams::slices_for)
/// its length.
pub fn slices_of(plan: &Plan, seq: usize) -> u32 {
    let test = &plan.tests[seq];
    if plan.client_hosts.is_some() || plan.instructions.is_some() || !test.reported() {
        return 1;
    }
    plan.sysbench.slices_for(plan.sysbench.secs(test))
}

/// The longest warm-up of a slice after the first: the server and the
/// clients' connections are warm (kept from the first slice on), only the
/// slice's client threads are new and the server idled through the other
/// targets' turns.
pub const SLICE_WARMUP: std::time::Duration = std::time::Duration::from_millis(50);

/// One test made ready on one target at one client count: the step as the
/// store knows it, its EXPLAIN output, its length and clients, and how its
/// clients run (on shards, multiplexed on event loops, or a thread each).
pub struct PreparedTest {
    suite: Sysbench,
    seq: usize,
    info: crate::workload::StepInfo,
    plans: Vec<(String, String)>,
    step_plan: crate::runner::StepPlan,
    engine: Engine,
    /// The cell of `seq` and the sweep point, among the target's steps.
    position: u32,
}

/// How a test's clients run.
enum Engine {
    Sharded(Box<(ClientHosts, PgConnectOptions, ShardSpec)>),
    /// Under Valgrind (`--instructions`): a fixed number of events, the
    /// count left in the slot for the step's record.
    Counted(Box<Counting>, super::step::CountSlot),
    /// In this process, multiplexed on this many event loops or a thread
    /// each ([`Schedule::loops`]: the runner picks the engine).
    Runner {
        loops: Option<u32>,
    },
}

impl PreparedTest {
    /// Its cell key (the step's name, with the client count in a sweep).
    pub fn cell_key(&self) -> String {
        self.info.cell_key()
    }

    /// The step plan of slice `k` of `n`: an equal share of the measured
    /// time; the first keeps the test's warm-up, the others (on the
    /// connections the first opened) warm up for at most [`SLICE_WARMUP`].
    pub fn slice_plan(&self, k: u32, n: u32) -> crate::runner::StepPlan {
        let mut p = self.step_plan.clone();
        p.duration = self.step_plan.duration / n.max(1);
        if k > 0 {
            p.warmup = p.warmup.min(SLICE_WARMUP);
        }
        p
    }

    /// Records in the step's parameters that it was measured in `n` slices.
    pub fn mark_sliced(&mut self, n: u32) {
        if let Some(params) = self.info.params.as_object_mut() {
            params.insert("slices".into(), n.into());
        }
    }

    /// The key seed of slice `k`: the test's seed itself for the first, a
    /// derivative for the others (the same on
    /// every target, so paired slices draw the same keys).
    pub fn slice_seed(&self, k: u32) -> u64 {
        let seed = self.suite.params.seed;
        if k == 0 {
            seed
        } else {
            super::interleave::repetition_seed(seed.rotate_left(17), k)
        }
    }

    /// Whether the test's clients can take turns with other targets'
    /// (`--turn-ms`): a thread each, in this process.
    pub fn takes_turns(&self) -> bool {
        matches!(self.engine, Engine::Runner { loops: None })
    }

    /// The suite's clients draw their keys from `seed`.
    fn seeded(&self, seed: u64) -> Sysbench {
        let mut params = self.suite.params.clone();
        params.seed = seed;
        Sysbench {
            params,
            dialect: self.suite.dialect,
        }
    }

    /// Runs the clients of `tests` (one test made ready on several
    /// targets, each with its connector) taking turns of `turn` over
    /// `step_plan`, every target's keys drawn from `seed`: one result per
    /// target ([`crate::runner::run_turns`]).
    pub fn run_turns(
        plan: &Plan,
        tests: &[(&PreparedTest, &dyn Connector)],
        step_plan: &crate::runner::StepPlan,
        (seed, turn): (u64, std::time::Duration),
        cancel: &std::sync::atomic::AtomicBool,
        progress: &mut dyn FnMut(&crate::runner::Progress<'_>),
    ) -> Result<Vec<crate::runner::StepResult>, crate::db::DbError> {
        let suites: Vec<Sysbench> = tests.iter().map(|(t, _)| t.seeded(seed)).collect();
        let clients: Vec<_> = suites
            .iter()
            .zip(tests)
            .map(|(s, (t, _))| s.clients(&plan.tests[t.seq], 0))
            .collect();
        let sides: Vec<crate::runner::Side<'_>> = clients
            .iter()
            .zip(tests)
            .map(|(work, (_, connector))| crate::runner::Side {
                connector: *connector,
                work,
            })
            .collect();
        crate::runner::run_turns(step_plan, turn, &sides, cancel, progress)
    }

    /// Runs the clients once over `step_plan` with key seed `seed`.
    pub fn run(
        &self,
        plan: &Plan,
        step_plan: &crate::runner::StepPlan,
        seed: u64,
        conn: &dyn Connector,
        cancel: &std::sync::atomic::AtomicBool,
        progress: &mut dyn FnMut(&crate::runner::Progress<'_>),
    ) -> Result<crate::runner::StepResult, crate::db::DbError> {
        let suite = self.seeded(seed);
        let test = &plan.tests[self.seq];
        match &self.engine {
            Engine::Sharded(s) => {
                let (hosts, target, spec) = s.as_ref();
                let store = plan.input.store.as_deref().unwrap_or_default();
                let span = Some((step_plan.warmup, step_plan.duration));
                shards::run_sharded(store, hosts, target, spec, span, cancel, progress)
            }
            Engine::Counted(counting, slot) => {
                load::settle_for_count(conn, suite.dialect, suite.params.tables)?;
                let clients = suite.clients(test, 0);
                let (result, count) = counting.run(step_plan, conn, &clients, cancel, progress)?;
                *slot.lock().expect("count slot") = Some(count);
                Ok(result)
            }
            Engine::Runner { loops } => run_step(
                step_plan,
                Schedule {
                    loops: *loops,
                    ..Schedule::PLAIN
                },
                conn,
                &suite.clients(test, 0),
                cancel,
                progress,
            ),
        }
    }

    /// Measures the test whole on the context's target and stores it (an
    /// earlier attempt's step is kept).
    pub fn measure(&self, plan: &Plan, ctx: &mut StepContext<'_>) -> anyhow::Result<()> {
        let seed = self.suite.params.seed;
        ctx.measure(
            self.position,
            step_count(plan),
            &self.info,
            &self.plans,
            |conn, cancel, progress| self.run(plan, &self.step_plan, seed, conn, cancel, progress),
            super::step::PER_QUERY,
        )?;
        Ok(())
    }

    /// Stores the test measured in `slices` (each with the time its
    /// measured interval began) as one step.
    pub fn finish_sliced(
        &self,
        plan: &Plan,
        ctx: &mut StepContext<'_>,
        measuring: super::step::Measuring,
        slices: Vec<(String, crate::runner::StepResult)>,
    ) -> anyhow::Result<()> {
        let threads = self.step_plan.threads;
        // The rounds stop early only at a Ctrl-C (a failed slice is kept),
        // so no slice means this target's first turn never came: the time
        // it waited was not its measured time.
        let result = crate::record::slices::join(slices).unwrap_or_else(|| {
            measuring.pause();
            crate::runner::StepResult::interrupted(threads, "interrupted before its first slice")
        });
        ctx.finish(
            measuring,
            (self.position, step_count(plan)),
            &self.info,
            &self.plans,
            result,
            super::step::PER_QUERY,
        )?;
        Ok(())
    }
}

/// Makes test `seq` ready on the context's target at client count number
/// `point` of the sweep, with key seed `seed`: resets the binary log,
/// EXPLAINs its statements (once per test, not for a step measured
/// before), and chooses how its clients run.
pub fn prepare_test(
    plan: &Plan,
    ctx: &mut StepContext<'_>,
    loaded: &mut Loaded,
    (seq, point): (usize, usize),
    seed: u64,
) -> anyhow::Result<PreparedTest> {
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
    let engine = match sharding(plan, ctx, &suite, test, &label)? {
        Some(s) => Engine::Sharded(Box::new(s)),
        None if ctx.instructions.is_some() => {
            let events = ctx.instructions.expect("checked").for_test(test);
            let c = counting(ctx, events, step_plan.threads)?;
            Engine::Counted(Box::new(c), ctx.counted.clone())
        }
        None if p.mux_from > 0
            && threads >= p.mux_from
            && Sysbench::multiplexes(test)
            && ctx.server.connector().multiplexes() =>
        {
            let loops = mux::loops_for(threads);
            if let Some(params) = info.params.as_object_mut() {
                params.insert("client_loops".into(), loops.into());
            }
            Engine::Runner { loops: Some(loops) }
        }
        None => Engine::Runner { loops: None },
    };
    Ok(PreparedTest {
        suite,
        seq,
        info,
        plans,
        step_plan,
        engine,
        position: (seq * points(plan) + point) as u32,
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
    prepare_test(plan, ctx, loaded, (seq, point), seed)?.measure(plan, ctx)?;
    housekeeping(plan, ctx, loaded, seq)
}

/// The postwrite housekeeping after test `seq` when it calls for it
/// (analyze, flush, a wait scaled to the tables' size).
pub fn housekeeping(
    plan: &Plan,
    ctx: &mut StepContext<'_>,
    loaded: &mut Loaded,
    seq: usize,
) -> anyhow::Result<()> {
    let p = &plan.sysbench;
    let label = ctx.label.clone();
    if plan.tests[seq].after == After::Postwrite && !cancelled() {
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

/// Runs a `tidemark shard`'s part of sysbench test `test` (its
/// [`TestDef::name`](crate::workload::sysbench::TestDef)) on PostgreSQL:
/// the shard's clients at the step's knobs, held for the published start.
pub fn run_shard_part(
    test: &str,
    params: &crate::workload::sysbench::SysbenchParams,
    part: shards::ShardPart<'_>,
) -> anyhow::Result<crate::runner::StepResult> {
    let def = crate::workload::sysbench::catalog::suite()
        .into_iter()
        .find(|t| t.name() == test)
        .ok_or_else(|| anyhow::anyhow!("no sysbench test {test} in this tidemark"))?;
    let suite = Sysbench {
        params: params.clone(),
        dialect: crate::db::Dialect::Postgres,
    };
    let mut plan = suite.step_plan(&def, part.label);
    plan.threads = part.count;
    let schedule = Schedule {
        hold: part.hold,
        ..Schedule::PLAIN
    };
    let first = part.first;
    run_step(
        &plan,
        schedule,
        part.connector,
        &suite.clients(&def, first),
        part.cancel,
        part.live,
    )
    .map(|mut r| {
        for c in &mut r.clients {
            c.client += first;
        }
        r
    })
    .map_err(|e| anyhow::anyhow!("{e}"))
}
