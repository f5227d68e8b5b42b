//! A memory cgroup around a managed server, so an IO-bound run really reads
//! from storage: the kernel charges the page cache a process fills to its
//! cgroup, so with a limit a little above the buffer pool the OS cannot
//! keep the data the buffer pool does not hold, and reads go to the disk.
//!
//! The limit is on the cache, never on the server ([`Mode::Soft`], what an
//! IO-bound run uses): the server's own memory (its buffers, backends, an
//! index build's `maintenance_work_mem`) must never get it killed. On
//! cgroup v2 that is `memory.high`, which the kernel enforces by reclaiming
//! and throttling, never by the OOM killer. On v1 the limit is set with the
//! OOM killer disabled for the group (`memory.oom_control`), and a watcher
//! keeps it at the target or at what the group cannot give back right away
//! (its own memory, shared memory, dirty and writeback pages) plus a
//! margin, whichever is more: clean page cache is held to the target, while
//! the server's memory and its not-yet-written pages never make a read
//! fail or a process be killed (v1 fails a read with ENOMEM rather than
//! wait for writeback); each raise is counted.
//! [`Mode::Hard`] (`--memory-limit`) is a plain limit: a process that
//! outgrows it is killed by the kernel, and [`MemoryCgroup::oom_kills`]
//! lets the step say so.
//!
//! cgroup v2 (the unified hierarchy) and v1 (`memory/`) are both supported,
//! whichever mounts the memory controller. The group is created per server,
//! named after tidemark's pid and the server's, and removed when dropped
//! (after the server stopped: a group with processes cannot be removed).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How a memory limit is enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Limit the page cache, never kill: v2 `memory.high`; v1 the limit
    /// with the OOM killer off and raised while the server needs more.
    Soft,
    /// A hard limit: the kernel kills a process that outgrows it.
    Hard,
}

/// How far the v1 watcher raises a limit the group is stuck at.
const RAISE_STEP: u64 = 32 << 20;
/// How often the v1 watcher looks.
const WATCH_EVERY: Duration = Duration::from_millis(20);

/// A memory cgroup tidemark created; removed on drop.
#[derive(Debug)]
pub struct MemoryCgroup {
    dir: PathBuf,
    /// `v1` or `v2`, for the record.
    pub version: &'static str,
    pub limit_bytes: u64,
    pub mode: Mode,
    /// OOM kills the group had when it was made (v1 counts from creation;
    /// kept for symmetry).
    kills_at_start: u64,
    /// v1 soft mode: the watcher's stop flag, raises and highest limit.
    watcher: Option<Watcher>,
}

#[derive(Debug)]
struct Watcher {
    stop: Arc<AtomicBool>,
    raises: Arc<AtomicU64>,
    highest: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Where the memory controller is mounted: (directory, version, limit file).
fn memory_root() -> Result<(PathBuf, &'static str, &'static str), String> {
    let v1 = Path::new("/sys/fs/cgroup/memory");
    if v1.join("memory.limit_in_bytes").is_file() {
        return Ok((v1.to_path_buf(), "v1", "memory.limit_in_bytes"));
    }
    for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
        let root = Path::new(root);
        let controllers =
            std::fs::read_to_string(root.join("cgroup.subtree_control")).unwrap_or_default();
        if controllers.split_whitespace().any(|c| c == "memory") {
            return Ok((root.to_path_buf(), "v2", "memory.max"));
        }
    }
    Err(
        "no cgroup memory controller is mounted (neither /sys/fs/cgroup/memory nor a \
         cgroup v2 hierarchy with memory enabled)"
            .into(),
    )
}

/// The cgroup version a memory limit would use here (`v1`, `v2`), or why
/// none can be made.
pub fn available() -> Result<&'static str, String> {
    let (root, version, _) = memory_root()?;
    let writable = nix::unistd::access(&root, nix::unistd::AccessFlags::W_OK).is_ok();
    if writable {
        Ok(version)
    } else {
        Err(format!(
            "{} is not writable: run tidemark as root",
            root.display()
        ))
    }
}

