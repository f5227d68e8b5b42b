//! Connections ramp up instead of storming: at most a few client threads
//! connect (and prepare) at once, so a step of 1024 clients does not hit
//! the server with 1024 simultaneous connection attempts (PostgreSQL forks
//! a backend per connection; a burst overflows the listen backlog and the
//! postmaster). The rest wait their turn before the start barrier, so the
//! ramp costs set-up time, never measured time.

use std::sync::{Condvar, Mutex};

/// A counting gate: [`ConnectRamp::admit`] lets `limit` holders in at once.
pub(crate) struct ConnectRamp {
    inside: Mutex<usize>,
    freed: Condvar,
    limit: usize,
}

/// One admitted connect; leaving lets the next thread in.
pub(crate) struct Admitted<'a>(&'a ConnectRamp);

impl ConnectRamp {
    /// A ramp of `limit` concurrent connects (at least 1).
    pub(crate) fn new(limit: usize) -> ConnectRamp {
        ConnectRamp {
            inside: Mutex::new(0),
            freed: Condvar::new(),
            limit: limit.max(1),
        }
    }

    /// The ramp for this host: twice the online CPUs, 4 to 32.
    pub(crate) fn for_host() -> ConnectRamp {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        ConnectRamp::new((cpus * 2).clamp(4, 32))
    }

    /// Waits until fewer than `limit` threads are connecting.
    pub(crate) fn admit(&self) -> Admitted<'_> {
        let mut n = self.inside.lock().unwrap_or_else(|e| e.into_inner());
        while *n >= self.limit {
            n = self.freed.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n += 1;
        Admitted(self)
    }
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        let mut n = self.0.inside.lock().unwrap_or_else(|e| e.into_inner());
        *n -= 1;
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn no_more_than_the_limit_connect_at_once() {
        let ramp = ConnectRamp::new(3);
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..24 {
                s.spawn(|| {
                    let _in = ramp.admit();
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    now.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        let most = most.load(Ordering::SeqCst);
        assert!((1..=3).contains(&most), "{most} at once");
    }
}
