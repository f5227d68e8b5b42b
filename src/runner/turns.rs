//! Several targets' clients taking short turns inside one run
//! ([`run_turns`], `--turn-ms`): every side's threads are up for the whole
//! run, and a conductor opens one side at a time for a few milliseconds
//! (A B A B …), each turn a short warm-up ([`TURN_WARMUP`], its events not
//! counted) and then its measured part. A side's thread starts an event
//! only while its side is open; at the end of each part the conductor
//! closes the side, waits for its events in flight to finish, and only
//! then opens the next, so two sides never run at once and no warm-up
//! event runs into a measured part. Each side's measured time is the sum
//! of its own measured parts (from opening to its last event's end), not
//! the wall time.
//!
//! Why: on a shared host the noise that separates two servers measured
//! one after the other comes from neighbours' cache and memory traffic,
//! which varies about 10 % between neighbouring windows at every length
//! from 20 ms to 2 s (docs/verdicts.md). Turns of 10 ms put both sides
//! inside the same windows: in `bench/turns.sh` the standard error of the
//! ratio fell from 0.9–1.7 % (500 ms turns) to 0.3–0.5 % with each side's
//! rate unchanged.
//!
//! The per-event cost is two atomic operations on a side's own counter and
//! one load of the open side; a closed side's threads park until the
//! conductor wakes them.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::thread::Thread;
use std::time::{Duration, Instant};

use super::crew::Crew;
use super::drive::{LoopRules, Peers, drive};
use super::monitor::Watch;
use super::{Connector, Progress, StepPlan, StepResult, StepWork, assemble, ramp, sum_seconds};
use crate::db::DbError;

/// No side is open.
const NONE: usize = usize::MAX;

/// Set in [`TurnTable::open`] beside the side while its turn warms up.
const WARMING: usize = 1 << (usize::BITS - 2);

/// The unmeasured start of every turn: the side's threads run, but their
/// events are not counted and its time is not measured. Each turn starts
/// on caches the other sides' turns filled: with the quick profile's
/// tables about the size of the host's L3, turns of 10 ms with no warm-up
/// measured random-points_range=1000 at about half its rate in whole
/// slices (a refill of about 5 ms a turn).
pub const TURN_WARMUP: Duration = Duration::from_millis(5);

/// How long a closed side's thread sleeps before it looks again even if
/// the conductor did not wake it (a safety net).
const SEAT_RECHECK: Duration = Duration::from_millis(20);

/// How long the conductor sleeps between looks at a closing side's events
/// in flight (the side's last thread to finish wakes it sooner).
const DRAIN_RECHECK: Duration = Duration::from_micros(500);

/// One side of a turn-taking run: a target's server and its clients.
pub struct Side<'a> {
    pub connector: &'a dyn Connector,
    pub work: &'a dyn StepWork,
}

/// A side's events in flight, on a cache line pair of its own.
#[repr(align(128))]
#[derive(Default)]
struct InFlight(AtomicU32);

/// Statements a side ran in its turns' warm-ups once measuring began,
/// on a cache line pair of its own.
#[repr(align(128))]
#[derive(Default)]
struct WarmStatements(AtomicU64);

/// Which side is open, and each side's events in flight.
pub(crate) struct TurnTable {
    open: AtomicUsize,
    in_flight: Vec<InFlight>,
    warm: Vec<WarmStatements>,
    conductor: OnceLock<Thread>,
}

impl TurnTable {
    fn new(sides: usize) -> TurnTable {
        TurnTable {
            open: AtomicUsize::new(NONE),
            in_flight: (0..sides).map(|_| InFlight::default()).collect(),
            warm: (0..sides).map(|_| WarmStatements::default()).collect(),
            conductor: OnceLock::new(),
        }
    }
}

/// A thread's place at the [`TurnTable`]: its side.
pub(crate) struct Seat<'a> {
    pub table: &'a TurnTable,
    pub side: usize,
}

