//! Server child processes that never outlive tidemark.
//!
//! A benchmark that leaves a database server running behind it spoils the
//! next measurement (and the user's machine), so every server tidemark starts
//! goes through this module:
//!
//! * it runs in its own process group, so the terminal's Ctrl-C reaches only
//!   tidemark, which then shuts the server down in order;
//! * it gets a parent-death signal, so even a SIGKILLed tidemark makes the
//!   kernel ask the server for a shutdown;
//! * when tidemark runs as root, it runs as an unprivileged account
//!   ([`ServerUser`]), because PostgreSQL and MySQL refuse to run as root;
//! * its output is appended to a log file that error messages quote
//!   ([`log_tail`]);
//! * [`ServerProcess`] stops it on `stop` and on drop, escalating from the
//!   polite signal to SIGQUIT and SIGKILL for the whole process group, and a
//!   global registry lets an emergency path ([`kill_all_servers`]) reach every
//!   server still running.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;

pub use super::account::{ServerUser, may_search};

/// How long a server gets after SIGQUIT before its process group is killed.
const QUIT_GRACE: Duration = Duration::from_secs(5);
/// How long [`kill_all_servers`] waits after the polite signal.
const EMERGENCY_GRACE: Duration = Duration::from_secs(10);
/// How often exit is polled while waiting.
const POLL: Duration = Duration::from_millis(20);

/// A running server: its pid (= process group id) and its polite signal.
#[derive(Clone, Copy)]
struct Registered {
    pid: Pid,
    polite: Signal,
}

/// Servers started and not yet reaped. The owner unregisters a server while
/// it is still an unreaped zombie, so a pid here is never a recycled one.
static RUNNING: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

fn registry() -> MutexGuard<'static, Vec<Registered>> {
    // A panic elsewhere must not stop the emergency path from working.
    RUNNING.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// How to start and, later, stop one server.
#[derive(Clone, Debug)]
pub struct SpawnOptions {
    /// Short name for messages (`postgres`, `mariadbd`).
    pub name: String,
    /// File that receives the server's stdout and stderr (appended).
    pub log: PathBuf,
    /// Account to run as.
    pub user: ServerUser,
    /// The signal that asks for an orderly, fast shutdown (PostgreSQL:
    /// SIGINT). It is also the parent-death signal.
    pub stop_signal: Signal,
    /// How long `Drop` waits after `stop_signal` before escalating.
    pub drop_grace: Duration,
}

/// How a [`ServerProcess::stop`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopOutcome {
    /// The server had already exited before stop was asked for.
    AlreadyExited(ExitStatus),
    /// The server exited within the grace period after the polite signal.
    Stopped(ExitStatus),
    /// The server had to be sent this signal (SIGQUIT, or SIGKILL for the
    /// whole process group) after the grace period.
    Forced(Signal, ExitStatus),
}

/// A server child process, stopped on [`ServerProcess::stop`] or on drop.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    opts: SpawnOptions,
    status: Option<ExitStatus>,
}

