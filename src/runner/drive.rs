//! The one event loop every client thread runs, whatever the step's shape.
//!
//! A duration-bound sysbench client and a rate-limited ibench inserter with
//! a quota differ only in their [`LoopRules`]: when the loop stops (a
//! deadline, a quota of events, another thread having ended), whether each
//! event waits for a slot on an open-loop schedule ([`Pacer`]), and whether
//! it waits for a condition on other threads' progress (a [`Gate`]). The
//! measuring, counting and error handling are the same code for all.
//!
//! The per-event path takes no lock and does not allocate: counters are
//! atomics owned by one thread each (the monitor reads them once a second),
//! histograms are thread-local, and waking a gated peer is an `unpark`
//! (a single atomic operation unless the peer is actually asleep).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::Thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::pace::Pacer;
use super::result::{ClientResult, keep_error_sample, new_histogram};
use super::turns::Seat;
use super::{ClientWork, thread_cpu_secs};
use crate::db::{Conn, ErrorKind};

/// How long a gated thread sleeps before it looks at its gate again even if
/// nobody woke it (a safety net; peers wake it when they make progress).
const GATE_RECHECK: Duration = Duration::from_millis(100);

/// Longest single sleep, so that Ctrl-C is noticed quickly.
const SLEEP_SLICE: Duration = Duration::from_millis(100);

/// An event that starts this much after its intended start counts as late.
const LATE_US: u64 = 1_000;

/// A condition on other threads' progress that must hold before a thread
/// starts its event number `n` (0-based count of its successful events):
/// e.g. "the inserter has finished more batches than I have deleted".
/// Evaluated on the thread's hot path, so it must not allocate or lock.
pub type Gate = Box<dyn Fn(u64, &Peers<'_>) -> bool + Send + Sync>;

/// Per-thread counters the monitor reads once a second. Padded to a cache
/// line pair each so threads never share one.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Counters {
    pub events: AtomicU64,
    pub statements: AtomicU64,
    pub rows: AtomicU64,
    pub errors: AtomicU64,
    pub retries: AtomicU64,
    /// Largest latency from the actual start since the monitor last looked.
    pub max_latency_us: AtomicU64,
    /// Largest latency from the intended start (paced threads).
    pub max_intended_us: AtomicU64,
    /// Largest delay of an actual start behind its intended start.
    pub max_behind_us: AtomicU64,
    /// Set once the thread has left its loop.
    pub ended: AtomicBool,
}

/// What a gate may look at: every thread's progress in this step.
pub struct Peers<'a> {
    pub(crate) counters: &'a [Counters],
    pub(crate) threads: &'a [OnceLock<Thread>],
}

impl Peers<'_> {
    /// Successful events thread `i` has finished so far.
    #[inline]
    pub fn done(&self, i: usize) -> u64 {
        self.counters[i].events.load(Ordering::Acquire)
    }

    /// Whether thread `i` has left its loop (finished, failed or stopped).
    #[inline]
    pub fn ended(&self, i: usize) -> bool {
        self.counters[i].ended.load(Ordering::Acquire)
    }

    #[inline]
    pub(crate) fn wake(&self, i: usize) {
        if let Some(t) = self.threads.get(i).and_then(OnceLock::get) {
            t.unpark();
        }
    }

    pub(crate) fn wake_all(&self) {
        for i in 0..self.threads.len() {
            self.wake(i);
        }
    }
}

/// When one thread's loop stops and how it paces itself.
pub(crate) struct LoopRules<'a> {
    /// This thread's index in `peers`.
    pub index: usize,
    pub client: u32,
    /// Events before this instant are a warm-up: run, not counted.
    pub measure_from: Instant,
    /// Stop starting events at this instant.
    pub deadline: Option<Instant>,
    /// Stop after this many successful events.
    pub quota: Option<u64>,
    /// Stop once this thread has ended.
    pub until_ended: Option<usize>,
    pub pacer: Option<Pacer>,
    pub gate: Option<&'a Gate>,
    /// The thread's side when several targets take turns
    /// ([`super::turns`]): it starts an event only while its side is open.
    pub turn: Option<&'a Seat<'a>>,
    /// Threads to wake after each of this thread's events.
    pub wakes: &'a [usize],
    pub peers: &'a Peers<'a>,
    pub cancel: &'a AtomicBool,
    /// Set by any thread that cannot go on; every thread then stops.
    pub abort: Option<&'a AtomicBool>,
    /// Give up after this many failed events in a row (an error storm).
    pub storm_limit: Option<u32>,
}

