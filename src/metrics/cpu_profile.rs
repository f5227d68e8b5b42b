//! CPU profiles of the server (`--cpu-profile`): `perf record` with the
//! kernel's software clock (`cpu-clock`, which works where hardware
//! counters do not, e.g. in VMs) and call graphs, attached to the server's
//! process tree for the measured part of a step; the samples are folded
//! into one line per distinct stack (`main;PostgresMain;exec_simple_query
//! 42`) by `inferno`, the format flamegraphs are drawn from.
//!
//! perf runs as our child with a parent-death signal, and [`Profiler`]
//! stops it when dropped, so neither Ctrl-C nor a failed step nor a crash
//! of tidemark leaves a perf process behind; its data file is removed.

use std::io::{BufReader, Read};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use inferno::collapse::Collapse;
use inferno::collapse::perf::Folder;

use crate::record::CpuProfile;

/// Samples per second and CPU: low enough that the server barely notices.
pub const SAMPLE_HZ: u32 = 499;

/// How long perf gets to write its data after SIGINT.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// The thread that owns perf: its stop signal and its outcome.
type Keeper = (Sender<()>, JoinHandle<Result<(), String>>);

/// A running `perf record` on the server's processes. perf is started,
/// watched and stopped by a thread of its own: the parent-death signal
/// that ends perf if tidemark dies follows the thread that forked it, so
/// that thread must live exactly as long as the profile.
pub struct Profiler {
    keeper: Option<Keeper>,
    perf_pid: u32,
    data: PathBuf,
    started: Instant,
}

/// Why no profile can be taken on this host, or `None` when perf can run:
/// checked before a run starts so the user learns it once. Beyond perf
/// being installed and allowed, a short `perf record` of `true` with the
/// profile's own options proves the kernel lets perf open its event (a
/// sandbox may refuse `perf_event_open` outright); the answer is kept for
/// the life of the process.
pub fn unavailable() -> Option<String> {
    static ANSWER: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ANSWER.get_or_init(probe).clone()
}

fn probe() -> Option<String> {
    let works = Command::new("perf")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !works {
        return Some(
            "perf is not installed: install linux-perf (Debian) or linux-tools (Ubuntu) for --cpu-profile"
                .into(),
        );
    }
    let root = nix::unistd::geteuid().is_root();
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2);
    if !root && paranoid > 1 {
        return Some(format!(
            "kernel.perf_event_paranoid is {paranoid}: perf may not watch other users' processes; \
             run tidemark as root or sysctl kernel.perf_event_paranoid=1"
        ));
    }
    let data = std::env::temp_dir().join(format!("tidemark-perfprobe-{}.data", std::process::id()));
    let out = Command::new("perf")
        .args(["record", "-e", "cpu-clock", "-g", "-F"])
        .arg(SAMPLE_HZ.to_string())
        .arg("-o")
        .arg(&data)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    let _ = std::fs::remove_file(&data);
    match out {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "perf cannot record on this host ({}): {}; --cpu-profile needs perf_event_open \
             (outside a sandbox that refuses it, or with kernel.perf_event_paranoid lowered)",
            o.status,
            perf_error(&String::from_utf8_lossy(&o.stderr))
        )),
        Err(e) => Some(format!("perf record could not start: {e}")),
    }
}

/// The line of perf's stderr that says what went wrong: perf prints
/// "Error:" on a line of its own, then the reason.
fn perf_error(stderr: &str) -> String {
    stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("[ perf record") && *l != "Error:")
        .map(|l| l.trim_start_matches("Error:").trim())
        .next()
        .unwrap_or("no message")
        .to_string()
}

