//! The once-a-second look at every thread's counters while a step runs:
//! per-thread deltas for each second of the measured interval, and the
//! progress callback.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::Progress;
use super::drive::Counters;
use crate::record::Counts;

/// One thread's counters for one second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ThreadSecond {
    pub counts: Counts,
    pub max_latency_us: u64,
    pub max_intended_us: u64,
    pub max_behind_us: u64,
}

impl ThreadSecond {
    pub fn is_empty(&self) -> bool {
        self.counts.events + self.counts.errors + self.counts.retries == 0
    }
}

/// When the monitor stops and how it reports progress.
pub(crate) struct Watch<'a> {
    pub label: &'a str,
    pub start: Instant,
    pub measure_from: Instant,
    /// A duration-bound step ends here.
    pub end: Option<Instant>,
    /// Fixed work per thread (for the progress fraction of fixed-work steps).
    pub quotas: &'a [Option<u64>],
    pub cancel: &'a AtomicBool,
    pub abort: Option<&'a AtomicBool>,
}

/// The running totals of one thread.
fn read(c: &Counters) -> Counts {
    Counts {
        events: c.events.load(Ordering::Relaxed),
        statements: c.statements.load(Ordering::Relaxed),
        rows: c.rows.load(Ordering::Relaxed),
        errors: c.errors.load(Ordering::Relaxed),
        retries: c.retries.load(Ordering::Relaxed),
    }
}

/// Samples the counters once a second until the step ends (its deadline,
/// every thread ended, Ctrl-C or an abort) and returns, for each second of
/// the measured interval, one [`ThreadSecond`] per thread.
pub(crate) fn monitor(
    w: &Watch<'_>,
    counters: &[Counters],
    on_progress: &mut dyn FnMut(&Progress<'_>),
) -> Vec<Vec<ThreadSecond>> {
    let mut seconds = Vec::new();
    let mut prev: Vec<Counts> = vec![Counts::default(); counters.len()];
    let mut next = next_tick(w.start, w.measure_from);
    let all_ended = || counters.iter().all(|c| c.ended.load(Ordering::Acquire));
    let stopping =
        || w.cancel.load(Ordering::Relaxed) || w.abort.is_some_and(|a| a.load(Ordering::Relaxed));
    loop {
        let now = Instant::now();
        let wake = w.end.map_or(next, |e| next.min(e));
        if wake > now && !all_ended() {
            // Sleep in short slices so Ctrl-C and the end are noticed quickly.
            std::thread::sleep((wake - now).min(Duration::from_millis(100)));
            if !stopping() {
                continue;
            }
        }
        let now = Instant::now();
        let finished = w.end.is_some_and(|e| now >= e) || all_ended() || stopping();
        // The tick scheduled at the end of the warm-up closes the warm-up,
        // however late the sleep returns; classifying it by `now` made the
        // first measured second a near-empty sliver.
        let scheduled = w.end.map_or(next, |e| next.min(e));
        let warming_up = scheduled <= w.measure_from && !finished;
        let mut statements = 0;
        let mut errors = 0;
        if !warming_up {
            let mut row = Vec::with_capacity(counters.len());
            for (c, p) in counters.iter().zip(prev.iter_mut()) {
                let t = read(c);
                row.push(ThreadSecond {
                    counts: t.since(p),
                    max_latency_us: c.max_latency_us.swap(0, Ordering::Relaxed),
                    max_intended_us: c.max_intended_us.swap(0, Ordering::Relaxed),
                    max_behind_us: c.max_behind_us.swap(0, Ordering::Relaxed),
                });
                statements += t.statements - p.statements;
                errors += t.errors;
                *p = t;
            }
            // The last, partial second is kept only if something happened.
            if !finished || row.iter().any(|s| !s.is_empty()) {
                seconds.push(row);
            }
        }
        let elapsed = (now - w.start).as_secs_f64();
        on_progress(&Progress {
            label: w.label,
            warming_up,
            elapsed,
            total: total_estimate(w, counters, elapsed),
            qps: if warming_up { 0.0 } else { statements as f64 },
            errors,
        });
        if finished {
            return seconds;
        }
        next = next_tick(next, w.measure_from);
    }
}

/// The tick after the one at `prev`: a second later, except that a
/// warm-up ending within that second gets a tick of its own at its end,
/// so the warm-up is closed as warm-up and the measured seconds start
/// with the measured interval (a slice's short warm-up, or a warm-up of
/// 1.5 s, used to fall into the first measured second, and with it into
/// the cost per query the samplers divide).
fn next_tick(prev: Instant, measure_from: Instant) -> Instant {
    let next = prev + Duration::from_secs(1);
    if prev < measure_from && next > measure_from {
        measure_from
    } else {
        next
    }
}

/// Expected total seconds: the deadline, or for fixed work the elapsed time
/// scaled by the fraction of the quotas done.
fn total_estimate(w: &Watch<'_>, counters: &[Counters], elapsed: f64) -> f64 {
    if let Some(e) = w.end {
        return (e - w.start).as_secs_f64();
    }
    let (mut done, mut want) = (0u64, 0u64);
    for (c, q) in counters.iter().zip(w.quotas) {
        if let Some(q) = q {
            done += c.events.load(Ordering::Relaxed).min(*q);
            want += q;
        }
    }
    if want == 0 || done == 0 {
        return 0.0;
    }
    elapsed * want as f64 / done as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tick times, in seconds after `start`, up to `until`.
    fn ticks(warmup: f64, until: f64) -> Vec<f64> {
        let start = Instant::now();
        let measure_from = start + Duration::from_secs_f64(warmup);
        let mut at = next_tick(start, measure_from);
        let mut out = Vec::new();
        while (at - start).as_secs_f64() <= until + 1e-9 {
            out.push(((at - start).as_secs_f64() * 1000.0).round() / 1000.0);
            at = next_tick(at, measure_from);
        }
        out
    }

    #[test]
    fn the_warm_up_ends_on_a_tick_of_its_own() {
        // A slice: 0.25 s of warm-up, then whole measured seconds.
        assert_eq!(ticks(0.25, 3.0), [0.25, 1.25, 2.25]);
        assert_eq!(ticks(1.5, 4.0), [1.0, 1.5, 2.5, 3.5]);
        // Whole seconds of warm-up, or none: one tick a second.
        assert_eq!(ticks(1.0, 3.0), [1.0, 2.0, 3.0]);
        assert_eq!(ticks(0.0, 2.0), [1.0, 2.0]);
    }
}
