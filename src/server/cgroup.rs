//! A memory cgroup around a managed server, so an IO-bound run really reads
//! from storage: the kernel charges the page cache a process fills to its
//! cgroup, so with a limit a little above the buffer pool the OS cannot
//! keep the data the buffer pool does not hold, and reads go to the disk.
//!
//! cgroup v2 (`memory.max` in the unified hierarchy) and v1 (`memory/`
//! with `memory.limit_in_bytes`) are both supported, whichever mounts the
//! memory controller. The group is created per server, named after
//! tidemark's pid and the server's, and removed when dropped (after the
//! server stopped: a group with processes cannot be removed).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A memory cgroup tidemark created; removed on drop.
#[derive(Debug)]
pub struct MemoryCgroup {
    dir: PathBuf,
    /// `v1` or `v2`, for the record.
    pub version: &'static str,
    pub limit_bytes: u64,
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
    /// Creates a group limited to `limit_bytes` and moves the process
    /// `pid` and all its descendants into it (children they fork later
    /// start in it).
    pub fn around(pid: u32, limit_bytes: u64) -> Result<MemoryCgroup, String> {
        let (root, version, limit_file) = memory_root()?;
        let dir = root.join(format!("tidemark-{}-{pid}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| {
            format!(
                "cannot create the memory cgroup {}: {e} (tidemark needs root for it)",
                dir.display()
            )
        })?;
        let group = MemoryCgroup {
            dir,
            version,
            limit_bytes,
        };
        let write = |file: &str, value: &str| {
            std::fs::write(group.dir.join(file), value)
                .map_err(|e| format!("{}/{file}: {e}", group.dir.display()))
        };
        write(limit_file, &limit_bytes.to_string())?;
        for p in crate::util::process_tree::process_and_descendants(pid) {
            // A descendant that exited since the listing is simply gone.
            match std::fs::write(group.dir.join("cgroup.procs"), p.to_string()) {
                Err(e) if p != pid && e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => return Err(format!("{}/cgroup.procs: {e}", group.dir.display())),
                Ok(()) => {}
            }
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
        std::fs::read_to_string(self.dir.join(file))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// One line for the run's context.
    pub fn describe(&self) -> String {
        format!(
            "memory cgroup {} limited to {} MiB (page cache included)",
            self.version,
            self.limit_bytes >> 20
        )
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
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
        let group = MemoryCgroup::around(child.id(), 64 << 20).expect("root on this host");
        let dir = group.dir().to_path_buf();
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap();
        assert!(procs.contains(&child.id().to_string()), "{procs}");
        assert!(group.usage_bytes().is_some());
        let _ = child.kill();
        let _ = child.wait();
        drop(group);
        assert!(!dir.exists(), "the group is removed");
    }
}