impl Profiler {
    /// Starts sampling the process tree of `server_pid` (and children it
    /// forks from now on); `Err` says why not.
    pub fn start(server_pid: u32) -> Result<Profiler, String> {
        if let Some(why) = unavailable() {
            return Err(why);
        }
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let data = std::env::temp_dir().join(format!(
            "tidemark-perf-{}-{}.data",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let file = data.clone();
        let keeper = std::thread::Builder::new()
            .name("perf-keeper".into())
            .spawn(move || {
                // A process of the tree may end between our listing and
                // perf's attaching (perf then refuses them all): list the
                // tree again and retry.
                let mut attempt = 1;
                let (mut child, _control) = loop {
                    let pids: Vec<String> = settled_tree(server_pid)
                        .iter()
                        .map(u32::to_string)
                        .collect();
                    match spawn_perf(&pids.join(","), &file) {
                        Ok(c) => break c,
                        Err(_) if attempt < ATTACH_ATTEMPTS && pid_alive(server_pid) => {
                            attempt += 1;
                            let _ = std::fs::remove_file(&file);
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return Ok(());
                        }
                    }
                };
                let _ = ready_tx.send(Ok(child.id()));
                // Until stop() or the Profiler is dropped.
                let _ = stop_rx.recv();
                end_perf(&mut child)
            })
            .map_err(|e| format!("the perf thread could not start: {e}"))?;
        match ready_rx.recv() {
            Ok(Ok(perf_pid)) => Ok(Profiler {
                keeper: Some((stop_tx, keeper)),
                perf_pid,
                data,
                started: Instant::now(),
            }),
            // perf may have created its file before it gave up (its
            // processes ended as it attached): nothing of it stays.
            Ok(Err(e)) => {
                let _ = keeper.join();
                let _ = std::fs::remove_file(&data);
                Err(e)
            }
            Err(_) => {
                let _ = std::fs::remove_file(&data);
                Err("the perf thread ended before perf started".into())
            }
        }
    }

    /// The process id of the running perf.
    pub fn perf_pid(&self) -> u32 {
        self.perf_pid
    }

    /// Stops perf and folds what it sampled.
    pub fn stop(mut self) -> Result<CpuProfile, String> {
        let secs = self.started.elapsed().as_secs_f64();
        self.end()?;
        let script = Command::new("perf")
            .args(["script", "-F", "comm,pid,tid,time,event,ip,sym,dso", "-i"])
            .arg(&self.data)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("perf script could not start: {e}"))?;
        let mut script = ChildGuard(script);
        let out = script.0.stdout.take().expect("piped stdout");
        let mut folded = Vec::new();
        Folder::default()
            .collapse(BufReader::new(out), &mut folded)
            .map_err(|e| format!("folding perf's stacks: {e}"))?;
        let _ = script.0.wait();
        let folded =
            String::from_utf8(folded).map_err(|e| format!("perf's stacks are not text: {e}"))?;
        let samples = folded
            .lines()
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
            .sum();
        Ok(CpuProfile {
            hz: SAMPLE_HZ,
            secs,
            samples,
            folded,
        })
    }

    /// Tells the keeper thread to stop perf and waits for it.
    fn end(&mut self) -> Result<(), String> {
        let Some((stop, keeper)) = self.keeper.take() else {
            return Err("perf record is not running".into());
        };
        let _ = stop.send(());
        keeper
            .join()
            .unwrap_or_else(|_| Err("the perf thread panicked".into()))
    }
}

/// How often perf is started on a freshly listed process tree before a
/// profile is given up.
const ATTACH_ATTEMPTS: u32 = 4;

/// How old a descendant must be to be attached to: younger ones (a
/// process that runs a moment, like `/bin/true` from a shell loop) are
/// likely gone before perf attaches, which would fail the whole attach.
/// Processes forked after perf attaches are followed by perf itself.
const SETTLED: Duration = Duration::from_millis(200);

/// `root` and those of its descendants that have run for [`SETTLED`].
fn settled_tree(root: u32) -> Vec<u32> {
    let ticks = crate::metrics::procfs::clock_ticks_per_sec();
    let uptime = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok());
    let started = |pid: u32| -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        Some(crate::metrics::procfs::parse_pid_stat(&stat)?.starttime as f64 / ticks)
    };
    crate::util::process_tree::process_and_descendants(root)
        .into_iter()
        .filter(|&pid| {
            pid == root
                || matches!((uptime, started(pid)), (Some(now), Some(at)) if now - at >= SETTLED.as_secs_f64())
        })
        .collect()
}

fn pid_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// How long perf gets to attach and enable its events.
const ENABLE_WAIT: Duration = Duration::from_secs(15);

