//! Many connections per OS thread: one event loop per core drives the
//! clients of a step whose every event is one prepared statement (the
//! sysbench point selects, IN lists and ranges), as pgbench `-j` and wrk
//! do. With one thread per connection, 1024 clients cost 1024 threads, a
//! context switch per query and the scheduler's time; here each loop
//! waits on all its sockets with one `epoll_wait`, sends the next query of
//! whichever connection answered, and times each query from its send to
//! its last message.
//!
//! epoll is used through `libc` directly (create, ctl, wait on a fixed
//! array of events): three calls on Linux, the only platform tidemark
//! runs on, need no event-loop crate. Connections stay blocking sockets:
//! a loop reads only after epoll says a socket is readable, and then once,
//! so the read cannot block; queries are a few dozen bytes, so the send
//! never waits for buffer space.
//!
//! The per-query path allocates nothing: the statement's parameters come
//! from the client's reused buffers, the connection's write and read
//! buffers are reused, the histogram is the loop's own, the counters are
//! the loop's atomics (the once-a-second monitor reads them).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::crew::Crew;
use super::drive::{Counters, ThreadEnd};
use super::result::{ClientResult, keep_error_sample, new_histogram};
use super::{Coordinated, StepPlan, StepResult, StepWork, thread_cpu_secs};
use crate::db::{Conn, Connector, DbError, ErrorKind, MuxConn, Param, StmtId};
use crate::record::Progress;

/// A client whose every event is exactly one prepared statement.
pub trait MuxWork: Send {
    /// Prepares its statements on the client's connection, before the
    /// barrier.
    fn prepare(&mut self, conn: &mut dyn Conn) -> Result<(), DbError>;
    /// The next event's statement and parameters (no allocation).
    fn next_statement(&mut self) -> (StmtId, &[Param<'static>]);
}

/// The event loops for `clients` connections on this host: one per CPU,
/// never more than the clients.
pub fn loops_for(clients: u32) -> u32 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    cpus.clamp(1, clients.max(1))
}

/// Longest wait in `epoll_wait`, so Ctrl-C and the deadline are noticed.
const WAIT_SLICE_MS: i32 = 100;

/// One client on a loop.
struct Slot {
    conn: Box<dyn MuxConn>,
    work: Box<dyn MuxWork>,
    /// When the statement in flight was sent.
    sent: Instant,
    busy: bool,
    lost: bool,
    result: ClientResult,
}

/// An epoll instance, closed on drop.
struct Epoll(RawFd);

impl Epoll {
    fn new() -> Result<Epoll, DbError> {
        // SAFETY: plain syscall; the fd is owned by the returned value.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(DbError::io(std::io::Error::last_os_error()));
        }
        Ok(Epoll(fd))
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64) -> Result<(), DbError> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: `ev` is a valid event; the kernel copies it.
        if unsafe { libc::epoll_ctl(self.0, op, fd, &mut ev) } < 0 {
            return Err(DbError::io(std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Waits up to `ms` for readable sockets; fills `events`, returns how
    /// many.
    fn wait(&self, events: &mut [libc::epoll_event], ms: i32) -> usize {
        // SAFETY: `events` is a valid writable array of its length.
        let n = unsafe { libc::epoll_wait(self.0, events.as_mut_ptr(), events.len() as i32, ms) };
        n.max(0) as usize
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.0) };
    }
}

/// Runs one step with `plan.threads` clients multiplexed on `loops` event
/// loops (see the module doc), started when `hold` returns. Fails when a
/// client cannot connect or prepare, `connector` has no multiplexed
/// connection or `work` no multiplexed client.
pub(super) fn run_step_mux(
    plan: &StepPlan,
    connector: &dyn Connector,
    work: &dyn StepWork,
    hold: &dyn Fn() -> Result<(), DbError>,
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress<'_>),
    loops: u32,
) -> Result<StepResult, DbError> {
    let clients = plan.threads.max(1);
    let loops = loops.clamp(1, clients);
    let crew = Crew::new(loops as usize, true);
    std::thread::scope(|scope| {
        let mut joins = Vec::with_capacity(loops as usize);
        for l in 0..loops {
            let crew = &crew;
            let join = std::thread::Builder::new()
                .name(format!("client-loop-{l}"))
                .spawn_scoped(scope, move || {
                    let setup = (l..clients)
                        .step_by(loops as usize)
                        .map(|client| open_slot(connector, work, client))
                        .collect::<Result<Vec<Slot>, DbError>>()
                        .map(|s| (s, ()));
                    let (mut slots, (), start) = crew.ready(l as usize, setup)?;
                    let rules = Rules {
                        counters: crew.counters(l as usize),
                        measure_from: start + plan.warmup,
                        deadline: start + plan.warmup + plan.duration,
                        cancel,
                    };
                    Some(event_loop(&rules, &mut slots))
                })
                .expect("spawning a client loop thread");
            joins.push(join);
        }
        let run = Coordinated {
            plan,
            clients,
            crew: &crew,
            cancel,
            quota: None,
        };
        run.finish(crew.open(&mut joins, hold)?, joins, on_progress)
    })
}

fn open_slot(connector: &dyn Connector, work: &dyn StepWork, client: u32) -> Result<Slot, DbError> {
    let mut work = work.mux_client(client).ok_or_else(|| {
        DbError::new(
            ErrorKind::Other,
            "",
            "this step's clients cannot be multiplexed (an event of more than one statement)",
        )
    })?;
    let mut conn = connector.connect_mux().unwrap_or_else(|| {
        Err(DbError::new(
            ErrorKind::Other,
            "",
            "this client cannot multiplex connections",
        ))
    })?;
    work.prepare(conn.as_conn())?;
    Ok(Slot {
        conn,
        work,
        sent: Instant::now(),
        busy: false,
        lost: false,
        result: ClientResult {
            client,
            ..Default::default()
        },
    })
}

/// When one loop stops.
struct Rules<'a> {
    counters: &'a Counters,
    measure_from: Instant,
    deadline: Instant,
    cancel: &'a AtomicBool,
}

