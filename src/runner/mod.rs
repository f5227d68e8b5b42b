//! Executing one step: one OS thread and one connection per client, a start
//! barrier, a warm-up that is not measured, then a measured interval with
//! per-second counters and a latency histogram per thread, merged at the end.
//!
//! The runner does not know which workload it runs: a workload hands it one
//! [`ClientWork`] per client. The per-event path takes no lock and does not
//! allocate: counters are relaxed atomics owned by one thread each (read once
//! a second by the monitor), histograms are thread-local.

pub mod result;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

pub use crate::db::Connector;
use crate::db::{Conn, DbError, ErrorKind};
pub use result::{ClientResult, SecondSample, StepResult, StepStatus};

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

/// A progress report, sent about once a second while a step runs.
#[derive(Clone, Debug)]
pub struct Progress<'a> {
    pub label: &'a str,
    pub warming_up: bool,
    /// Seconds since the step started (warm-up included).
    pub elapsed: f64,
    /// Warm-up plus measured duration, seconds.
    pub total: f64,
    /// Statements per second in the last second.
    pub qps: f64,
    pub errors: u64,
}

/// Error messages kept per client, so a broken step says why.
const MAX_ERROR_SAMPLES: usize = 5;

/// Per-client counters the monitor reads once a second. Padded to a cache
/// line each so clients never share one.
#[repr(align(128))]
#[derive(Default)]
struct Counters {
    events: AtomicU64,
    statements: AtomicU64,
    rows: AtomicU64,
    errors: AtomicU64,
    retries: AtomicU64,
    max_latency_us: AtomicU64,
}

/// What a client thread hands back when it ends.
struct ClientEnd {
    histogram: hdrhistogram::Histogram<u64>,
    result: ClientResult,
    cpu_secs: f64,
    error_samples: Vec<String>,
    connection_lost: bool,
}

/// Runs one step to its end (or until `cancel` is set) and returns what it
/// measured. Fails only when clients cannot connect or prepare.
pub fn run_step(
    plan: &StepPlan,
    connector: &dyn Connector,
    make_work: &(dyn Fn(u32) -> Box<dyn ClientWork> + Sync),
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<StepResult, DbError> {
    let threads = plan.threads.max(1);
    let counters: Vec<Counters> = (0..threads).map(|_| Counters::default()).collect();
    let barrier = Barrier::new(threads as usize + 1);
    let setup_failed = AtomicBool::new(false);
    let setup_error: Mutex<Option<DbError>> = Mutex::new(None);
    let start_at: Mutex<Option<Instant>> = Mutex::new(None);

    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads as usize);
        for client in 0..threads {
            let c = &counters[client as usize];
            let (barrier, setup_failed, setup_error, start_at) =
                (&barrier, &setup_failed, &setup_error, &start_at);
            let builder = std::thread::Builder::new().name(format!("client-{client}"));
            let handle = builder
                .spawn_scoped(scope, move || {
                    let setup = connector.connect().and_then(|mut conn| {
                        let mut work = make_work(client);
                        work.prepare(conn.as_mut())?;
                        Ok((conn, work))
                    });
                    let (mut conn, mut work) = match setup {
                        Ok(v) => v,
                        Err(e) => {
                            setup_failed.store(true, Ordering::SeqCst);
                            setup_error.lock().unwrap().get_or_insert(e);
                            barrier.wait();
                            return None;
                        }
                    };
                    barrier.wait();
                    if setup_failed.load(Ordering::SeqCst) {
                        return None;
                    }
                    let start = start_at
                        .lock()
                        .unwrap()
                        .expect("start is set before the barrier");
                    Some(client_loop(
                        client,
                        conn.as_mut(),
                        work.as_mut(),
                        c,
                        start + plan.warmup,
                        start + plan.warmup + plan.duration,
                        cancel,
                    ))
                })
                .expect("spawning a client thread");
            handles.push(handle);
        }

        let start = Instant::now();
        *start_at.lock().unwrap() = Some(start);
        barrier.wait();
        if setup_failed.load(Ordering::SeqCst) {
            for h in handles {
                let _ = h.join();
            }
            return Err(setup_error.lock().unwrap().take().unwrap_or_else(|| {
                DbError::new(ErrorKind::Other, "", "a client failed to start")
            }));
        }

        let measure_from = start + plan.warmup;
        let end = measure_from + plan.duration;
        let per_second = monitor(
            plan,
            &counters,
            start,
            measure_from,
            end,
            cancel,
            on_progress,
        );
        let ends: Vec<ClientEnd> = handles
            .into_iter()
            .filter_map(|h| h.join().expect("client thread panicked"))
            .collect();
        let stopped = Instant::now().min(end);
        let totals = read_counters(&counters);
        Ok(assemble(
            plan,
            threads,
            ends,
            per_second,
            &totals,
            measure_from,
            stopped,
            cancel,
        ))
    })
}

