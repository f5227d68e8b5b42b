//! Where the managed servers and tidemark's clients run when neither
//! `--server-cpus` nor `--client-cpus` says: with one client per step, on
//! one CPU together.
//!
//! A one-client step is a ping-pong: the client sends a query and sleeps,
//! the backend wakes, answers and sleeps. On separate CPUs every query
//! wakes an idle CPU twice, and on a virtual machine an idle vCPU is halted
//! by its host, so the wake-ups, not the server's work, set the rate and
//! its noise. Measured on this project's 2-vCPU VM (2026-11-28, three
//! servers of one PostgreSQL 15.18 build, six read tests, 10 × 1 s slices
//! each, the same command three ways): unplaced, point-query ran at ~10,000
//! queries a second and two servers of one build differed by 3.8 % (root
//! mean square of the tests' log ratios); servers on CPU 1 and the client on
//! CPU 0, 3.3 %; servers and client together on one CPU, ~80,000 a second
//! and 1.9 %. So the default shares one CPU when every step has one client
//! on servers tidemark starts: the least busy CPU at the start
//! (`util::cpus::least_busy`; the last of equals, as CPU 0 takes most
//! interrupts), so that two runs (or tests) started together spread.
//! Several clients would be squeezed onto one CPU, and so would the load
//! of a large table set (the loader's connections run on the server's
//! CPUs), so then nothing is placed: the default holds up to
//! [`MAX_SHARED_ROWS`] rows (the quick profile's 100,000 and more).
//! `--server-cpus all --client-cpus all` turns it off.

use super::{Plan, Suite};
use crate::record::SuiteName;

impl Plan {
    /// This plan with the default placement when neither `--server-cpus`
    /// nor `--client-cpus` was given and [`share_one_cpu`] holds: servers
    /// and client on the least busy CPU (`util::cpus::least_busy`). `None`
    /// when nothing changes. Chosen when the run starts, not when the plan
    /// is built (it samples the CPUs for 100 ms).
    pub fn placed(&self) -> Option<Plan> {
        if self.server_cpus.is_some() || self.client_cpus.is_some() {
            return None;
        }
        let usable = crate::util::cpus::usable_cpus();
        let facts = Facts {
            sysbench_only: self.suite == Suite::One(SuiteName::Sysbench),
            threads: self.sysbench.threads.counts(),
            rows: u64::from(self.sysbench.tables) * self.sysbench.table_size,
            all_managed: self.targets.iter().all(|t| t.spec.starts_server()),
            sharded: self.client_hosts.is_some(),
            counted: self.instructions.is_some(),
            usable: &usable,
        };
        if !share_one_cpu(&facts) {
            return None;
        }
        let cpu = crate::util::cpus::least_busy(&usable)?;
        let mut placed = self.clone();
        placed.server_cpus = Some(vec![cpu]);
        placed.client_cpus = Some(vec![cpu]);
        Some(placed)
    }

    /// The line a run says when the default placed it (after validation,
    /// beside the sizing, so that an error stays one line); `None` when the
    /// CPUs were given or nothing was placed.
    pub fn placement_line(&self) -> Option<String> {
        let given = self.input.server_cpus.is_some() || self.input.client_cpus.is_some();
        let cpus = self.server_cpus.as_ref().filter(|_| !given)?;
        Some(format!(
            "placement: the servers and the client share CPU {} (one client per step: half the \
             noise where measured; --server-cpus all --client-cpus all to leave them unplaced)",
            crate::util::cpus::format_list(cpus)
        ))
    }
}

/// The most rows (tables × rows per table) a run may load for the default
/// to share one CPU: loading them there takes seconds.
pub const MAX_SHARED_ROWS: u64 = 2_000_000;

/// What decides the default placement.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    /// Whether the run is the sysbench suite alone (the Insert Benchmark
    /// and workload files run several clients at once).
    pub sysbench_only: bool,
    /// The client counts the steps run (`--threads`).
    pub threads: &'a [u32],
    /// Rows the run loads (tables × rows per table).
    pub rows: u64,
    /// Whether every target is a server tidemark starts.
    pub all_managed: bool,
    /// Whether the clients are split over `--client-hosts` shards.
    pub sharded: bool,
    /// Whether the servers run under Valgrind (`--instructions`), where
    /// time is not measured.
    pub counted: bool,
    /// The CPUs this process may use.
    pub usable: &'a [usize],
}

/// Whether the servers and the client share one CPU by default (`false`:
/// the run is left unplaced).
pub fn share_one_cpu(f: &Facts<'_>) -> bool {
    let one_client = !f.threads.is_empty() && f.threads.iter().all(|&n| n == 1);
    f.sysbench_only
        && one_client
        && f.rows <= MAX_SHARED_ROWS
        && f.all_managed
        && !f.sharded
        && !f.counted
        && f.usable.len() >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_client_on_managed_servers_shares_a_cpu_and_nothing_else_is_placed() {
        let usable = [0, 1, 2, 3];
        let base = Facts {
            sysbench_only: true,
            threads: &[1],
            rows: 100_000,
            all_managed: true,
            sharded: false,
            counted: false,
            usable: &usable,
        };
        assert!(share_one_cpu(&base));
        let cases: [Facts<'_>; 8] = [
            Facts {
                rows: 50_000_000,
                ..base
            },
            Facts {
                threads: &[1, 4],
                ..base
            },
            Facts {
                threads: &[8],
                ..base
            },
            Facts {
                sysbench_only: false,
                ..base
            },
            Facts {
                all_managed: false,
                ..base
            },
            Facts {
                sharded: true,
                ..base
            },
            Facts {
                counted: true,
                ..base
            },
            Facts {
                usable: &[5],
                ..base
            },
        ];
        for f in cases {
            assert!(!share_one_cpu(&f), "{f:?}");
        }
    }
}