/// Starts `perf record` on `pids` (comma-separated) writing to `data`, and
/// returns once its events are enabled, with the pipe that controls it
/// (kept open while it runs); an error if it exits first (a bad pid, a
/// refused event).
///
/// perf starts with its events disabled (`-D -1`) and is enabled through
/// its control pipe, which it acknowledges. Without that, perf opens its
/// events disabled, reads every listed process's maps, then enables them
/// on its own, and a process the server forks in between (a connection
/// that opens as the step starts) inherits the events but no fork record:
/// its samples come out nameless (`:PID;[unknown];…`, seen under load).
/// Returning only after the acknowledgement means every process forked
/// after the profile starts is named.
fn spawn_perf(pids: &str, data: &std::path::Path) -> Result<(Child, std::fs::File), String> {
    let (ctl_read, ctl_write) = cloexec_pipe()?;
    let (ack_read, ack_write) = cloexec_pipe()?;
    let (ctl_fd, ack_fd) = (ctl_read.as_raw_fd(), ack_write.as_raw_fd());
    let mut cmd = Command::new("perf");
    cmd.args(["record", "-e", "cpu-clock", "-g", "-F"])
        .arg(SAMPLE_HZ.to_string())
        .args(["-D", "-1", "--control"])
        .arg(format!("fd:{ctl_fd},{ack_fd}"))
        .arg("-p")
        .arg(pids)
        .arg("-o")
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: setpgid, prctl and fcntl are async-signal-safe; nothing else
    // runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            // Our Ctrl-C is ours to handle: perf stops when we say so.
            libc::setpgid(0, 0);
            // If tidemark (this thread) dies, perf goes with it.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // perf alone inherits the control pipe's two ends.
            libc::fcntl(ctl_fd, libc::F_SETFD, 0);
            libc::fcntl(ack_fd, libc::F_SETFD, 0);
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("perf record could not start: {e}"))?;
    drop((ctl_read, ack_write));
    let mut ctl = std::fs::File::from(ctl_write);
    let acked = std::io::Write::write_all(&mut ctl, b"enable\n").is_ok() && wait_ack(&ack_read);
    if !acked {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!(
            "perf record did not start: {}",
            first_line(&mut child)
        ));
    }
    Ok((child, ctl))
}

/// A pipe whose ends close on exec.
fn cloexec_pipe() -> Result<(OwnedFd, OwnedFd), String> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| format!("cannot make a pipe for perf: {e}"))
}

/// Whether perf acknowledged its `enable` on `ack` within [`ENABLE_WAIT`]
/// (an end of file or a timeout is no).
fn wait_ack(ack: &OwnedFd) -> bool {
    let mut got = Vec::new();
    let until = Instant::now() + ENABLE_WAIT;
    // perf writes `ack\n` and a NUL.
    while !got.windows(4).any(|w| w == b"ack\n") {
        let left = until.saturating_duration_since(Instant::now());
        let mut fds = [nix::poll::PollFd::new(
            ack.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        let ms = u16::try_from(left.as_millis()).unwrap_or(u16::MAX);
        match nix::poll::poll(&mut fds, ms) {
            Ok(n) if n > 0 => {}
            _ => return false,
        }
        let mut buf = [0u8; 16];
        match nix::unistd::read(ack, &mut buf) {
            Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => return false,
        }
    }
    true
}

fn first_line(child: &mut Child) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    perf_error(&err)
}

/// SIGINT to perf (it writes its data and exits), a kill if it does not
/// within [`STOP_WAIT`].
fn end_perf(child: &mut Child) -> Result<(), String> {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
    let until = Instant::now() + STOP_WAIT;
    loop {
        match child.try_wait() {
            // perf writes its data on SIGINT, then re-raises it.
            Ok(Some(status))
                if status.success()
                    || std::os::unix::process::ExitStatusExt::signal(&status)
                        == Some(libc::SIGINT) =>
            {
                return Ok(());
            }
            Ok(Some(status)) => {
                return Err(format!(
                    "perf record failed ({status}): {}",
                    first_line(child)
                ));
            }
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("perf record did not stop within 10 s and was killed".into());
            }
        }
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        if self.keeper.is_some() {
            let _ = self.end();
        }
        let _ = std::fs::remove_file(&self.data);
    }
}