/// The client thread's event loop.
fn client_loop(
    client: u32,
    conn: &mut dyn Conn,
    work: &mut dyn ClientWork,
    c: &Counters,
    measure_from: Instant,
    end: Instant,
    cancel: &AtomicBool,
) -> ClientEnd {
    let mut histogram = result::new_histogram();
    let mut res = ClientResult {
        client,
        ..Default::default()
    };
    let mut samples: Vec<String> = Vec::new();
    let mut measuring = false;
    let mut cpu_start = 0.0;
    let mut last_end = measure_from;
    let mut connection_lost = false;
    loop {
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        let t0 = Instant::now();
        if t0 >= end {
            break;
        }
        if !measuring && t0 >= measure_from {
            measuring = true;
            cpu_start = thread_cpu_secs();
        }
        let outcome = work.event(conn);
        let t1 = Instant::now();
        if !measuring {
            if let Err(e) = outcome
                && e.kind == ErrorKind::Connection
            {
                samples.push(e.to_string());
                connection_lost = true;
                break;
            }
            continue;
        }
        last_end = t1;
        match outcome {
            Ok(done) => {
                let us = (t1 - t0).as_micros() as u64;
                let _ = histogram.record(us.max(1));
                c.events.fetch_add(1, Ordering::Relaxed);
                c.statements
                    .fetch_add(u64::from(done.statements), Ordering::Relaxed);
                c.rows.fetch_add(done.rows, Ordering::Relaxed);
                c.max_latency_us.fetch_max(us, Ordering::Relaxed);
                res.events += 1;
                res.statements += u64::from(done.statements);
            }
            Err(e) if e.kind == ErrorKind::Retryable || e.kind == ErrorKind::Busy => {
                c.retries.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                c.errors.fetch_add(1, Ordering::Relaxed);
                res.errors += 1;
                let text = e.to_string();
                if samples.len() < MAX_ERROR_SAMPLES && !samples.contains(&text) {
                    samples.push(text);
                }
                if e.kind == ErrorKind::Connection {
                    connection_lost = true;
                    break;
                }
            }
        }
    }
    let cpu_secs = if measuring {
        thread_cpu_secs() - cpu_start
    } else {
        0.0
    };
    res.finish_secs = last_end
        .saturating_duration_since(measure_from)
        .as_secs_f64();
    ClientEnd {
        histogram,
        result: res,
        cpu_secs,
        error_samples: samples,
        connection_lost,
    }
}