impl Seat<'_> {
    /// Waits until the thread's side is open and counts the event about
    /// to start as in flight; returns whether the event is measured (false
    /// in a turn's warm-up), or `None` if the run stopped meanwhile.
    #[inline]
    pub(crate) fn enter(&self, rules: &LoopRules<'_>) -> Option<bool> {
        let t = self.table;
        loop {
            if t.open.load(Ordering::Acquire) & !WARMING == self.side {
                t.in_flight[self.side].0.fetch_add(1, Ordering::SeqCst);
                // Checked again after counting: either the conductor sees
                // this event in flight, or this thread sees the side closed.
                let open = t.open.load(Ordering::SeqCst);
                if open & !WARMING == self.side {
                    return Some(open & WARMING == 0);
                }
                self.leave();
            }
            if rules.stopped() {
                return None;
            }
            std::thread::park_timeout(SEAT_RECHECK);
        }
    }

    /// An event of a turn's warm-up ran `statements` (after the run's own
    /// warm-up): the host's sampled seconds include their cost.
    #[inline]
    pub(crate) fn warm_statements(&self, statements: u32) {
        self.table.warm[self.side]
            .0
            .fetch_add(u64::from(statements), Ordering::Relaxed);
    }

    /// The event counted by [`Seat::enter`] is over; the last one of a
    /// side being closed wakes the conductor.
    #[inline]
    pub(crate) fn leave(&self) {
        let t = self.table;
        if t.in_flight[self.side].0.fetch_sub(1, Ordering::SeqCst) == 1
            && t.open.load(Ordering::SeqCst) & !WARMING != self.side
            && let Some(c) = t.conductor.get()
        {
            c.unpark();
        }
    }
}

/// What the conductor measured of one side.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct SideTime {
    /// Sum of its measured turns.
    measured: Duration,
    turns: u32,
}

/// The conductor's plan: `sides` sides, turns of `turn`, each side
/// given turns until it has `duration` of measured turns; turns before
/// `measure_from` are the warm-up (cut so that none straddles it).
struct TurnPlan {
    sides: usize,
    turn: Duration,
    /// The unmeasured start of each measured turn ([`TURN_WARMUP`]).
    turn_warmup: Duration,
    measure_from: Instant,
    duration: Duration,
}

/// Opens the table to `open` (a side, with [`WARMING`] in a turn's
/// warm-up), wakes its threads, and closes it at `close_at` (or when the
/// run stops) once its events in flight are over.
fn hold_open(
    table: &TurnTable,
    open: usize,
    close_at: Instant,
    wake: &dyn Fn(),
    stopped: &dyn Fn() -> bool,
) {
    table.open.store(open, Ordering::SeqCst);
    wake();
    loop {
        let now = Instant::now();
        if now >= close_at || stopped() {
            break;
        }
        std::thread::sleep(close_at - now);
    }
    table.open.store(NONE, Ordering::SeqCst);
    while table.in_flight[open & !WARMING].0.load(Ordering::SeqCst) > 0 {
        std::thread::park_timeout(DRAIN_RECHECK);
    }
}