impl LoopRules<'_> {
    #[inline]
    pub(crate) fn stopped(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
            || self.abort.is_some_and(|a| a.load(Ordering::Relaxed))
            || self.until_ended.is_some_and(|u| self.peers.ended(u))
    }

    /// Sleeps until `at` in short slices; false if the step stopped.
    fn sleep_until(&self, at: Instant) -> bool {
        loop {
            if self.stopped() {
                return false;
            }
            let now = Instant::now();
            if now >= at {
                return true;
            }
            std::thread::sleep((at - now).min(SLEEP_SLICE));
        }
    }
}

/// What a thread hands back when its loop ends.
pub(crate) struct ThreadEnd {
    /// Latency from each event's actual start, µs.
    pub histogram: Histogram<u64>,
    /// Latency from each event's intended start, µs (paced threads).
    pub intended: Option<Histogram<u64>>,
    pub result: ClientResult,
    /// The other clients this thread drove (an event loop's); empty for a
    /// thread of one connection.
    pub more_clients: Vec<ClientResult>,
    pub rows: u64,
    pub retries: u64,
    pub cpu_secs: f64,
    pub error_samples: Vec<String>,
    pub connection_lost: bool,
    /// Why the thread gave up, when it could not go on.
    pub fatal: Option<String>,
    /// The thread left its loop here (after waiting out its last slot).
    pub ended_at: Instant,
    pub max_behind_us: u64,
    pub late_events: u64,
}