/// What one loop counts besides its clients' results.
#[derive(Default)]
struct Tally {
    rows: u64,
    retries: u64,
    samples: Vec<String>,
    last_end: Option<Instant>,
    /// Clients whose connection is gone.
    lost: usize,
}

/// Sends slot `s`'s next statement, stamping its send time.
#[inline]
fn send_next(s: &mut Slot) -> Result<(), DbError> {
    let (stmt, params) = s.work.next_statement();
    s.sent = Instant::now();
    s.busy = true;
    s.conn.send_execute(stmt, params)
}

/// Counts a failed statement of slot `s`; true when its connection is gone.
fn failed(s: &mut Slot, e: DbError, c: &Counters, measured: bool, tally: &mut Tally) -> bool {
    let lost = e.kind == ErrorKind::Connection;
    if measured || lost {
        if e.kind == ErrorKind::Retryable || e.kind == ErrorKind::Busy {
            c.retries.fetch_add(1, Ordering::Relaxed);
            tally.retries += 1;
        } else {
            c.errors.fetch_add(1, Ordering::Relaxed);
            s.result.errors += 1;
            keep_error_sample(&mut tally.samples, &e.to_string());
        }
    }
    lost
}

fn event_loop(rules: &Rules<'_>, slots: &mut [Slot]) -> ThreadEnd {
    let c = rules.counters;
    let mut histogram = new_histogram();
    let mut tally = Tally::default();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; slots.len().min(1024)];
    let ep = Epoll::new();
    let mut measuring = false;
    let mut cpu_start = 0.0;
    if let Ok(ep) = &ep {
        for (i, s) in slots.iter_mut().enumerate() {
            let fd = s.conn.raw_fd();
            let sent = ep
                .ctl(libc::EPOLL_CTL_ADD, fd, i as u64)
                .and_then(|()| send_next(s));
            if let Err(e) = sent {
                s.lost = failed(s, e, c, false, &mut tally);
                tally.lost += usize::from(s.lost);
                s.busy = false;
            }
        }
    }
    while let Ok(ep) = &ep {
        let now = Instant::now();
        if rules.cancel.load(Ordering::Relaxed) || now >= rules.deadline {
            break;
        }
        if tally.lost == slots.len() {
            break;
        }
        if !measuring && now >= rules.measure_from {
            measuring = true;
            cpu_start = thread_cpu_secs();
        }
        let left = (rules.deadline - now).as_millis() as i32 + 1;
        let n = ep.wait(&mut events, left.min(WAIT_SLICE_MS));
        for ev in &events[..n] {
            let s = &mut slots[ev.u64 as usize];
            if !s.busy {
                continue;
            }
            let outcome = s.conn.on_readable();
            let t1 = Instant::now();
            let measured = s.sent >= rules.measure_from && t1 <= rules.deadline;
            match outcome {
                Ok(None) => continue,
                Ok(Some(rows)) => {
                    s.busy = false;
                    if measured {
                        let us = (t1 - s.sent).as_micros().min(u128::from(u64::MAX)) as u64;
                        let _ = histogram.record(us.max(1));
                        c.max_latency_us.fetch_max(us, Ordering::Relaxed);
                        c.statements.fetch_add(1, Ordering::Relaxed);
                        c.rows.fetch_add(rows, Ordering::Relaxed);
                        c.events.fetch_add(1, Ordering::Release);
                        s.result.events += 1;
                        s.result.statements += 1;
                        tally.rows += rows;
                        tally.last_end = Some(t1);
                    }
                }
                Err(e) => {
                    s.busy = false;
                    if failed(s, e, c, measured, &mut tally) {
                        s.lost = true;
                        tally.lost += 1;
                        let _ = ep.ctl(libc::EPOLL_CTL_DEL, s.conn.raw_fd(), 0);
                        continue;
                    }
                }
            }
            if t1 < rules.deadline
                && !rules.cancel.load(Ordering::Relaxed)
                && let Err(e) = send_next(s)
            {
                s.busy = false;
                if failed(s, e, c, measured, &mut tally) {
                    s.lost = true;
                    tally.lost += 1;
                    let _ = ep.ctl(libc::EPOLL_CTL_DEL, s.conn.raw_fd(), 0);
                }
            }
        }
    }
    let cpu_secs = if measuring {
        thread_cpu_secs() - cpu_start
    } else {
        0.0
    };
    let last_end = tally.last_end.unwrap_or(rules.measure_from);
    let finish_secs = last_end
        .saturating_duration_since(rules.measure_from)
        .as_secs_f64();
    let mut results: Vec<ClientResult> = slots
        .iter()
        .map(|s| ClientResult {
            finish_secs,
            ..s.result.clone()
        })
        .collect();
    if let Err(e) = &ep {
        tally
            .samples
            .push(format!("the event loop could not start: {e}"));
    }
    let connection_lost = slots.iter().all(|s| s.lost) || ep.is_err();
    c.ended.store(true, Ordering::Release);
    let first = results.remove(0);
    ThreadEnd {
        histogram,
        intended: None,
        result: first,
        more_clients: results,
        rows: tally.rows,
        retries: tally.retries,
        cpu_secs,
        error_samples: tally.samples,
        connection_lost,
        fatal: None,
        ended_at: last_end,
        max_behind_us: 0,
        late_events: 0,
    }
}
