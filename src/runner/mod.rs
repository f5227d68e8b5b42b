//! Executing one step: one OS thread and one connection per client thread,
//! a start barrier, a warm-up that is not measured, then a measured interval
//! with per-second counters and latency histograms per thread, merged at the
//! end.
//!
//! The runner does not know which workload it runs: a workload hands it its
//! clients through [`StepWork`]. Two step shapes share the same pieces:
//! [`run_step`] (sysbench and workload files: N identical clients for a
//! fixed duration, a rate or a number of events, a held start, a thread
//! each or multiplexed on event loops, as its [`Schedule`] says: the
//! runner picks the engine) and [`run_roles`] (the Insert Benchmark:
//! several roles per client, fixed work, open-loop rate limits, threads
//! that wait on each other, a held start in its [`RolesPlan`]). Both drive each
//! thread with the one event loop in `drive` (stop rules, [`pace::Pacer`],
//! [`Gate`]) and watch it with the one once-a-second `monitor`; they and
//! `mux`'s event loops build their threads' counters, start gate, watch
//! and join with `crew`. The
//! per-event path takes no lock and does not allocate: counters are atomics
//! owned by one thread each, histograms are thread-local.

mod crew;
mod drive;
mod monitor;
pub mod mux;
pub mod pace;
mod ramp;
pub use crate::record::step as result;
pub mod roles;
pub mod turns;

use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

pub use crate::db::Connector;
use crate::db::{Conn, DbError};
use crew::Crew;
pub use drive::{Gate, Peers};
use drive::{LoopRules, ThreadEnd, drive};
use monitor::{ThreadSecond, Watch};
use result::keep_error_sample;
pub use result::{
    ClientResult, Counts, RoleClient, RoleResult, RoleSecond, SecondSample, StepResult, StepStatus,
};
pub use roles::{RolesPlan, ThreadPlan, run_roles};
pub use turns::{Side, run_turns};

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

/// What a step's clients run: one [`ClientWork`] per client and, for a
/// workload whose every event is one prepared statement, the same client
/// as an event loop can multiplex ([`mux::MuxWork`]). A closure making
/// `ClientWork`s is a `StepWork` with no multiplexed form.
pub trait StepWork: Sync {
    /// The loop body of client `client` (0-based).
    fn client(&self, client: u32) -> Box<dyn ClientWork>;
    /// Client `client` as an event loop runs it, when every event of the
    /// work is one statement (`None` otherwise).
    fn mux_client(&self, _client: u32) -> Option<Box<dyn mux::MuxWork>> {
        None
    }
}

impl<F: Fn(u32) -> Box<dyn ClientWork> + Sync> StepWork for F {
    fn client(&self, client: u32) -> Box<dyn ClientWork> {
        self(client)
    }
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

/// How a step's clients run besides their [`StepPlan`]:
/// [`Schedule::PLAIN`] (a thread each, as fast as they can, for the plan's
/// duration, started at once) or with a rate, a fixed number of events, a
/// held start, or multiplexed on event loops.
#[derive(Clone, Copy)]
pub struct Schedule<'h> {
    /// Each client's events started on an open-loop schedule of this many
    /// a second, as pgbench's `--rate` does (`None`: as fast as it can).
    pub rate_per_client: Option<f64>,
    /// A fixed number of events instead of a duration: each client stops
    /// after this many successful events, with no warm-up (a client that
    /// wants one does it in [`ClientWork::prepare`]); the step's seconds
    /// are the time it took. The instruction-count mode's steps (`run
    /// --instructions`): under Valgrind a duration would measure very
    /// different amounts of work.
    pub events_per_client: Option<u64>,
    /// The start waits, once every client is connected and prepared,
    /// until this returns (a client shard waits there for the start its
    /// coordinator publishes). If it fails, no client runs and the step
    /// fails with its error.
    pub hold: &'h dyn Fn() -> Result<(), DbError>,
    /// The clients multiplexed on this many event loops (see [`mux`])
    /// instead of a thread each: only for work with a
    /// [`StepWork::mux_client`], as fast as it can for the plan's duration
    /// (no rate, no fixed number of events).
    pub loops: Option<u32>,
}

impl Schedule<'static> {
    /// As fast as the clients can, for the plan's duration, started as
    /// soon as every client is ready.
    pub const PLAIN: Schedule<'static> = Schedule {
        rate_per_client: None,
        events_per_client: None,
        hold: &crew::no_hold,
        loops: None,
    };
}