impl MemoryCgroup {
    /// Creates a group limited to `limit_bytes` as `mode` says and moves
    /// the process `pid` and all its descendants into it (children they
    /// fork later start in it).
    pub fn around(pid: u32, limit_bytes: u64, mode: Mode) -> Result<MemoryCgroup, String> {
        let (root, version, limit_file) = memory_root()?;
        let dir = root.join(format!("tidemark-{}-{pid}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| {
            format!(
                "cannot create the memory cgroup {}: {e} (tidemark needs root for it)",
                dir.display()
            )
        })?;
        let mut group = MemoryCgroup {
            dir,
            version,
            limit_bytes,
            mode,
            kills_at_start: 0,
            watcher: None,
        };
        let write = |file: &str, value: &str| {
            std::fs::write(group.dir.join(file), value)
                .map_err(|e| format!("{}/{file}: {e}", group.dir.display()))
        };
        match (version, mode) {
            ("v2", Mode::Soft) => write("memory.high", &limit_bytes.to_string())?,
            ("v1", Mode::Soft) => {
                write(limit_file, &limit_bytes.to_string())?;
                write("memory.oom_control", "1")?;
            }
            _ => write(limit_file, &limit_bytes.to_string())?,
        }
        for p in crate::util::process_tree::process_and_descendants(pid) {
            // A descendant that exited since the listing is simply gone.
            match std::fs::write(group.dir.join("cgroup.procs"), p.to_string()) {
                Err(e) if p != pid && e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => return Err(format!("{}/cgroup.procs: {e}", group.dir.display())),
                Ok(()) => {}
            }
        }
        group.kills_at_start = group.oom_kill_count();
        if version == "v1" && mode == Mode::Soft {
            group.watcher = Some(watch_v1(group.dir.clone(), limit_bytes));
        }
        Ok(group)
    }

    /// The group's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes the group's processes use now (memory and page cache).
    pub fn usage_bytes(&self) -> Option<u64> {
        let file = if self.version == "v1" {
            "memory.usage_in_bytes"
        } else {
            "memory.current"
        };
        read_u64(&self.dir.join(file))
    }

    /// Processes of the group the kernel killed for memory since it was
    /// made.
    pub fn oom_kills(&self) -> u64 {
        self.oom_kill_count().saturating_sub(self.kills_at_start)
    }

    fn oom_kill_count(&self) -> u64 {
        let file = if self.version == "v1" {
            "memory.oom_control"
        } else {
            "memory.events"
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|t| field(&t, "oom_kill"))
            .unwrap_or(0)
    }

    /// How often the v1 watcher raised the limit so the server would not
    /// wait on it, and the highest limit it set (`(0, limit)` otherwise).
    pub fn raises(&self) -> (u64, u64) {
        match &self.watcher {
            Some(w) => (
                w.raises.load(Ordering::Relaxed),
                w.highest.load(Ordering::Relaxed),
            ),
            None => (0, self.limit_bytes),
        }
    }

    /// The one line a step or target that failed adds when the kernel
    /// killed a server process for memory: the reason, the limit, the fix.
    pub fn oom_note(&self) -> Option<String> {
        let kills = self.oom_kills();
        (kills > 0).then(|| {
            format!(
                "the kernel killed {kills} server process(es) for memory: out of memory in its memory cgroup {} limited to {} MiB ({}); give the server more (a larger --memory-limit, or none) or a smaller buffer pool",
                self.version,
                self.limit_bytes >> 20,
                self.dir.display()
            )
        })
    }

    /// One line for the run's context.
    pub fn describe(&self) -> String {
        match self.mode {
            Mode::Hard => format!(
                "memory cgroup {} limited to {} MiB (hard: page cache included; a process that outgrows it is killed)",
                self.version,
                self.limit_bytes >> 20
            ),
            Mode::Soft if self.version == "v2" => format!(
                "memory cgroup v2 with memory.high = {} MiB: the page cache is reclaimed above it, the server is never killed",
                self.limit_bytes >> 20
            ),
            Mode::Soft => format!(
                "memory cgroup v1 limited to {} MiB with the OOM killer off: the page cache is reclaimed at the limit, which is raised while the server itself needs more",
                self.limit_bytes >> 20
            ),
        }
    }
}

