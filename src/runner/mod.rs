//! Executing one step: one OS thread and one connection per client thread,
//! a start barrier, a warm-up that is not measured, then a measured interval
//! with per-second counters and latency histograms per thread, merged at the
//! end.
//!
//! The runner does not know which workload it runs: a workload hands it one
//! [`ClientWork`] per thread. Two step shapes share the same pieces:
//! [`run_step`] (sysbench: N identical clients for a fixed duration) and
//! [`run_roles`] (the Insert Benchmark: several roles per client, fixed work,
//! open-loop rate limits, threads that wait on each other). Both drive each
//! thread with the one event loop in `drive` (stop rules, [`pace::Pacer`],
//! [`Gate`]) and watch it with the one once-a-second `monitor`. The
//! per-event path takes no lock and does not allocate: counters are atomics
//! owned by one thread each, histograms are thread-local.

mod drive;
mod monitor;
pub mod mux;
pub mod pace;
mod ramp;
pub use crate::record::step as result;
pub mod roles;

use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex, OnceLock};
use std::thread::{ScopedJoinHandle, Thread};
use std::time::{Duration, Instant};

pub use crate::db::Connector;
use crate::db::{Conn, DbError, ErrorKind};
use drive::{Counters, LoopRules, MAX_ERROR_SAMPLES, ThreadEnd, drive};
pub use drive::{Gate, Peers};
use monitor::{ThreadSecond, Watch, monitor};
pub use result::{
    ClientResult, Counts, RoleClient, RoleResult, RoleSecond, SecondSample, StepResult, StepStatus,
};
pub use roles::{RolesPlan, ThreadPlan, run_roles, run_roles_held};

/// What one event did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Done {
    /// Statements sent, including BEGIN and COMMIT.
    pub statements: u32,
    /// Rows returned or changed (for scan: rows examined).
    pub rows: u64,
}

/// One client's loop body, built by a workload for one thread.
pub trait ClientWork: Send {
    /// Prepares statements on the client's connection, before the barrier.
    fn prepare(&mut self, conn: &mut dyn Conn) -> Result<(), DbError>;
    /// Runs one event (a transaction or a single statement). On error the
    /// implementation leaves the connection ready for the next event (it
    /// rolls back an open transaction).
    fn event(&mut self, conn: &mut dyn Conn) -> Result<Done, DbError>;
    /// Called once, before the first measured event (the warm-up is
    /// over): a workload that counts more than the runner does starts here.
    fn measuring(&mut self) {}
}

/// How long and with how many clients a step runs.
#[derive(Clone, Debug)]
pub struct StepPlan {
    /// Shown in progress output.
    pub label: String,
    pub threads: u32,
    pub warmup: Duration,
    pub duration: Duration,
}

pub use crate::record::Progress;