impl ServerProcess {
    /// Starts `cmd` as a server: own process group, parent-death signal,
    /// output appended to `opts.log`, running as `opts.user`.
    ///
    /// The kernel sends the parent-death signal when the *thread* that
    /// spawned the server ends, so spawn from a thread that lives as long
    /// as the server (the main thread).
    pub fn spawn(mut cmd: Command, opts: SpawnOptions) -> Result<ServerProcess> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&opts.log)
            .with_context(|| format!("cannot open server log {}", opts.log.display()))?;
        let log_err = log.try_clone()?;
        opts.user.apply(&mut cmd);
        super::stack::even_out(&mut cmd);
        cmd.stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .process_group(0);
        arm_parent_death_signal(&mut cmd, opts.stop_signal);
        if let Some(set) = crate::util::cpus::server_set() {
            place_on(&mut cmd, set);
        }
        let program = cmd.get_program().display().to_string();
        // Hold the registry while forking so an emergency stop cannot miss
        // a server that exists but is not yet registered.
        let mut running = registry();
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {} ({program})", opts.name))?;
        running.push(Registered {
            pid: Pid::from_raw(child.id() as i32),
            polite: opts.stop_signal,
        });
        drop(running);
        Ok(ServerProcess {
            child,
            opts,
            status: None,
        })
    }

    /// The server's pid (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The log file the server writes to.
    pub fn log_path(&self) -> &Path {
        &self.opts.log
    }

    /// Whether the server is still running (reaps it if it has exited).
    pub fn is_running(&mut self) -> bool {
        self.poll_exit().is_none()
    }

    /// The exit status, once the server has exited (reaps it).
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.poll_exit()
    }

    /// Stops the server: `first` (the polite signal), up to `grace` for it
    /// to exit, then SIGQUIT and up to 5 s, then SIGKILL to the whole
    /// process group. Always reaps the child; calling it again is harmless.
    pub fn stop(&mut self, first: Signal, grace: Duration) -> StopOutcome {
        if let Some(status) = self.poll_exit() {
            return StopOutcome::AlreadyExited(status);
        }
        let pid = self.pgid();
        let _ = kill(pid, first);
        if let Some(status) = self.wait_exit(grace) {
            return StopOutcome::Stopped(status);
        }
        if first != Signal::SIGQUIT {
            let _ = kill(pid, Signal::SIGQUIT);
            if let Some(status) = self.wait_exit(QUIT_GRACE) {
                return StopOutcome::Forced(Signal::SIGQUIT, status);
            }
        }
        let _ = killpg(pid, Signal::SIGKILL);
        loop {
            // SIGKILL cannot be ignored; only uninterruptible I/O delays it.
            if let Some(status) = self.wait_exit(Duration::from_secs(3600)) {
                return StopOutcome::Forced(Signal::SIGKILL, status);
            }
        }
    }

    fn pgid(&self) -> Pid {
        Pid::from_raw(self.child.id() as i32)
    }

    /// Polls until the server exits or `limit` passes.
    fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.poll_exit() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(POLL);
        }
    }

    /// If the server has exited: kills what is left of its process group
    /// (safe while the leader is an unreaped zombie: its id cannot be
    /// reused), unregisters it and reaps it.
    fn poll_exit(&mut self) -> Option<ExitStatus> {
        if self.status.is_some() {
            return self.status;
        }
        let pid = self.pgid();
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        match waitid(Id::Pid(pid), flags) {
            Ok(WaitStatus::StillAlive) | Err(Errno::EINTR) => return None,
            _ => {}
        }
        let _ = killpg(pid, Signal::SIGKILL);
        registry().retain(|r| r.pid != pid);
        // The child has exited, so this returns at once.
        let status = match self.child.wait() {
            Ok(status) => status,
            Err(_) => std::os::unix::process::ExitStatusExt::from_raw(0),
        };
        self.status = Some(status);
        self.status
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if self.status.is_none() {
            self.stop(self.opts.stop_signal, self.opts.drop_grace);
        }
    }
}