/// Samples the counters once a second until the step ends; returns the
/// per-second rows of the measured interval.
fn monitor(
    plan: &StepPlan,
    counters: &[Counters],
    start: Instant,
    measure_from: Instant,
    end: Instant,
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress<'_>),
) -> Vec<SecondSample> {
    let total = (end - start).as_secs_f64();
    let mut samples = Vec::new();
    let mut prev = SecondSample::default();
    let mut next = start + Duration::from_secs(1);
    loop {
        let now = Instant::now();
        let wake = next.min(end);
        if wake > now {
            // Sleep in short slices so Ctrl-C is noticed quickly.
            std::thread::sleep((wake - now).min(Duration::from_millis(100)));
            if !cancel.load(Ordering::Relaxed) {
                continue;
            }
        }
        let now = Instant::now();
        let cur = read_counters(counters);
        // The tick scheduled at the end of the warm-up closes the warm-up,
        // however late the sleep returns; classifying it by `now` made the
        // first measured second a near-empty sliver.
        let warming_up = next.min(end) <= measure_from;
        if !warming_up {
            let mut s = delta(&cur, &prev);
            s.sec = samples.len() as u32;
            s.max_latency_us = counters
                .iter()
                .map(|c| c.max_latency_us.swap(0, Ordering::Relaxed))
                .max()
                .unwrap_or(0);
            on_progress(&Progress {
                label: &plan.label,
                warming_up,
                elapsed: (now - start).as_secs_f64(),
                total,
                qps: s.statements as f64,
                errors: cur.errors,
            });
            if s.events + s.errors + s.retries > 0 || now < end {
                samples.push(s);
            }
            prev = cur;
        } else {
            on_progress(&Progress {
                label: &plan.label,
                warming_up,
                elapsed: (now - start).as_secs_f64(),
                total,
                qps: 0.0,
                errors: 0,
            });
        }
        if now >= end || cancel.load(Ordering::Relaxed) {
            return samples;
        }
        next += Duration::from_secs(1);
        // Align the first measured second with the end of the warm-up.
        if next < measure_from + Duration::from_secs(1) && next > measure_from {
            next = measure_from + Duration::from_secs(1);
        }
    }
}

fn read_counters(counters: &[Counters]) -> SecondSample {
    let mut s = SecondSample::default();
    for c in counters {
        s.events += c.events.load(Ordering::Relaxed);
        s.statements += c.statements.load(Ordering::Relaxed);
        s.rows += c.rows.load(Ordering::Relaxed);
        s.errors += c.errors.load(Ordering::Relaxed);
        s.retries += c.retries.load(Ordering::Relaxed);
    }
    s
}

fn delta(cur: &SecondSample, prev: &SecondSample) -> SecondSample {
    SecondSample {
        sec: 0,
        events: cur.events - prev.events,
        statements: cur.statements - prev.statements,
        rows: cur.rows - prev.rows,
        errors: cur.errors - prev.errors,
        retries: cur.retries - prev.retries,
        max_latency_us: 0,
    }
}

/// Merges the clients' results into the step result.
#[allow(clippy::too_many_arguments)]
fn assemble(
    plan: &StepPlan,
    threads: u32,
    ends: Vec<ClientEnd>,
    per_second: Vec<SecondSample>,
    counted: &SecondSample,
    measure_from: Instant,
    stopped: Instant,
    cancel: &AtomicBool,
) -> StepResult {
    let mut histogram = result::new_histogram();
    let mut clients = Vec::with_capacity(ends.len());
    let mut error_samples: Vec<String> = Vec::new();
    let mut cpu = 0.0;
    let mut lost = 0;
    for e in ends {
        let _ = histogram.add(&e.histogram);
        cpu += e.cpu_secs;
        lost += usize::from(e.connection_lost);
        for s in e.error_samples {
            if error_samples.len() < MAX_ERROR_SAMPLES && !error_samples.contains(&s) {
                error_samples.push(s);
            }
        }
        clients.push(e.result);
    }
    let totals = clients.iter().fold(SecondSample::default(), |mut t, c| {
        t.events += c.events;
        t.statements += c.statements;
        t.errors += c.errors;
        t
    });
    let (rows, retries) = (counted.rows, counted.retries);
    let interrupted = cancel.load(Ordering::Relaxed);
    let secs = if interrupted {
        stopped
            .saturating_duration_since(measure_from)
            .as_secs_f64()
    } else {
        plan.duration.as_secs_f64()
    };
    let (status, failure) = if lost == clients.len() && lost > 0 {
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
    } else if totals.errors > 0 {
        (StepStatus::Errors, None)
    } else {
        (StepStatus::Ok, None)
    };
    StepResult {
        status,
        failure,
        secs,
        threads,
        events: totals.events,
        statements: totals.statements,
        rows,
        errors: totals.errors,
        retries,
        error_samples,
        histogram,
        per_second,
        clients,
        client_cpu_secs: cpu,
    }
}

/// CPU seconds (user + system) the calling thread has used.
pub fn thread_cpu_secs() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
