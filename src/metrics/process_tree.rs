//! The server's CPU and memory, read from `/proc` for its whole process
//! tree: the main process (the postmaster, the single mariadbd) and every
//! child (backends, checkpointer, walwriter, …). Children are listed by
//! `/proc/PID/task/PID/children`, or by scanning `/proc/*/stat` for the
//! parent pid on kernels without that file. CPU that exited children used
//! is in the parent's `cutime`/`cstime` once it has reaped them, so the sum
//! does not drop when a backend disconnects. A process of one thread (a
//! PostgreSQL backend) is read in nanoseconds from `/proc/PID/schedstat`;
//! one of many threads (mysqld) and the reaped children's share in clock
//! ticks: a 1 s slice of one backend read in 10 ms ticks would be off by
//! up to 2 %. Storage reads (`/proc/PID/io`
//! `read_bytes`) are summed per process between two readings: a process
//! that appeared in between counts whole, one that exited loses its last
//! interval.

use std::fmt::Write as _;
use std::io;

use super::procfs::{
    ProcStat, clock_ticks_per_sec, page_size, parse_children, parse_io_read_bytes, parse_pid_stat,
    parse_schedstat_ns, parse_statm, read_into,
};

/// The whole tree at one moment.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ServerTotals {
    /// CPU time in nanoseconds: the main process, its live children, and
    /// its reaped children.
    pub cpu_ns: u64,
    /// Private memory of every process plus the largest shared set, bytes.
    pub rss_bytes: u64,
    /// Processes in the tree.
    pub procs: u32,
    /// Bytes the tree read from storage since the previous reading; `None`
    /// on the first reading or when `/proc/PID/io` cannot be read.
    pub read_bytes_since_last: Option<u64>,
}

/// Times the tree is read again when the parent reaped a child meanwhile.
const REAP_RETRIES: usize = 3;

/// Reads the server's process tree: the main process and its children.
pub(crate) struct ServerReader {
    pid: u32,
    path: String,
    buf: Vec<u8>,
    children: Vec<u32>,
    /// `/proc/PID/task/PID/children` works on this kernel.
    children_file: bool,
    /// (pid, read_bytes) at the previous and this reading, sorted by pid;
    /// `io_prev` is `None` before the first reading.
    io_prev: Option<Vec<(u32, u64)>>,
    io_cur: Vec<(u32, u64)>,
    /// Why `/proc/PID/io` could not be read, once.
    pub(crate) io_error: Option<String>,
    io_failed: bool,
    /// Nanoseconds per clock tick.
    ns_per_tick: u64,
}

impl ServerReader {
    pub(crate) fn new(pid: u32) -> ServerReader {
        ServerReader {
            pid,
            path: String::with_capacity(64),
            buf: Vec::with_capacity(1024),
            children: Vec::with_capacity(64),
            children_file: true,
            io_prev: None,
            io_cur: Vec::with_capacity(64),
            io_error: None,
            io_failed: false,
            ns_per_tick: (1e9 / clock_ticks_per_sec()) as u64,
        }
    }