/// Opens the sides in turn until each has its measured time (or the run
/// is cancelled or aborted), then stops every thread; returns each side's
/// measured time and when the measured part ended.
fn conduct(
    s: &TurnPlan,
    table: &TurnTable,
    peers: &Peers<'_>,
    threads_per_side: usize,
    stop: &AtomicBool,
    cancel: &AtomicBool,
) -> (Vec<SideTime>, Instant) {
    let _ = table.conductor.set(std::thread::current());
    let mut time = vec![SideTime::default(); s.sides];
    let stopped = || cancel.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed);
    let mut next = 0usize;
    loop {
        if stopped() {
            break;
        }
        let opened = Instant::now();
        let warming_up = opened < s.measure_from;
        // Round robin over the sides that still need measured time.
        let Some(side) = (0..s.sides)
            .map(|k| (next + k) % s.sides)
            .find(|&j| warming_up || time[j].measured < s.duration)
        else {
            break;
        };
        next = side + 1;
        let length = if warming_up {
            s.turn.min(s.measure_from - opened)
        } else {
            s.turn.min(s.duration - time[side].measured)
        };
        let wake = || {
            for i in side * threads_per_side..(side + 1) * threads_per_side {
                peers.wake(i);
            }
        };
        if warming_up {
            hold_open(table, side | WARMING, opened + length, &wake, &stopped);
            continue;
        }
        // The turn's warm-up, then its measured part, each drained before
        // the next begins (no event of the warm-up runs into it).
        hold_open(
            table,
            side | WARMING,
            opened + s.turn_warmup,
            &wake,
            &stopped,
        );
        let measured_from = Instant::now();
        hold_open(table, side, measured_from + length, &wake, &stopped);
        time[side].measured += measured_from.elapsed();
        time[side].turns += 1;
    }
    let ended = Instant::now();
    stop.store(true, Ordering::SeqCst);
    peers.wake_all();
    (time, ended)
}