/// Runs one step to its end (or until `cancel` is set) with the engine
/// its `schedule` asks for, a thread and a connection per client or
/// clients multiplexed on event loops, and returns what it measured. Fails
/// only when clients cannot connect or prepare (or the start `hold` fails,
/// or multiplexing is asked of work or a schedule that cannot have it).
pub fn run_step(
    plan: &StepPlan,
    schedule: Schedule<'_>,
    connector: &dyn Connector,
    work: &dyn StepWork,
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<StepResult, DbError> {
    let Schedule {
        rate_per_client,
        events_per_client: quota,
        hold,
        loops,
    } = schedule;
    if let Some(loops) = loops {
        if rate_per_client.is_some() || quota.is_some() {
            return Err(DbError::new(
                crate::db::ErrorKind::Other,
                "",
                "multiplexed clients run as fast as they can for a duration",
            ));
        }
        return mux::run_step_mux(plan, connector, work, hold, cancel, on_progress, loops);
    }
    let counted;
    let plan = match quota {
        Some(_) => {
            counted = StepPlan {
                warmup: Duration::ZERO,
                ..plan.clone()
            };
            &counted
        }
        None => plan,
    };
    let threads = plan.threads.max(1);
    let crew = Crew::new(threads as usize, true);
    let peers = crew.peers();
    let ramp = ramp::ConnectRamp::for_host();

    std::thread::scope(|scope| {
        let mut joins = Vec::with_capacity(threads as usize);
        for client in 0..threads {
            let (crew, peers, ramp) = (&crew, &peers, &ramp);
            let builder = std::thread::Builder::new().name(format!("client-{client}"));
            let join = builder
                .spawn_scoped(scope, move || {
                    let setup = connect_client(ramp, connector, work, client);
                    let (mut conn, mut work, start) = crew.ready(client as usize, setup)?;
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
                        turn: None,
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
            crew: &crew,
            cancel,
            quota,
        };
        let start = crew.open(&mut joins, hold)?;
        run.finish(start, joins, on_progress)
    })
}

/// A client thread's connection and its loop body, prepared.
type ClientSetup = (Box<dyn Conn>, Box<dyn ClientWork>);

/// Client `client`'s connection (through the connect `ramp`) with its
/// loop body prepared on it: a client thread's set-up before the start.
fn connect_client(
    ramp: &ramp::ConnectRamp,
    connector: &dyn Connector,
    work: &dyn StepWork,
    client: u32,
) -> Result<ClientSetup, DbError> {
    let _turn = ramp.admit();
    let mut conn = connector.connect()?;
    let mut work = work.client(client);
    work.prepare(conn.as_mut())?;
    Ok((conn, work))
}

/// The coordinating side of a step whose threads were spawned: watch them
/// once a second, join them, and merge what they measured.
pub(crate) struct Coordinated<'a> {
    pub plan: &'a StepPlan,
    /// Clients (connections) of the step.
    pub clients: u32,
    /// The step's threads.
    pub crew: &'a Crew,
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
        let quotas = vec![self.quota; joins.len()];
        let watch = Watch {
            label: &plan.label,
            start,
            measure_from,
            end: self.quota.is_none().then_some(end),
            quotas: &quotas,
            cancel,
            abort: None,
        };
        let (seconds, ends) = self.crew.watch_and_join(&watch, joins, on_progress);
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
        Ok(assemble(
            plan,
            self.clients,
            ends,
            sum_seconds(&seconds),
            self.crew.retries(),
            measure_from,
            stopped,
            cancel,
        ))
    }
}

/// Sums every thread into one [`SecondSample`] per second (maxima are
/// maxima).
pub(crate) fn sum_seconds(seconds: &[Vec<ThreadSecond>]) -> Vec<SecondSample> {
    seconds
        .iter()
        .enumerate()
        .map(|(sec, row)| {
            let mut s = SecondSample {
                sec: sec as u32,
                ..Default::default()
            };
            for t in row {
                s.counts.add(&t.counts);
                s.max_latency_us = s.max_latency_us.max(t.max_latency_us);
            }
            s
        })
        .collect()
}

/// How a step ended, and why when not well: failed for `fatal`'s reason,
/// else interrupted by the user, else with errors or ok.
pub(crate) fn step_status(
    fatal: Option<String>,
    interrupted: bool,
    errors: u64,
) -> (StepStatus, Option<String>) {
    if let Some(f) = fatal {
        (StepStatus::Failed, Some(f))
    } else if interrupted {
        (
            StepStatus::Interrupted,
            Some("interrupted by the user".to_string()),
        )
    } else if errors > 0 {
        (StepStatus::Errors, None)
    } else {
        (StepStatus::Ok, None)
    }
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
    let mut r = StepResult::empty(threads);
    r.counts.retries = retries;
    let mut intended: Option<Histogram<u64>> = None;
    let (mut late_events, mut max_behind_us) = (0u64, 0u64);
    let mut lost = 0;
    let threads_ended = ends.len();
    for e in ends {
        let _ = r.histogram.add(&e.histogram);
        if let Some(h) = &e.intended {
            let _ = intended.get_or_insert_with(result::new_histogram).add(h);
            late_events += e.late_events;
            max_behind_us = max_behind_us.max(e.max_behind_us);
        }
        r.client_cpu_secs += e.cpu_secs;
        r.counts.rows += e.rows;
        lost += usize::from(e.connection_lost);
        for s in &e.error_samples {
            keep_error_sample(&mut r.error_samples, s);
        }
        r.clients.push(e.result);
        r.clients.extend(e.more_clients);
    }
    for c in &r.clients {
        r.counts.events += c.events;
        r.counts.statements += c.statements;
        r.counts.errors += c.errors;
    }
    let interrupted = cancel.load(Ordering::Relaxed);
    r.secs = if interrupted {
        stopped
            .saturating_duration_since(measure_from)
            .as_secs_f64()
    } else {
        plan.duration.as_secs_f64()
    };
    let every_client_lost = (lost == threads_ended && lost > 0).then(|| {
        format!(
            "every client lost its connection: {}",
            r.error_samples.first().cloned().unwrap_or_default()
        )
    });
    (r.status, r.failure) = step_status(every_client_lost, interrupted, r.counts.errors);
    r.per_second = per_second;
    r.metrics = intended.map(|h| schedule_json(&h, late_events, max_behind_us));
    r
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::StmtId;
    use crate::db::sqlite::{SqliteConnector, SqliteOptions};

    /// `SELECT 1` as one event.
    struct SelectOne(Option<StmtId>);

    impl ClientWork for SelectOne {
        fn prepare(&mut self, conn: &mut dyn Conn) -> Result<(), DbError> {
            self.0 = Some(conn.prepare("SELECT 1")?);
            Ok(())
        }
        fn event(&mut self, conn: &mut dyn Conn) -> Result<Done, DbError> {
            let rows = conn.execute(self.0.expect("prepared"), &[])?;
            Ok(Done {
                statements: 1,
                rows,
            })
        }
    }

    fn sqlite(dir: &tempfile::TempDir) -> SqliteConnector {
        SqliteConnector::new(SqliteOptions {
            path: dir.path().join("t.db"),
            pragmas: Vec::new(),
            busy_timeout: Duration::from_secs(1),
        })
    }

    fn plan(threads: u32) -> StepPlan {
        StepPlan {
            label: "t".into(),
            threads,
            warmup: Duration::ZERO,
            duration: Duration::from_millis(300),
        }
    }

    #[test]
    fn the_schedule_picks_the_engine_and_a_multiplexed_one_only_where_it_can_run() {
        let dir = tempfile::tempdir().unwrap();
        let conn = sqlite(&dir);
        let work = |_| Box::new(SelectOne(None)) as Box<dyn ClientWork>;
        let cancel = AtomicBool::new(false);
        let run = |schedule: Schedule<'_>| {
            run_step(&plan(2), schedule, &conn, &work, &cancel, &mut |_| {})
        };
        // A thread each: both clients ran.
        let r = run(Schedule::PLAIN).unwrap();
        assert_eq!(r.clients.len(), 2);
        assert!(r.clients.iter().all(|c| c.events > 0), "{r:?}");
        // Multiplexed with a rate: refused before anything connects.
        let with_rate = Schedule {
            loops: Some(1),
            rate_per_client: Some(100.0),
            ..Schedule::PLAIN
        };
        let e = run(with_rate).unwrap_err();
        assert!(e.message.contains("as fast as they can"), "{e}");
        // Multiplexed, but the work has no multiplexed client.
        let e = run(Schedule {
            loops: Some(1),
            ..Schedule::PLAIN
        })
        .unwrap_err();
        assert!(e.message.contains("cannot be multiplexed"), "{e}");
    }
}