    fn read_file(&mut self, pid: u32, file: &str) -> io::Result<&str> {
        self.path.clear();
        let _ = write!(self.path, "/proc/{pid}/{file}");
        read_into(&self.path, &mut self.buf)?;
        std::str::from_utf8(&self.buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    /// CPU time of process `pid` whose stat is `s`, its reaped children's
    /// included, in nanoseconds: its own from the scheduler when it has
    /// one thread, else from its clock ticks.
    fn cpu_ns(&mut self, pid: u32, s: &ProcStat) -> u64 {
        let reaped = (s.cutime + s.cstime) * self.ns_per_tick;
        let own = match s.num_threads {
            1 => self
                .read_file(pid, "schedstat")
                .ok()
                .and_then(parse_schedstat_ns),
            _ => None,
        };
        reaped + own.unwrap_or((s.utime + s.stime) * self.ns_per_tick)
    }

    /// CPU time (the parent's includes its reaped children's), memory and
    /// process count of the whole tree. A child reaped while the tree is
    /// read would count neither as a child nor in the parent's `cutime`
    /// read before it (its whole CPU would vanish from this reading and
    /// come back in the next): the parent is read again after its
    /// children, and the tree read anew while its reaped total moved.
    pub(crate) fn read(&mut self) -> Result<ServerTotals, String> {
        let mut main = self.read_main()?;
        let mut retries = 0;
        let mut totals = loop {
            let totals = self.read_tree(&main);
            let after = self.read_main()?;
            // Past the retries the parent kept reaping: this reading may be
            // short by the last reaped child, which the next one counts.
            if after.cutime + after.cstime == main.cutime + main.cstime || retries == REAP_RETRIES {
                break totals;
            }
            main = after;
            retries += 1;
        };
        totals.read_bytes_since_last = self.io_delta();
        Ok(totals)
    }

    /// The main process's stat, or why it cannot be read.
    fn read_main(&mut self) -> Result<ProcStat, String> {
        let pid = self.pid;
        match self.read_file(pid, "stat") {
            Ok(text) => {
                parse_pid_stat(text).ok_or_else(|| format!("/proc/{pid}/stat could not be parsed"))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err(format!("server process {pid} is gone"))
            }
            Err(e) => Err(format!("cannot read /proc/{pid}/stat: {e}")),
        }
    }

    /// One pass over the tree whose main process read `main`: CPU, memory,
    /// processes, and each one's storage read counter into `io_cur`.
    fn read_tree(&mut self, main: &ProcStat) -> ServerTotals {
        let pid = self.pid;
        let mut totals = ServerTotals {
            cpu_ns: self.cpu_ns(pid, main),
            procs: 1,
            ..ServerTotals::default()
        };
        let (mut private, mut shared_max) = (0u64, 0u64);
        if let Some((res, shared)) = self.read_file(pid, "statm").ok().and_then(parse_statm) {
            private += res.saturating_sub(shared);
            shared_max = shared;
        }
        self.io_cur.clear();
        self.read_io(pid);
        self.list_children();
        for i in 0..self.children.len() {
            let child = self.children[i];
            // A child may exit between listing and reading: skip it; its
            // CPU reaches the parent's cutime once it is reaped.
            let Some(s) = self.read_file(child, "stat").ok().and_then(parse_pid_stat) else {
                continue;
            };
            if s.ppid != pid {
                continue;
            }
            totals.cpu_ns += self.cpu_ns(child, &s);
            totals.procs += 1;
            if let Some((res, shared)) = self.read_file(child, "statm").ok().and_then(parse_statm) {
                private += res.saturating_sub(shared);
                shared_max = shared_max.max(shared);
            }
            self.read_io(child);
        }
        totals.rss_bytes = (private + shared_max) * page_size();
        totals
    }

    /// Adds `pid`'s storage read counter to this reading.
    fn read_io(&mut self, pid: u32) {
        if self.io_failed {
            return;
        }
        let main = self.pid;
        match self.read_file(pid, "io") {
            Ok(text) => {
                if let Some(r) = parse_io_read_bytes(text) {
                    self.io_cur.push((pid, r));
                }
            }
            // A child that just exited; the main process's error decides.
            Err(_) if pid != main => {}
            Err(e) => {
                self.io_failed = true;
                self.io_error = Some(format!("cannot read /proc/{pid}/io: {e}"));
            }
        }
    }

    /// Storage reads of the tree since the previous reading, and makes this
    /// reading the previous one.
    fn io_delta(&mut self) -> Option<u64> {
        if self.io_failed {
            return None;
        }
        self.io_cur.sort_unstable_by_key(|e| e.0);
        let delta = self.io_prev.as_ref().map(|prev| {
            self.io_cur
                .iter()
                .map(|&(pid, now)| {
                    // A process born since the previous reading counts whole.
                    let before = prev
                        .binary_search_by_key(&pid, |e| e.0)
                        .map_or(0, |i| prev[i].1);
                    now.saturating_sub(before)
                })
                .sum()
        });
        let prev = self.io_prev.get_or_insert_with(|| Vec::with_capacity(64));
        std::mem::swap(prev, &mut self.io_cur);
        delta
    }

    /// Fills `self.children` from the children file, or by scanning
    /// `/proc` when the kernel has no such file.
    fn list_children(&mut self) {
        self.children.clear();
        if self.children_file {
            let pid = self.pid;
            self.path.clear();
            let _ = write!(self.path, "/proc/{pid}/task/{pid}/children");
            match read_into(&self.path, &mut self.buf) {
                Ok(()) => {
                    if let Ok(text) = std::str::from_utf8(&self.buf) {
                        parse_children(text, &mut self.children);
                    }
                    return;
                }
                Err(_) => self.children_file = false,
            }
        }
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return;
        };
        for entry in dir.flatten() {
            if let Some(p) = entry.file_name().to_str().and_then(|s| s.parse().ok()) {
                self.children.push(p);
            }
        }
        // Non-children are dropped by the ppid check in `read`.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// A shell with forty idle children (so a pass over its tree takes a
    /// while) that runs busy children of about 0.2 s one after another and
    /// reaps each: read over and over, the tree's CPU may dip by a clock
    /// tick or two where a reaped child's nanoseconds turn into the
    /// parent's ticks, never by a whole child reaped in the middle of a
    /// reading.
    #[test]
    fn a_child_reaped_while_the_tree_is_read_is_still_counted() {
        let script = "for i in $(seq 40); do sleep 30 & done; \
                      while :; do sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'; done";
        // Its own process group, so the shell and every child go at once.
        let mut shell = Command::new("sh")
            .args(["-c", script])
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut reader = ServerReader::new(shell.id());
        let tick_ns = 1e9 / clock_ticks_per_sec();
        let (mut last, mut worst_drop, mut readings) = (0u64, 0u64, 0u32);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(3) {
            let now = reader.read().unwrap().cpu_ns;
            if readings > 0 {
                worst_drop = worst_drop.max(last.saturating_sub(now));
            }
            last = now;
            readings += 1;
        }
        // SAFETY: a signal to the process group this test started.
        unsafe { libc::kill(-(shell.id() as i32), libc::SIGKILL) };
        let _ = shell.wait();
        assert!(last as f64 > 0.5e9, "the busy children ran: {last} ns");
        assert!(
            (worst_drop as f64) <= 3.0 * tick_ns,
            "the tree's CPU fell by {worst_drop} ns between two of {readings} readings"
        );
    }
}