/// Kills and reaps a helper process if it is still running when dropped.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfs_reason_is_the_line_after_error() {
        let refused =
            "Error:\nNo permission to enable cpu-clock event.\n\nYou may not have permission\n";
        assert_eq!(
            perf_error(refused),
            "No permission to enable cpu-clock event."
        );
        assert_eq!(perf_error("Error: failed to mmap\n"), "failed to mmap");
        assert_eq!(perf_error(""), "no message");
    }

    #[test]
    fn a_busy_child_is_profiled_and_nothing_is_left_behind() {
        if let Some(why) = unavailable() {
            // A host that cannot profile: starting a profile must say so in
            // one line and leave no perf or data file behind.
            eprintln!("this host cannot profile ({why}); checking the refusal only");
            assert!(!why.contains('\n') && why.contains("perf"), "{why}");
            let before = leftover_perf_files();
            assert_eq!(Profiler::start(std::process::id()).err(), Some(why));
            assert_eq!(leftover_perf_files(), before);
            return;
        }
        let busy = shell("while :; do :; done");
        let p = Profiler::start(busy.0.id()).unwrap();
        let perf_pid = p.perf_pid;
        // Until the child has had 0.3 s of CPU (a loaded machine gives it
        // less than the wall time).
        let cpu = |pid: u32| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let s = crate::metrics::procfs::parse_pid_stat(&stat).unwrap_or_default();
            (s.utime + s.stime) as f64 / crate::metrics::procfs::clock_ticks_per_sec()
        };
        let (start, until) = (cpu(busy.0.id()), Instant::now() + Duration::from_secs(20));
        while cpu(busy.0.id()) - start < 0.3 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = p.stop().unwrap();
        drop(busy);
        assert!(profile.samples > 5, "{profile:?}");
        assert!(
            profile.folded.lines().all(|l| l.starts_with("sh")),
            "{}",
            profile.folded
        );
        assert!(!std::path::Path::new(&format!("/proc/{perf_pid}")).exists());

        // Dropped without stop: perf ends and its file goes. The tree
        // forks a short-lived process all the time (as a server forks
        // workers): those come and go as perf attaches, which must not
        // fail the profile.
        let churn = shell("while :; do /bin/true; done");
        for _ in 0..5 {
            drop(Profiler::start(churn.0.id()).unwrap());
        }
        let p = Profiler::start(churn.0.id()).unwrap();
        let (perf_pid, data) = (p.perf_pid, p.data.clone());
        drop(p);
        assert!(!std::path::Path::new(&format!("/proc/{perf_pid}")).exists());
        assert!(!data.exists());
        assert!(Profiler::start(u32::MAX - 1).is_err(), "no such process");
    }

    #[test]
    fn a_process_forked_as_the_profile_starts_is_named() {
        if unavailable().is_some() {
            return; // the refusal is checked above
        }
        // The tree forks a busy child the moment a file appears, as a
        // server forks a backend for a connection opened as a step starts.
        let trigger =
            std::env::temp_dir().join(format!("tidemark-perf-trigger-{}", std::process::id()));
        let _ = std::fs::remove_file(&trigger);
        let tree = ChildGuard(
            Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "while [ ! -e {} ]; do sleep 0.01; done; \
                     sh -c 'while :; do :; done' & wait",
                    trigger.display()
                ))
                .process_group(0)
                .spawn()
                .unwrap(),
        );
        let p = Profiler::start(tree.0.id()).unwrap();
        std::fs::write(&trigger, b"").unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        let profile = p.stop().unwrap();
        // The tree and its busy child, which the root's end would orphan.
        // SAFETY: kill(2) on the tree's own process group.
        unsafe { libc::kill(-(tree.0.id() as libc::pid_t), libc::SIGKILL) };
        drop(tree);
        let _ = std::fs::remove_file(&trigger);
        assert!(profile.samples > 5, "{profile:?}");
        // perf names a process it saw no fork record for `:PID`.
        assert!(
            profile.folded.lines().all(|l| l.starts_with("sh;")),
            "{}",
            profile.folded
        );
    }

    /// `sh -c script` as a child that is killed when dropped.
    fn shell(script: &str) -> ChildGuard {
        ChildGuard(
            Command::new("sh")
                .args(["-c", script])
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        )
    }

    /// This process's perf data files in the temporary directory.
    fn leftover_perf_files() -> Vec<String> {
        let prefix = format!("tidemark-perf-{}-", std::process::id());
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&prefix))
            .collect()
    }
}
