//! Which process is doing something, in a form that tells, later and from
//! another process, whether that process is still there: host name, pid,
//! and the process's start (`BOOT_ID:TICKS`: the kernel's boot id and the
//! start time in clock ticks since boot, from `/proc/PID/stat`), so a pid
//! reused by another process, or after a reboot, is not mistaken for it.

/// A process as recorded: where it ran, its pid and its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessIdentity {
    pub host: String,
    pub pid: u32,
    /// `BOOT_ID:TICKS`; empty when `/proc` could not tell.
    pub start: String,
}

/// Whether a recorded process still runs, as far as this host can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// The same process (host, pid and start match).
    Alive,
    /// On this host, and no process with that pid and start exists.
    Gone,
    /// Recorded on another host (or without an identity): cannot tell.
    Unknown,
}

impl ProcessIdentity {
    /// This process.
    pub fn current() -> ProcessIdentity {
        let pid = std::process::id();
        ProcessIdentity {
            host: this_host(),
            pid,
            start: process_start(pid).unwrap_or_default(),
        }
    }

    /// Whether the process is still there.
    pub fn liveness(&self) -> Liveness {
        if self.host != this_host() || self.start.is_empty() {
            return Liveness::Unknown;
        }
        match process_start(self.pid) {
            Some(start) if start == self.start => Liveness::Alive,
            _ => Liveness::Gone,
        }
    }
}

/// This machine's host name (empty if unknown).
pub fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// `BOOT_ID:TICKS` of process `pid`, `None` if it does not exist.
fn process_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(format!("{}:{}", boot.trim(), start_ticks(&stat)?))
}

/// Field 22 (`starttime`) of a `/proc/PID/stat` line; the command name
/// (field 2) may hold spaces and parentheses, so fields are counted after
/// its last `)`.
pub fn start_ticks(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_changed_start_is_gone() {
        let me = ProcessIdentity::current();
        assert_eq!(me.liveness(), Liveness::Alive);
        let reused = ProcessIdentity {
            start: format!("{}0", me.start),
            ..me.clone()
        };
        assert_eq!(reused.liveness(), Liveness::Gone);
        let elsewhere = ProcessIdentity {
            host: format!("{}-other", me.host),
            ..me.clone()
        };
        assert_eq!(elsewhere.liveness(), Liveness::Unknown);
    }

    #[test]
    fn start_ticks_skip_odd_command_names() {
        let stat = "42 (a) b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 200";
        assert_eq!(start_ticks(stat), Some(98765));
        assert_eq!(start_ticks("garbage"), None);
    }
}