/// Runs `sides` taking turns of `turn`: each side gets `plan.threads`
/// clients (a thread and a connection each), about `plan.warmup` of
/// warm-up turns and `plan.duration` of measured turns. Returns one result
/// per side, its seconds the sum of its measured turns and its metrics
/// saying so (`{"turns": {"turn_ms", "count", "wall_secs",
/// "warm_statements"}}`: the wall time the measured part took, which a
/// sampler covering all sides divides by, and the statements of the turns'
/// warm-ups in it). Fails only when clients cannot connect or prepare.
pub fn run_turns(
    plan: &StepPlan,
    turn: Duration,
    sides: &[Side<'_>],
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<Vec<StepResult>, DbError> {
    let per_side = plan.threads.max(1) as usize;
    let n = per_side * sides.len();
    let crew = Crew::new(n, true);
    let peers = crew.peers();
    let ramp = ramp::ConnectRamp::for_host();
    let table = TurnTable::new(sides.len());
    let stop = AtomicBool::new(false);
    let warmup_wall = plan.warmup * sides.len() as u32;

    let (measure_from, ends, seconds, times, ended) = std::thread::scope(|scope| {
        let mut joins = Vec::with_capacity(n);
        for index in 0..n {
            let (side, client) = (index / per_side, (index % per_side) as u32);
            let (crew, peers, ramp, table, stop) = (&crew, &peers, &ramp, &table, &stop);
            let Side { connector, work } = sides[side];
            let join = std::thread::Builder::new()
                .name(format!("client-{side}-{client}"))
                .spawn_scoped(scope, move || {
                    let setup = super::connect_client(ramp, connector, work, client);
                    let (mut conn, mut work, start) = crew.ready(index, setup)?;
                    let seat = Seat { table, side };
                    let rules = LoopRules {
                        index,
                        client,
                        measure_from: start + warmup_wall,
                        deadline: None,
                        quota: None,
                        until_ended: None,
                        pacer: None,
                        gate: None,
                        turn: Some(&seat),
                        wakes: &[],
                        peers,
                        cancel,
                        abort: Some(stop),
                        storm_limit: None,
                    };
                    Some(drive(&rules, conn.as_mut(), work.as_mut()))
                })
                .expect("spawning a client thread");
            joins.push(join);
        }
        let start = crew.open(&mut joins, &super::crew::no_hold)?;
        let measure_from = start + warmup_wall;
        let turn_plan = TurnPlan {
            sides: sides.len(),
            turn,
            turn_warmup: TURN_WARMUP,
            measure_from,
            duration: plan.duration,
        };
        let (table, peers, stop) = (&table, &peers, &stop);
        let conductor = std::thread::Builder::new()
            .name("turns".into())
            .spawn_scoped(scope, move || {
                conduct(&turn_plan, table, peers, per_side, stop, cancel)
            })
            .expect("spawning the conductor");
        let quotas = vec![None; n];
        // Each measured turn comes with its warm-up.
        let per_turn = (turn + TURN_WARMUP).as_secs_f64() / turn.as_secs_f64().max(1e-3);
        let measured_wall = (plan.duration * sides.len() as u32).as_secs_f64() * per_turn;
        let total = warmup_wall.as_secs_f64() + measured_wall;
        let watch = Watch {
            label: &plan.label,
            start,
            measure_from,
            end: None,
            quotas: &quotas,
            cancel,
            abort: Some(stop),
        };
        let (seconds, ends) = crew.watch_and_join(&watch, joins, &mut |p| {
            on_progress(&Progress { total, ..*p })
        });
        let (times, ended) = conductor.join().expect("the conductor panicked");
        Ok((measure_from, ends, seconds, times, ended))
    })?;
    let wall_secs = ended.saturating_duration_since(measure_from).as_secs_f64();
    let mut ends = ends.into_iter();
    let results = times
        .iter()
        .enumerate()
        .map(|(side, time)| {
            let range = side * per_side..(side + 1) * per_side;
            let own: Vec<_> = seconds
                .iter()
                .map(|row| row[range.clone()].to_vec())
                .collect();
            let retries = range
                .clone()
                .map(|i| crew.counters(i).retries.load(Ordering::Relaxed))
                .sum();
            let side_plan = StepPlan {
                duration: time.measured,
                ..plan.clone()
            };
            let mut r = assemble(
                &side_plan,
                plan.threads.max(1),
                ends.by_ref().take(per_side).collect(),
                sum_seconds(&own),
                retries,
                measure_from,
                ended,
                cancel,
            );
            r.secs = time.measured.as_secs_f64();
            r.metrics = Some(serde_json::json!({"turns": {
                "turn_ms": turn.as_secs_f64() * 1000.0,
                "count": time.turns,
                "wall_secs": wall_secs,
                "warm_statements": table.warm[side].0.load(Ordering::Relaxed),
            }}));
            r
        })
        .collect();
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sqlite::{SqliteConnector, SqliteOptions};
    use crate::db::{Conn, StmtId};
    use crate::runner::{ClientWork, Done};
    use std::sync::Mutex;

    /// What a side's event does after its `SELECT 1`: sleep 200 µs, or
    /// keep its client's CPU busy for as long.
    const HOLD: Duration = Duration::from_micros(200);

    /// The events the sides ran: (side, start, end).
    type EventLog = Mutex<Vec<(usize, Instant, Instant)>>;

    /// One event: records (side, start, end) in the shared log, after
    /// running `SELECT 1` on its side's own database and holding for
    /// [`HOLD`], asleep or spinning.
    struct Logged {
        side: usize,
        spin: bool,
        stmt: Option<StmtId>,
        log: &'static EventLog,
    }

    impl ClientWork for Logged {
        fn prepare(&mut self, conn: &mut dyn Conn) -> Result<(), DbError> {
            self.stmt = Some(conn.prepare("SELECT 1")?);
            Ok(())
        }
        fn event(&mut self, conn: &mut dyn Conn) -> Result<Done, DbError> {
            let t0 = Instant::now();
            conn.execute(self.stmt.expect("prepared"), &[])?;
            if self.spin {
                while t0.elapsed() < HOLD {
                    std::hint::spin_loop();
                }
            } else {
                std::thread::sleep(HOLD);
            }
            self.log
                .lock()
                .unwrap()
                .push((self.side, t0, Instant::now()));
            Ok(Done {
                statements: 1,
                rows: 1,
            })
        }
    }

    /// Two sides on SQLite databases of their own taking 20 ms turns over
    /// `plan`, their events spinning or not: each side's result, and the
    /// events in the order they started.
    fn two_sides(plan: &StepPlan, spin: bool) -> (Vec<StepResult>, Vec<(usize, Instant, Instant)>) {
        let log: &'static EventLog = Box::leak(Box::new(Mutex::new(Vec::new())));
        let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
        let connectors: Vec<SqliteConnector> = dirs
            .iter()
            .map(|d| {
                SqliteConnector::new(SqliteOptions {
                    path: d.path().join("t.db"),
                    pragmas: Vec::new(),
                    busy_timeout: Duration::from_secs(1),
                })
            })
            .collect();
        let works: Vec<_> = (0..2)
            .map(|side| {
                move |_| {
                    Box::new(Logged {
                        side,
                        spin,
                        stmt: None,
                        log,
                    }) as Box<dyn ClientWork>
                }
            })
            .collect();
        let sides: Vec<Side<'_>> = (0..2)
            .map(|j| Side {
                connector: &connectors[j],
                work: &works[j],
            })
            .collect();
        let cancel = AtomicBool::new(false);
        let results = run_turns(
            plan,
            Duration::from_millis(20),
            &sides,
            &cancel,
            &mut |_| {},
        )
        .unwrap();
        let mut events = log.lock().unwrap().clone();
        events.sort_by_key(|e| e.1);
        (results, events)
    }

    #[test]
    fn sides_never_run_at_once_and_each_is_timed_by_its_own_turns() {
        let plan = StepPlan {
            label: "t".into(),
            threads: 2,
            warmup: Duration::from_millis(50),
            duration: Duration::from_millis(400),
        };
        let began = Instant::now();
        let (results, events) = two_sides(&plan, false);
        let took = began.elapsed();
        assert_eq!(results.len(), 2);
        for r in &results {
            // Its own turns: 400 ms and a little (each turn's last events).
            assert!((0.4..0.5).contains(&r.secs), "{}", r.secs);
            assert!(r.counts.events > 100, "{:?}", r.counts);
            assert_eq!(r.clients.len(), 2);
            let t = &r.metrics.as_ref().unwrap()["turns"];
            assert_eq!(t["turn_ms"], 20.0);
            // A turn's measured time includes draining its statements in
            // flight, so 400 ms take at most 20 turns of 20 ms, and fewer
            // when a loaded machine stretches them (19 seen in CI).
            assert!((10..=20).contains(&t["count"].as_u64().unwrap()), "{t}");
            // The wall time covers both sides' turns and their warm-ups,
            // whose statements are kept apart.
            assert!(t["wall_secs"].as_f64().unwrap() > 0.95, "{t}");
            assert!(t["warm_statements"].as_u64().unwrap() > 0, "{t}");
        }
        assert!(took >= Duration::from_millis(900), "{took:?}");
        // No event of one side overlaps an event of the other, and the
        // sides took turns: many switches, none run of one side too long.
        let mut switches = 0;
        for (i, a) in events.iter().enumerate() {
            for b in &events[i + 1..] {
                if b.1 >= a.2 {
                    break;
                }
                assert_eq!(a.0, b.0, "sides overlapped: {a:?} {b:?}");
            }
        }
        for w in events.windows(2) {
            switches += usize::from(w[0].0 != w[1].0);
        }
        assert!(switches >= 40, "{switches} switches");
    }

    #[test]
    fn the_client_cpu_is_that_of_the_counted_events_only() {
        // One thread a side (no contention for the CPUs), a long warm-up
        // whose CPU must not be subtracted from, nor added to, the count.
        let plan = StepPlan {
            label: "t".into(),
            threads: 1,
            warmup: Duration::from_millis(300),
            duration: Duration::from_millis(400),
        };
        let (results, _) = two_sides(&plan, true);
        for r in &results {
            let spun = r.counts.events as f64 * HOLD.as_secs_f64();
            let ratio = r.client_cpu_secs / spun;
            assert!((0.7..1.6).contains(&ratio), "client CPU {ratio} x the spin");
        }
    }
}