#[inline]
fn micros(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

/// Runs events on `conn` until the rules say stop, and returns what the
/// thread measured.
pub(crate) fn drive(
    rules: &LoopRules<'_>,
    conn: &mut dyn Conn,
    work: &mut dyn ClientWork,
) -> ThreadEnd {
    let c = &rules.peers.counters[rules.index];
    let mut histogram = new_histogram();
    let mut intended_h = rules.pacer.as_ref().map(|_| new_histogram());
    let mut pacer = rules.pacer.clone();
    let mut res = ClientResult {
        client: rules.client,
        ..Default::default()
    };
    let (mut rows, mut retries) = (0u64, 0u64);
    let mut samples: Vec<String> = Vec::new();
    let mut measuring = false;
    let mut cpu_start = 0.0;
    // CPU of the turns' warm-ups after measuring began (not counted).
    let (mut was_counted, mut uncounted_from, mut uncounted_cpu) = (true, 0.0, 0.0);
    let mut last_end = rules.measure_from;
    let mut connection_lost = false;
    let mut fatal = None;
    let mut done = 0u64;
    let mut failures_in_row = 0u32;
    let (mut max_behind_us, mut late_events) = (0u64, 0u64);

    'events: loop {
        if rules.stopped() || rules.quota.is_some_and(|q| done >= q) {
            break;
        }
        if let Some(gate) = rules.gate {
            while !gate(done, rules.peers) {
                if rules.stopped() {
                    break 'events;
                }
                std::thread::park_timeout(GATE_RECHECK);
            }
        }
        let intended = match pacer.as_mut() {
            Some(p) => {
                let at = p.take();
                if !rules.sleep_until(at) {
                    break;
                }
                Some(at)
            }
            None => None,
        };
        // Taking turns: wait for this side's turn; an event in a turn's
        // warm-up runs but is not counted, nor is its CPU.
        let counted = match rules.turn.map(|seat| seat.enter(rules)) {
            Some(None) => break,
            Some(Some(counted)) => counted,
            None => true,
        };
        if measuring && counted != was_counted {
            let now = thread_cpu_secs();
            if !counted {
                uncounted_from = now;
            } else {
                uncounted_cpu += now - uncounted_from;
            }
        }
        was_counted = counted;
        let t0 = Instant::now();
        if rules.deadline.is_some_and(|d| t0 >= d) {
            if let Some(seat) = rules.turn {
                seat.leave();
            }
            break;
        }
        if !measuring && t0 >= rules.measure_from {
            measuring = true;
            cpu_start = thread_cpu_secs();
            // Measuring may begin inside a turn's warm-up.
            uncounted_from = cpu_start;
            work.measuring();
        }
        let outcome = work.event(conn);
        let t1 = Instant::now();
        if let Some(seat) = rules.turn {
            seat.leave();
        }
        if !measuring || !counted {
            if let (true, Ok(d), Some(seat)) = (measuring, &outcome, rules.turn) {
                seat.warm_statements(d.statements);
            }
            if let Err(e) = outcome
                && e.kind == ErrorKind::Connection
            {
                samples.push(e.to_string());
                connection_lost = true;
                fatal = Some(format!("connection lost: {e}"));
                break;
            }
            continue;
        }
        last_end = t1;
        match outcome {
            Ok(d) => {
                let us = micros(t1 - t0);
                let _ = histogram.record(us.max(1));
                c.max_latency_us.fetch_max(us, Ordering::Relaxed);
                if let (Some(h), Some(at)) = (intended_h.as_mut(), intended) {
                    let co = micros(t1 - at);
                    let _ = h.record(co.max(1));
                    c.max_intended_us.fetch_max(co, Ordering::Relaxed);
                    let behind = micros(t0.saturating_duration_since(at));
                    c.max_behind_us.fetch_max(behind, Ordering::Relaxed);
                    max_behind_us = max_behind_us.max(behind);
                    late_events += u64::from(behind >= LATE_US);
                }
                c.statements
                    .fetch_add(u64::from(d.statements), Ordering::Relaxed);
                c.rows.fetch_add(d.rows, Ordering::Relaxed);
                c.events.fetch_add(1, Ordering::Release);
                res.events += 1;
                res.statements += u64::from(d.statements);
                rows += d.rows;
                done += 1;
                failures_in_row = 0;
            }
            Err(e) if e.kind == ErrorKind::Retryable || e.kind == ErrorKind::Busy => {
                c.retries.fetch_add(1, Ordering::Relaxed);
                retries += 1;
                failures_in_row += 1;
            }
            Err(e) => {
                c.errors.fetch_add(1, Ordering::Relaxed);
                res.errors += 1;
                failures_in_row += 1;
                let text = e.to_string();
                if e.kind == ErrorKind::Connection {
                    connection_lost = true;
                    fatal = Some(format!("connection lost: {text}"));
                }
                keep_error_sample(&mut samples, &text);
                if connection_lost {
                    break;
                }
            }
        }
        if rules.storm_limit.is_some_and(|l| failures_in_row >= l) {
            fatal = Some(format!(
                "error storm: {failures_in_row} failed events in a row{}",
                samples
                    .last()
                    .map(|s| format!(", e.g. {s}"))
                    .unwrap_or_default()
            ));
            break;
        }
        for &w in rules.wakes {
            rules.peers.wake(w);
        }
    }
    // A paced thread that did its quota waits out its last slot, so that its
    // events took exactly as long as the schedule says.
    if let Some(p) = &pacer
        && rules.quota.is_some_and(|q| done >= q)
        && fatal.is_none()
        && rules.sleep_until(p.schedule_end())
    {
        last_end = last_end.max(p.schedule_end());
    }
    let cpu_secs = if measuring {
        let now = thread_cpu_secs();
        if !was_counted {
            uncounted_cpu += now - uncounted_from;
        }
        now - cpu_start - uncounted_cpu
    } else {
        0.0
    };
    res.finish_secs = last_end
        .saturating_duration_since(rules.measure_from)
        .as_secs_f64();
    c.ended.store(true, Ordering::Release);
    if fatal.is_some()
        && let Some(a) = rules.abort
    {
        a.store(true, Ordering::SeqCst);
    }
    rules.peers.wake_all();
    ThreadEnd {
        histogram,
        intended: intended_h,
        result: res,
        more_clients: Vec::new(),
        rows,
        retries,
        cpu_secs,
        error_samples: samples,
        connection_lost,
        fatal,
        ended_at: last_end,
        max_behind_us,
        late_events,
    }
}