/// `name N` of a cgroup key-value file.
fn field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok()).flatten()
    })
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The v1 soft limit's watcher. Every [`WATCH_EVERY`] it sets the limit to
/// the target or, when more, to what the group cannot give back right away
/// (its processes' own memory, shared memory, dirty and writeback pages)
/// plus [`RAISE_STEP`]: only clean page cache is held to the target, and a
/// read or write never fails for want of memory the kernel could not
/// reclaim in time. A group that hit the limit anyway (`under_oom`: its
/// tasks wait, the OOM killer is off) gets [`RAISE_STEP`] more at once.
fn watch_v1(dir: PathBuf, target: u64) -> Watcher {
    let stop = Arc::new(AtomicBool::new(false));
    let raises = Arc::new(AtomicU64::new(0));
    let highest = Arc::new(AtomicU64::new(target));
    let (s, r, h) = (stop.clone(), raises.clone(), highest.clone());
    let thread = std::thread::Builder::new()
        .name("cgroup-watch".into())
        .spawn(move || {
            let limit_file = dir.join("memory.limit_in_bytes");
            let mut limit = target;
            while !s.load(Ordering::Relaxed) {
                let stat = std::fs::read_to_string(dir.join("memory.stat")).unwrap_or_default();
                let pinned: u64 = ["rss", "shmem", "dirty", "writeback"]
                    .iter()
                    .filter_map(|k| field(&stat, k))
                    .sum();
                let control =
                    std::fs::read_to_string(dir.join("memory.oom_control")).unwrap_or_default();
                let mut want = target.max(pinned + RAISE_STEP);
                if field(&control, "under_oom") == Some(1) {
                    want = want.max(limit + RAISE_STEP);
                }
                let differs = want.abs_diff(limit) >= RAISE_STEP / 8;
                if differs && std::fs::write(&limit_file, want.to_string()).is_ok() {
                    if want > limit {
                        r.fetch_add(1, Ordering::Relaxed);
                        h.fetch_max(want, Ordering::Relaxed);
                    }
                    limit = want;
                }
                std::thread::sleep(WATCH_EVERY);
            }
        })
        .expect("a watcher thread starts");
    Watcher {
        stop,
        raises,
        highest,
        thread: Some(thread),
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        if let Some(w) = &mut self.watcher {
            w.stop.store(true, Ordering::Relaxed);
            if let Some(t) = w.thread.take() {
                let _ = t.join();
            }
        }
        // The server's processes may take a moment to be reaped.
        let until = Instant::now() + Duration::from_secs(5);
        while std::fs::remove_dir(&self.dir).is_err() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_limited_and_the_group_goes_with_it() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let group =
            MemoryCgroup::around(child.id(), 64 << 20, Mode::Hard).expect("root on this host");
        let dir = group.dir().to_path_buf();
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap();
        assert!(procs.contains(&child.id().to_string()), "{procs}");
        assert!(group.usage_bytes().is_some());
        let _ = child.kill();
        let _ = child.wait();
        drop(group);
        assert!(!dir.exists(), "the group is removed");
    }

    /// A child that needs more memory than a soft limit is never killed
    /// (the limit yields); under a hard one it is, and the group says so.
    #[test]
    fn a_soft_limit_never_kills_and_a_hard_one_says_it_did() {
        let hog = |mib: u32| {
            // Python allocates and touches `mib` MiB of anonymous memory.
            std::process::Command::new("python3")
                .args([
                    "-c",
                    &format!("import time; b = bytearray({mib} << 20); time.sleep(0.5)"),
                ])
                .spawn()
                .unwrap()
        };
        for mode in [Mode::Soft, Mode::Hard] {
            let mut child = hog(160);
            let group =
                MemoryCgroup::around(child.id(), 64 << 20, mode).expect("root on this host");
            let status = child.wait().unwrap();
            match mode {
                Mode::Soft => {
                    assert!(status.success(), "{status:?}");
                    assert_eq!(group.oom_kills(), 0);
                    assert!(group.oom_note().is_none());
                    if group.version == "v1" {
                        let (raises, highest) = group.raises();
                        assert!(raises >= 1 && highest > 64 << 20, "{raises} {highest}");
                    }
                }
                Mode::Hard => {
                    assert!(!status.success(), "killed: {status:?}");
                    assert!(group.oom_kills() >= 1);
                    let note = group.oom_note().unwrap();
                    assert!(
                        note.contains("killed") && note.contains("64 MiB") && !note.contains('\n'),
                        "{note}"
                    );
                }
            }
        }
    }
}