/// Runs one step to its end (or until `cancel` is set) and returns what it
/// measured. Fails only when clients cannot connect or prepare.
pub fn run_step(
    plan: &StepPlan,
    connector: &dyn Connector,
    make_work: &(dyn Fn(u32) -> Box<dyn ClientWork> + Sync),
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<StepResult, DbError> {
    run_step_full(
        plan,
        None,
        None,
        connector,
        make_work,
        cancel,
        on_progress,
        &|| Ok(()),
    )
}

/// [`run_step`] with each client's events started on an open-loop
/// schedule of `rate_per_client` events a second (`None`: as fast as it
/// can), as pgbench's `--rate` does.
pub fn run_step_paced(
    plan: &StepPlan,
    rate_per_client: Option<f64>,
    connector: &dyn Connector,
    make_work: &(dyn Fn(u32) -> Box<dyn ClientWork> + Sync),
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<StepResult, DbError> {
    let no_hold = || Ok(());
    run_step_full(
        plan,
        rate_per_client,
        None,
        connector,
        make_work,
        cancel,
        on_progress,
        &no_hold,
    )
}

/// [`run_step`] whose start waits, once every client is connected and
/// prepared, until `hold` returns (a client shard waits there for the
/// start its coordinator publishes). If `hold` fails, no client runs and
/// the step fails with its error.
pub fn run_step_held(
    plan: &StepPlan,
    connector: &dyn Connector,
    make_work: &(dyn Fn(u32) -> Box<dyn ClientWork> + Sync),
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress<'_>),
    hold: &dyn Fn() -> Result<(), DbError>,
) -> Result<StepResult, DbError> {
    run_step_full(
        plan,
        None,
        None,
        connector,
        make_work,
        cancel,
        on_progress,
        hold,
    )
}

/// [`run_step_held`] that runs a fixed number of events instead of a
/// duration: each client stops after `events_per_client` successful
/// events, with no warm-up (a client that wants one does it in
/// [`ClientWork::prepare`]); the step's seconds are the time it took. The
/// instruction-count mode's steps (`run --instructions`): under Valgrind a
/// duration would measure very different amounts of work.
pub fn run_step_counted(
    plan: &StepPlan,
    events_per_client: u64,
    connector: &dyn Connector,
    make_work: &(dyn Fn(u32) -> Box<dyn ClientWork> + Sync),
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress<'_>),
    hold: &dyn Fn() -> Result<(), DbError>,
) -> Result<StepResult, DbError> {
    let plan = StepPlan {
        warmup: Duration::ZERO,
        ..plan.clone()
    };
    run_step_full(
        &plan,
        None,
        Some(events_per_client),
        connector,
        make_work,
        cancel,
        on_progress,
        hold,
    )
}

/// The step runner behind [`run_step`], [`run_step_paced`],
/// [`run_step_held`] and [`run_step_counted`]: an optional per-client
/// rate, an optional quota of events per client (then no deadline) and a
/// start hold.
#[allow(clippy::too_many_arguments)]
fn run_step_full(
    plan: &StepPlan,
    rate_per_client: Option<f64>,
    quota: Option<u64>,
    connector: &dyn Connector,
    make_work: &(dyn Fn(u32) -> Box<dyn ClientWork> + Sync),
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress<'_>),
    hold: &dyn Fn() -> Result<(), DbError>,
) -> Result<StepResult, DbError> {
    let threads = plan.threads.max(1);
    let counters: Vec<Counters> = (0..threads).map(|_| Counters::default()).collect();
    let handles: Vec<OnceLock<Thread>> = (0..threads).map(|_| OnceLock::new()).collect();
    let peers = Peers {
        counters: &counters,
        threads: &handles,
    };
    let start_gate = StartGate::after_ready(threads as usize);
    let ramp = ramp::ConnectRamp::for_host();

    std::thread::scope(|scope| {
        let mut joins = Vec::with_capacity(threads as usize);
        for client in 0..threads {
            let (peers, start_gate, ramp) = (&peers, &start_gate, &ramp);
            let builder = std::thread::Builder::new().name(format!("client-{client}"));
            let join = builder
                .spawn_scoped(scope, move || {
                    let _ = peers.threads[client as usize].set(std::thread::current());
                    let setup = {
                        let _turn = ramp.admit();
                        connector.connect().and_then(|mut conn| {
                            let mut work = make_work(client);
                            work.prepare(conn.as_mut())?;
                            Ok((conn, work))
                        })
                    };
                    let (mut conn, mut work, start) = start_gate.ready(setup)?;
                    let rules = LoopRules {
                        index: client as usize,
                        client,
                        measure_from: start + plan.warmup,
                        deadline: match quota {
                            Some(_) => None,
                            None => Some(start + plan.warmup + plan.duration),
                        },
                        quota,
                        until_ended: None,
                        pacer: rate_per_client.and_then(|r| pace::Pacer::new(start, r)),
                        gate: None,
                        wakes: &[],
                        peers,
                        cancel,
                        abort: None,
                        storm_limit: None,
                    };
                    Some(drive(&rules, conn.as_mut(), work.as_mut()))
                })
                .expect("spawning a client thread");
            joins.push(join);
        }

        let run = Coordinated {
            plan,
            clients: threads,
            counters: &counters,
            cancel,
            quota,
        };
        let start = start_gate.open_held_or_join(&mut joins, hold)?;
        run.finish(start, joins, on_progress)
    })
}

/// The coordinating side of a step whose threads were spawned: watch them
/// once a second, join them, and merge what they measured.
pub(crate) struct Coordinated<'a> {
    pub plan: &'a StepPlan,
    /// Clients (connections) of the step.
    pub clients: u32,
    /// One per spawned thread.
    pub counters: &'a [Counters],
    pub cancel: &'a AtomicBool,
    /// Events per client when the step runs a fixed number of events
    /// (then it has no deadline and its seconds are the time it took).
    pub quota: Option<u64>,
}

impl Coordinated<'_> {
    /// From the step's `start` on: the monitor until the end, then the
    /// threads' results as the step's.
    pub(crate) fn finish(
        &self,
        start: Instant,
        joins: Vec<ScopedJoinHandle<'_, Option<ThreadEnd>>>,
        on_progress: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<StepResult, DbError> {
        let (plan, cancel) = (self.plan, self.cancel);
        let measure_from = start + plan.warmup;
        let end = measure_from + plan.duration;
        let quotas = vec![self.quota; self.counters.len()];
        let watch = Watch {
            label: &plan.label,
            start,
            measure_from,
            end: self.quota.is_none().then_some(end),
            quotas: &quotas,
            cancel,
            abort: None,
        };
        let seconds = monitor(&watch, self.counters, on_progress);
        let ends: Vec<ThreadEnd> = joins
            .into_iter()
            .filter_map(|h| h.join().expect("client thread panicked"))
            .collect();
        let stopped = match self.quota {
            Some(_) => Instant::now(),
            None => Instant::now().min(end),
        };
        // A counted step lasted as long as its events took.
        let counted;
        let plan = match self.quota {
            Some(_) => {
                counted = StepPlan {
                    duration: stopped.saturating_duration_since(measure_from),
                    ..plan.clone()
                };
                &counted
            }
            None => plan,
        };
        let per_second = sum_seconds(&seconds, |_| true);
        let retries = self
            .counters
            .iter()
            .map(|c| c.retries.load(Ordering::Relaxed))
            .sum();
        Ok(assemble(
            plan,
            self.clients,
            ends,
            per_second,
            retries,
            measure_from,
            stopped,
            cancel,
        ))
    }
}

/// The start barrier of a step: every thread connects and prepares, then
/// all start together; if any failed, none runs and the step reports why.
/// A sysbench step takes its start once the last thread is ready
/// (connecting a thousand clients through the ramp takes a while), so it
/// loses no measured time to its set-up; a multi-role step keeps the start
/// it took when it began waiting (its schedule starts then).
pub(crate) struct StartGate {
    /// Take the start after every thread is ready.
    start_after_ready: bool,
    /// Every thread and the coordinator: set-up done.
    barrier: Barrier,
    /// The same again once the coordinator has set the start.
    go: Barrier,
    failed: AtomicBool,
    error: Mutex<Option<DbError>>,
    start: Mutex<Option<Instant>>,
}

impl StartGate {
    /// A gate for `threads` whose start is taken when the coordinator
    /// arrives (multi-role steps).
    pub(crate) fn new(threads: usize) -> StartGate {
        StartGate {
            start_after_ready: false,
            barrier: Barrier::new(threads + 1),
            go: Barrier::new(threads + 1),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
            start: Mutex::new(None),
        }
    }

    /// A gate for `threads` whose start is taken once all are ready
    /// (sysbench steps, thread per connection or event loops).
    pub(crate) fn after_ready(threads: usize) -> StartGate {
        StartGate {
            start_after_ready: true,
            ..StartGate::new(threads)
        }
    }

    /// Called by a thread once its setup is done; returns its connection
    /// and work and the step's start, or `None` if some thread failed.
    pub(crate) fn ready<C, W>(&self, setup: Result<(C, W), DbError>) -> Option<(C, W, Instant)> {
        let (conn, work) = match setup {
            Ok(v) => v,
            Err(e) => {
                self.failed.store(true, Ordering::SeqCst);
                self.error.lock().unwrap().get_or_insert(e);
                self.barrier.wait();
                self.go.wait();
                return None;
            }
        };
        self.barrier.wait();
        self.go.wait();
        if self.failed.load(Ordering::SeqCst) {
            return None;
        }
        let start = self
            .start
            .lock()
            .unwrap()
            .expect("start is set before the barrier");
        Some((conn, work, start))
    }

    /// Called by the coordinating thread: once every thread is ready,
    /// waits for `hold` (a shard's published start; an error fails the
    /// start as a thread's would), sets the start, releases the threads,
    /// and fails if any could not start.
    fn open_held(&self, hold: &dyn Fn() -> Result<(), DbError>) -> Result<Instant, DbError> {
        if self.start_after_ready {
            self.barrier.wait();
        }
        if !self.failed.load(Ordering::SeqCst)
            && let Err(e) = hold()
        {
            self.failed.store(true, Ordering::SeqCst);
            self.error.lock().unwrap().get_or_insert(e);
        }
        let start = Instant::now();
        *self.start.lock().unwrap() = Some(start);
        if !self.start_after_ready {
            self.barrier.wait();
        }
        self.go.wait();
        if self.failed.load(Ordering::SeqCst) {
            return Err(self.error.lock().unwrap().take().unwrap_or_else(|| {
                DbError::new(ErrorKind::Other, "", "a client failed to start")
            }));
        }
        Ok(start)
    }

    /// [`StartGate::open_held`]; if a thread could not start, first waits for
    /// every thread in `joins` to end.
    pub(crate) fn open_or_join<T>(
        &self,
        joins: &mut Vec<ScopedJoinHandle<'_, T>>,
    ) -> Result<Instant, DbError> {
        self.open_held_or_join(joins, &|| Ok(()))
    }

    /// [`StartGate::open_or_join`] with the start held by `hold`
    /// ([`StartGate::open_held`]).
    fn open_held_or_join<T>(
        &self,
        joins: &mut Vec<ScopedJoinHandle<'_, T>>,
        hold: &dyn Fn() -> Result<(), DbError>,
    ) -> Result<Instant, DbError> {
        self.open_held(hold).inspect_err(|_| {
            for j in joins.drain(..) {
                let _ = j.join();
            }
        })
    }
}

/// Sums the threads selected by `pick` into one [`SecondSample`] per second
/// (maxima are maxima).
pub(crate) fn sum_seconds(
    seconds: &[Vec<ThreadSecond>],
    pick: impl Fn(usize) -> bool,
) -> Vec<SecondSample> {
    seconds
        .iter()
        .enumerate()
        .map(|(sec, row)| {
            let mut s = SecondSample {
                sec: sec as u32,
                ..Default::default()
            };
            for (i, t) in row.iter().enumerate().filter(|(i, _)| pick(*i)) {
                let _ = i;
                s.counts.add(&t.counts);
                s.max_latency_us = s.max_latency_us.max(t.max_latency_us);
            }
            s
        })
        .collect()
}

/// Merges the clients' results into the step result.
#[allow(clippy::too_many_arguments)]
fn assemble(
    plan: &StepPlan,
    threads: u32,
    ends: Vec<ThreadEnd>,
    per_second: Vec<SecondSample>,
    retries: u64,
    measure_from: Instant,
    stopped: Instant,
    cancel: &AtomicBool,
) -> StepResult {
    let mut histogram = result::new_histogram();
    let mut intended: Option<Histogram<u64>> = None;
    let (mut late_events, mut max_behind_us) = (0u64, 0u64);
    let mut clients = Vec::with_capacity(ends.len());
    let mut error_samples: Vec<String> = Vec::new();
    let mut cpu = 0.0;
    let mut lost = 0;
    let mut rows = 0;
    let threads_ended = ends.len();
    for e in ends {
        let _ = histogram.add(&e.histogram);
        if let Some(h) = &e.intended {
            let _ = intended.get_or_insert_with(result::new_histogram).add(h);
            late_events += e.late_events;
            max_behind_us = max_behind_us.max(e.max_behind_us);
        }
        cpu += e.cpu_secs;
        rows += e.rows;
        lost += usize::from(e.connection_lost);
        for s in e.error_samples {
            if error_samples.len() < MAX_ERROR_SAMPLES && !error_samples.contains(&s) {
                error_samples.push(s);
            }
        }
        clients.push(e.result);
        clients.extend(e.more_clients);
    }
    let totals = clients.iter().fold(SecondSample::default(), |mut t, c| {
        t.counts.events += c.events;
        t.counts.statements += c.statements;
        t.counts.errors += c.errors;
        t
    });
    let interrupted = cancel.load(Ordering::Relaxed);
    let secs = if interrupted {
        stopped
            .saturating_duration_since(measure_from)
            .as_secs_f64()
    } else {
        plan.duration.as_secs_f64()
    };
    let (status, failure) = if lost == threads_ended && lost > 0 {
        (
            StepStatus::Failed,
            Some(format!(
                "every client lost its connection: {}",
                error_samples.first().cloned().unwrap_or_default()
            )),
        )
    } else if interrupted {
        (
            StepStatus::Interrupted,
            Some("interrupted by the user".to_string()),
        )
    } else if totals.counts.errors > 0 {
        (StepStatus::Errors, None)
    } else {
        (StepStatus::Ok, None)
    };
    StepResult {
        status,
        failure,
        secs,
        threads,
        counts: Counts {
            events: totals.counts.events,
            statements: totals.counts.statements,
            rows,
            errors: totals.counts.errors,
            retries,
        },
        error_samples,
        histogram,
        per_second,
        clients,
        client_cpu_secs: cpu,
        roles: Vec::new(),
        metrics: intended.map(|h| schedule_json(&h, late_events, max_behind_us)),
    }
}

/// What a paced step stores of its schedule (`{"schedule": …}` in its
/// metrics): latency from each event's intended start (pgbench --rate's
/// latency, which a stall cannot hide), the events that started 1 ms or
/// more late, and the largest delay.
fn schedule_json(
    intended: &Histogram<u64>,
    late_events: u64,
    max_behind_us: u64,
) -> serde_json::Value {
    let at = |q: f64| {
        if intended.is_empty() {
            0
        } else {
            intended.value_at_quantile(q)
        }
    };
    serde_json::json!({"schedule": {
        "intended_p50_us": at(0.5),
        "intended_p99_us": at(0.99),
        "intended_p999_us": at(0.999),
        "intended_max_us": intended.max(),
        "late_events": late_events,
        "max_behind_us": max_behind_us,
    }})
}

/// CPU seconds (user + system) the calling thread has used.
pub fn thread_cpu_secs() -> f64 {
    rusage_cpu_secs(libc::RUSAGE_THREAD)
}

/// CPU seconds (user + system) the whole process has used so far.
pub fn process_cpu_secs() -> f64 {
    rusage_cpu_secs(libc::RUSAGE_SELF)
}

/// User + system CPU seconds of `who` (`RUSAGE_THREAD`, `RUSAGE_SELF`); 0
/// if getrusage fails.
fn rusage_cpu_secs(who: libc::c_int) -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