/// Makes the kernel send `sig` to the child when tidemark's spawning thread
/// dies, and refuses to start if tidemark already died during the fork.
fn arm_parent_death_signal(cmd: &mut Command, sig: Signal) {
    let parent = std::process::id() as libc::pid_t;
    let signo = sig as libc::c_int as libc::c_ulong;
    // SAFETY: between fork and exec the closure calls only the
    // async-signal-safe prctl and getppid and allocates nothing. std runs it
    // after switching uid/gid, which would otherwise clear the setting.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signo, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Runs the child on the CPUs of `set` (`--server-cpus`); every process
/// the server forks inherits them.
fn place_on(cmd: &mut Command, set: libc::cpu_set_t) {
    // SAFETY: between fork and exec the closure makes one async-signal-safe
    // system call on a set built before the fork; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Emergency stop for every server still running (Ctrl-C handler, panic
/// hook, fatal error path): sends each its polite signal, waits up to 10 s,
/// then SIGQUIT, up to 5 s more, then SIGKILL to each process group.
/// Blocks until every server has exited. The owners' handles still reap
/// their children later; their `stop` then reports the server as exited.
pub fn kill_all_servers() {
    signal_all(None);
    if wait_all_exited(EMERGENCY_GRACE) {
        return;
    }
    signal_all(Some(Signal::SIGQUIT));
    if wait_all_exited(QUIT_GRACE) {
        return;
    }
    let running = registry();
    for r in running.iter() {
        if !has_exited(r.pid) {
            let _ = killpg(r.pid, Signal::SIGKILL);
        }
    }
    drop(running);
    wait_all_exited(Duration::from_secs(10));
}

/// Sends `sig` (or each server's polite signal) to every live server.
fn signal_all(sig: Option<Signal>) {
    for r in registry().iter() {
        if !has_exited(r.pid) {
            let _ = kill(r.pid, sig.unwrap_or(r.polite));
        }
    }
}

/// Waits until every registered server has exited (zombies count as
/// exited), or `limit` passes; returns whether all have.
fn wait_all_exited(limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if registry().iter().all(|r| has_exited(r.pid)) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// Whether our child `pid` has exited, without reaping it.
fn has_exited(pid: Pid) -> bool {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    !matches!(waitid(Id::Pid(pid), flags), Ok(WaitStatus::StillAlive))
}

/// Pids of the servers currently registered as running.
pub fn running_servers() -> Vec<u32> {
    registry().iter().map(|r| r.pid.as_raw() as u32).collect()
}

/// The last `n_lines` lines of a log file, for error messages. Reads at most
/// the last 256 KiB; says so if the file cannot be read.
pub fn log_tail(path: &Path, n_lines: usize) -> String {
    const MAX: u64 = 256 * 1024;
    let read = || -> io::Result<String> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(MAX)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    match read() {
        Ok(text) => last_lines(&text, n_lines),
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// The last `n` lines of `text`, without a trailing newline.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end_matches('\n').lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(last_lines("a\nb", 5), "a\nb");
        assert_eq!(last_lines("", 3), "");
        let missing = log_tail(Path::new("/nonexistent/tidemark.log"), 3);
        assert!(missing.starts_with("(cannot read /nonexistent/tidemark.log"));
    }

    #[test]
    fn a_server_is_stopped_by_its_signal_and_reaped() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("sleep.log");
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo started; exec sleep 600"]);
        let opts = SpawnOptions {
            name: "sleep".into(),
            log: log.clone(),
            user: ServerUser::Current,
            stop_signal: Signal::SIGTERM,
            drop_grace: Duration::from_secs(1),
        };
        let mut server = ServerProcess::spawn(cmd, opts).unwrap();
        let pid = server.pid();
        let deadline = Instant::now() + Duration::from_secs(10);
        while log_tail(&log, 1) != "started" {
            assert!(
                Instant::now() < deadline,
                "the server never wrote to its log"
            );
            std::thread::sleep(POLL);
        }
        assert!(server.is_running());
        assert!(running_servers().contains(&pid));
        let outcome = server.stop(Signal::SIGTERM, Duration::from_secs(5));
        assert!(matches!(outcome, StopOutcome::Stopped(_)), "{outcome:?}");
        assert!(!server.is_running());
        assert!(!running_servers().contains(&pid));
        assert!(kill(Pid::from_raw(pid as i32), None).is_err());
    }

    #[test]
    fn a_stubborn_server_is_escalated_and_its_group_killed() {
        let dir = tempfile::tempdir().unwrap();
        // The shell ignores the polite signal and SIGQUIT and has a child in
        // its process group that must die with it.
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "trap '' INT QUIT; sleep 600 & echo $! > child.pid; wait",
        ]);
        cmd.current_dir(dir.path());
        let opts = SpawnOptions {
            name: "stubborn".into(),
            log: dir.path().join("stubborn.log"),
            user: ServerUser::Current,
            stop_signal: Signal::SIGINT,
            drop_grace: Duration::from_millis(100),
        };
        let mut server = ServerProcess::spawn(cmd, opts).unwrap();
        let pid_file = dir.path().join("child.pid");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(&pid_file).map_or(true, |s| !s.ends_with('\n')) {
            assert!(Instant::now() < deadline, "child never started");
            std::thread::sleep(POLL);
        }
        let grandchild: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let outcome = server.stop(Signal::SIGINT, Duration::from_millis(200));
        assert!(
            matches!(outcome, StopOutcome::Forced(Signal::SIGKILL, _)),
            "{outcome:?}"
        );
        // The grandchild is reparented to init, which reaps it soon.
        let deadline = Instant::now() + Duration::from_secs(10);
        while kill(Pid::from_raw(grandchild), None).is_ok() {
            let stat = std::fs::read_to_string(format!("/proc/{grandchild}/stat"));
            if stat.map_or(true, |s| s.contains(") Z ")) {
                break;
            }
            assert!(Instant::now() < deadline, "grandchild survived");
            std::thread::sleep(POLL);
        }
    }
}
