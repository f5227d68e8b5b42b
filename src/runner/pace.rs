//! Open-loop pacing: a fixed schedule of intended start times.
//!
//! A rate-limited writer must not let a slow server slow the schedule down,
//! or a stall would hide itself: the writer would simply send less, and its
//! latency would look fine (coordinated omission). So event `n` is meant to
//! start at `start + n × interval` whatever happened before; a thread that is
//! ahead sleeps until then, a thread that is behind starts at once (it
//! catches up), and the distance between the intended and the actual start
//! is what the runner records as the shortfall.

use std::time::{Duration, Instant};

/// The intended start times of a paced thread's events.
#[derive(Clone, Debug)]
pub struct Pacer {
    start: Instant,
    interval_ns: u64,
    next: u64,
}

impl Pacer {
    /// A schedule of `events_per_sec` events a second from `start`; `None`
    /// when the rate is not a positive finite number.
    pub fn new(start: Instant, events_per_sec: f64) -> Option<Pacer> {
        if !(events_per_sec > 0.0 && events_per_sec.is_finite()) {
            return None;
        }
        let interval_ns = (1e9 / events_per_sec).round().max(1.0) as u64;
        Some(Pacer {
            start,
            interval_ns,
            next: 0,
        })
    }

    /// Time between two intended starts.
    pub fn interval(&self) -> Duration {
        Duration::from_nanos(self.interval_ns)
    }

    /// The intended start of event `n` (0-based).
    pub fn slot(&self, n: u64) -> Instant {
        self.start + Duration::from_nanos(self.interval_ns.saturating_mul(n))
    }

    /// Takes the next slot and returns its intended start. Never sleeps: the
    /// caller waits until then if it is early, and goes at once if late.
    pub fn take(&mut self) -> Instant {
        let at = self.slot(self.next);
        self.next += 1;
        at
    }

    /// The end of the last slot taken (the start of the next one): a paced
    /// thread that has done its work waits until then, so that `n` events
    /// take `n` intervals, as a rate of `n / (n × interval)` requires.
    pub fn schedule_end(&self) -> Instant {
        self.slot(self.next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_schedule_whatever_the_caller_does() {
        let t0 = Instant::now();
        let mut p = Pacer::new(t0, 20.0).unwrap();
        assert_eq!(p.interval(), Duration::from_millis(50));
        assert_eq!(p.take(), t0);
        assert_eq!(p.take(), t0 + Duration::from_millis(50));
        // A late caller gets the slot it was due, not "now": it catches up.
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(p.take(), t0 + Duration::from_millis(100));
        assert_eq!(p.schedule_end(), t0 + Duration::from_millis(150));
        assert_eq!(p.slot(2_000_000), t0 + Duration::from_secs(100_000));
    }

    #[test]
    fn rates_that_are_not_positive_have_no_schedule() {
        let t0 = Instant::now();
        assert!(Pacer::new(t0, 0.0).is_none());
        assert!(Pacer::new(t0, -1.0).is_none());
        assert!(Pacer::new(t0, f64::NAN).is_none());
        assert!(Pacer::new(t0, f64::INFINITY).is_none());
        let p = Pacer::new(t0, 3.0).unwrap();
        assert_eq!(p.interval(), Duration::from_nanos(333_333_333));
    }
}
