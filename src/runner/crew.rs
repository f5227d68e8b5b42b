//! What every step engine (a thread per connection, event loops, role
//! threads) builds the same way around its threads: one set of
//! [`Counters`] and one thread handle per thread, the start gate they all
//! wait at, and, once the step runs, the once-a-second watch and the join.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex, OnceLock};
use std::thread::{ScopedJoinHandle, Thread};
use std::time::Instant;

use super::Progress;
use super::drive::{Counters, Peers, ThreadEnd};
use super::monitor::{ThreadSecond, Watch, monitor};
use crate::db::{DbError, ErrorKind};

/// The threads of one step, as their coordinator and their peers see them.
pub(crate) struct Crew {
    counters: Vec<Counters>,
    threads: Vec<OnceLock<Thread>>,
    gate: StartGate,
}

impl Crew {
    /// `n` threads whose start is taken once every one is ready
    /// (`start_after_ready`, see [`StartGate`]) or when the coordinator
    /// arrives at the gate.
    pub(crate) fn new(n: usize, start_after_ready: bool) -> Crew {
        Crew {
            counters: (0..n).map(|_| Counters::default()).collect(),
            threads: (0..n).map(|_| OnceLock::new()).collect(),
            gate: StartGate::new(n, start_after_ready),
        }
    }

    /// Every thread's progress, for the threads' loops and gates.
    pub(crate) fn peers(&self) -> Peers<'_> {
        Peers {
            counters: &self.counters,
            threads: &self.threads,
        }
    }

    /// Thread `i`'s counters.
    pub(crate) fn counters(&self, i: usize) -> &Counters {
        &self.counters[i]
    }

    /// Called by thread `i` once its set-up is done: makes it wakeable by
    /// its peers and waits at the gate; returns its connection and work and
    /// the step's start, or `None` if some thread failed.
    pub(crate) fn ready<C, W>(
        &self,
        i: usize,
        setup: Result<(C, W), DbError>,
    ) -> Option<(C, W, Instant)> {
        let _ = self.threads[i].set(std::thread::current());
        self.gate.ready(setup)
    }

    /// Called by the coordinator: once every thread is ready, waits for
    /// `hold` (a shard's published start; an error fails the start as a
    /// thread's would), sets the start and releases the threads. If a
    /// thread could not start, waits for every thread in `joins` to end
    /// and fails with its error.
    pub(crate) fn open<T>(
        &self,
        joins: &mut Vec<ScopedJoinHandle<'_, T>>,
        hold: &dyn Fn() -> Result<(), DbError>,
    ) -> Result<Instant, DbError> {
        self.gate.open(hold).inspect_err(|_| {
            for j in joins.drain(..) {
                let _ = j.join();
            }
        })
    }

    /// Watches the running threads once a second until `watch` says the
    /// step is over, then joins them: each second's counters per thread,
    /// and what each thread measured.
    pub(crate) fn watch_and_join(
        &self,
        watch: &Watch<'_>,
        joins: Vec<ScopedJoinHandle<'_, Option<ThreadEnd>>>,
        on_progress: &mut dyn FnMut(&Progress<'_>),
    ) -> (Vec<Vec<ThreadSecond>>, Vec<ThreadEnd>) {
        let seconds = monitor(watch, &self.counters, on_progress);
        let ends = joins
            .into_iter()
            .map(|j| j.join().expect("a step's thread panicked"))
            .collect::<Option<Vec<_>>>()
            .expect("every thread that started returns its measurements");
        (seconds, ends)
    }

    /// Retries over all threads.
    pub(crate) fn retries(&self) -> u64 {
        self.counters
            .iter()
            .map(|c| c.retries.load(Ordering::Relaxed))
            .sum()
    }
}

/// The start a step without a hold takes: at once.
pub(crate) fn no_hold() -> Result<(), DbError> {
    Ok(())
}

/// The start barrier of a step: every thread connects and prepares, then
/// all start together; if any failed, none runs and the step reports why.
/// A sysbench step takes its start once the last thread is ready
/// (connecting a thousand clients through the ramp takes a while), so it
/// loses no measured time to its set-up; a multi-role step keeps the start
/// it took when it began waiting (its schedule starts then).
struct StartGate {
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
    fn new(threads: usize, start_after_ready: bool) -> StartGate {
        StartGate {
            start_after_ready,
            barrier: Barrier::new(threads + 1),
            go: Barrier::new(threads + 1),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
            start: Mutex::new(None),
        }
    }

    /// A thread's side: see [`Crew::ready`].
    fn ready<C, W>(&self, setup: Result<(C, W), DbError>) -> Option<(C, W, Instant)> {
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

    /// The coordinator's side: see [`Crew::open`].
    fn open(&self, hold: &dyn Fn() -> Result<(), DbError>) -> Result<Instant, DbError> {
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
}
