//! The sampler thread: reads the host's and the processes' counters once a
//! second while a step runs and turns each interval into a
//! [`HostSecond`].
//!
//! It runs on its own thread, never on a client's: clients only count into
//! their own atomics. When the runner closes a second it calls
//! [`Sampler::tick`] (from its monitor thread), so host row *n* covers
//! exactly the runner's second *n*; with nobody ticking, the sampler ticks
//! itself once a second. Each read re-reads already open `/proc` files into
//! reused buffers, so a tick costs a few system calls and no allocation
//! beyond the row it appends. The server's processes are read by
//! `process_tree`; the client's CPU is tidemark's whole process
//! minus the sampler thread. With servers and clients placed on chosen
//! CPUs the sampler thread runs on the others, when there are any, so its
//! readings neither wait behind the measured processes nor take their CPU.

use std::collections::BTreeMap;
use std::io;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::process_tree::{ServerReader, ServerTotals};
use super::procfs::{
    DiskCounters, MemKb, ProcFile, StatCounters, VmCounters, page_size, parse_diskstats_for,
    parse_meminfo, parse_stat, parse_vmstat, process_and_thread_cpu_secs,
};
use super::summary::{DiskRates, HostSecond, Phase};

/// What to watch besides the host.
#[derive(Clone, Debug)]
pub struct SamplerConfig {
    /// The server's main process, or why there is none to watch.
    pub server_pid: Result<u32, String>,
    /// Block devices to watch (`/proc/diskstats` names), or why none.
    pub devices: Result<Vec<String>, String>,
    /// Sampling interval when nobody ticks (1 s, as `vmstat 1`).
    pub interval: Duration,
}

/// Everything a sampler collected for one step.
#[derive(Clone, Debug, Default)]
pub struct SamplerOutput {
    pub rows: Vec<HostSecond>,
    /// CPUs of the host (the `cpu` percentages are of all of them).
    pub ncpu: u32,
    pub devices: Vec<String>,
    /// Metric group → why it is missing (in some or all rows).
    pub missing: BTreeMap<String, String>,
    /// CPU the sampler thread used, seconds.
    pub sampler_cpu_secs: f64,
    /// How long the sampler ran, seconds.
    pub wall_secs: f64,
}

impl SamplerOutput {
    /// The sampler's own CPU, percent of one core.
    pub fn sampler_cpu_pct(&self) -> Option<f64> {
        (self.wall_secs > 0.0).then(|| self.sampler_cpu_secs / self.wall_secs * 100.0)
    }
}

/// Shortest interval a tick closes, seconds.
const TICK_MIN: f64 = 0.005;
/// Shortest interval after the runner's last tick that is kept, seconds.
const TAIL_MIN: f64 = 0.1;

enum Msg {
    Tick(Phase),
    Stop,
}

/// A running sampler; stop it with [`Sampler::stop`] (dropping it stops it
/// too, discarding the samples).
pub struct Sampler {
    tx: Sender<Msg>,
    handle: Option<JoinHandle<SamplerOutput>>,
}

impl Sampler {
    /// Starts the sampler thread and returns once it has taken its first
    /// reading, so the first interval starts before the step does.
    pub fn start(config: SamplerConfig) -> io::Result<Sampler> {
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let handle = std::thread::Builder::new()
            .name("sampler".into())
            .spawn(move || sample_loop(config, rx, ready_tx))?;
        let _ = ready_rx.recv();
        Ok(Sampler {
            tx,
            handle: Some(handle),
        })
    }

    /// Closes the current interval now; the row gets `phase`.
    pub fn tick(&self, phase: Phase) {
        let _ = self.tx.send(Msg::Tick(phase));
    }

    /// Closes the last interval and returns everything sampled.
    pub fn stop(mut self) -> SamplerOutput {
        self.finish()
    }

    fn finish(&mut self) -> SamplerOutput {
        let _ = self.tx.send(Msg::Stop);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if self.handle.is_some() {
            self.finish();
        }
    }
}

/// One reading of every counter.
#[derive(Clone, Default)]
struct Snapshot {
    /// Seconds since the sampler started.
    t: f64,
    stat: StatCounters,
    vm: VmCounters,
    mem: MemKb,
    /// One per watched device, in order; empty when they could not be read.
    disks: Vec<DiskCounters>,
    server: Option<ServerTotals>,
    /// tidemark's CPU seconds, the sampler thread excluded.
    client_cpu: f64,
}

fn sample_loop(
    config: SamplerConfig,
    rx: Receiver<Msg>,
    ready: mpsc::SyncSender<()>,
) -> SamplerOutput {
    crate::util::cpus::leave_placed_cpus();
    let (_, own_cpu_at_start) = process_and_thread_cpu_secs();
    let start = Instant::now();
    let mut out = SamplerOutput {
        ncpu: super::host::online_cpus().max(1),
        ..SamplerOutput::default()
    };
    let mut reader = Reader::open(&config, &mut out);
    let mut prev = Snapshot::default();
    let mut cur = Snapshot::default();
    let readable = reader.snapshot(start, &mut prev, &mut out.missing);
    let _ = ready.send(());
    if !readable {
        // Without /proc/stat there is nothing to sample; wait for the stop.
        while let Ok(Msg::Tick(_)) = rx.recv() {}
        out.wall_secs = start.elapsed().as_secs_f64();
        out.sampler_cpu_secs = process_and_thread_cpu_secs().1 - own_cpu_at_start;
        return out;
    }

    let interval = config.interval.max(Duration::from_millis(10));
    // Rows before the first tick from the runner are its setup: warm-up.
    let mut first_driven: Option<usize> = None;
    let mut last_phase = Phase::Measured;
    let mut deadline = start + interval.mul_f64(1.5);
    loop {
        let wait = deadline.saturating_duration_since(Instant::now());
        let (phase, last) = match rx.recv_timeout(wait) {
            Ok(Msg::Tick(phase)) => {
                first_driven.get_or_insert(out.rows.len());
                deadline = Instant::now() + interval * 3;
                (phase, false)
            }
            Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => (
                if first_driven.is_some() {
                    Phase::After
                } else {
                    Phase::Measured
                },
                true,
            ),
            Err(RecvTimeoutError::Timeout) => {
                deadline += interval;
                (last_phase, false)
            }
        };
        last_phase = phase;
        // An interval of a few milliseconds holds a tick or two of the
        // 10 ms CPU counters and would show as nonsense rates: a tick that
        // soon after the last one folds into the next interval, and the
        // tail after the runner's last second is dropped when this short.
        let since = start.elapsed().as_secs_f64() - prev.t;
        let too_short = if last {
            since < TAIL_MIN
        } else {
            since < TICK_MIN
        };
        if (!too_short || out.rows.is_empty()) && reader.snapshot(start, &mut cur, &mut out.missing)
        {
            out.rows.push(reader.row(&prev, &cur, phase));
            std::mem::swap(&mut prev, &mut cur);
        }
        if last {
            break;
        }
    }
    if let Some(first) = first_driven {
        for row in &mut out.rows[..first] {
            row.phase = Phase::Warmup;
        }
    }
    number_seconds(&mut out.rows);
    out.devices = reader.devices.clone();
    out.wall_secs = start.elapsed().as_secs_f64();
    out.sampler_cpu_secs = process_and_thread_cpu_secs().1 - own_cpu_at_start;
    out
}

/// Gives measured rows the runner's second numbers 0, 1, …; warm-up rows
/// count back from −1; rows after follow the last measured one.
fn number_seconds(rows: &mut [HostSecond]) {
    let secs = second_numbers(rows.iter().map(|r| r.phase));
    for (r, sec) in rows.iter_mut().zip(secs) {
        r.sec = sec;
    }
}

/// The runner's second numbers of intervals in `phases` order: warm-up
/// ones count back from −1, the others count up from 0.
pub(crate) fn second_numbers(phases: impl Iterator<Item = Phase> + Clone) -> Vec<i64> {
    let warmup = phases.clone().filter(|p| *p == Phase::Warmup).count() as i64;
    let (mut w, mut m) = (-warmup, 0i64);
    phases
        .map(|p| {
            let n = if p == Phase::Warmup { &mut w } else { &mut m };
            *n += 1;
            *n - 1
        })
        .collect()
}

/// The open files and buffers one sampler reads through.
struct Reader {
    stat: Option<ProcFile>,
    vmstat: Option<ProcFile>,
    meminfo: Option<ProcFile>,
    diskstats: Option<ProcFile>,
    devices: Vec<String>,
    server: Option<ServerReader>,
    page: u64,
}

impl Reader {
    fn open(config: &SamplerConfig, out: &mut SamplerOutput) -> Reader {
        let mut opened = |path: &str, group: &str| match ProcFile::open(path) {
            Ok(f) => Some(f),
            Err(e) => {
                out.missing
                    .insert(group.into(), format!("cannot read {path}: {e}"));
                None
            }
        };
        let stat = opened("/proc/stat", "host");
        let vmstat = opened("/proc/vmstat", "memory");
        let meminfo = opened("/proc/meminfo", "memory");
        let (devices, diskstats) = match &config.devices {
            Ok(d) if d.is_empty() => {
                out.missing
                    .insert("disk".into(), "no block device to watch".into());
                (Vec::new(), None)
            }
            Ok(d) => (d.clone(), opened("/proc/diskstats", "disk")),
            Err(reason) => {
                out.missing.insert("disk".into(), reason.clone());
                (Vec::new(), None)
            }
        };
        let server = match &config.server_pid {
            Ok(pid) => Some(ServerReader::new(*pid)),
            Err(reason) => {
                out.missing.insert("server".into(), reason.clone());
                None
            }
        };
        Reader {
            stat,
            vmstat,
            meminfo,
            diskstats,
            devices,
            server,
            page: page_size(),
        }
    }

    /// Reads every counter into `snap`; false if the host CPU counters
    /// could not be read (then the interval is skipped).
    fn snapshot(
        &mut self,
        start: Instant,
        snap: &mut Snapshot,
        missing: &mut BTreeMap<String, String>,
    ) -> bool {
        let Some(stat) = self
            .stat
            .as_mut()
            .and_then(|f| f.read().ok())
            .and_then(parse_stat)
        else {
            missing
                .entry("host".into())
                .or_insert_with(|| "/proc/stat could not be read or parsed".into());
            return false;
        };
        snap.t = start.elapsed().as_secs_f64();
        snap.stat = stat;
        if let Some(text) = self.vmstat.as_mut().and_then(|f| f.read().ok()) {
            snap.vm = parse_vmstat(text);
        }
        if let Some(text) = self.meminfo.as_mut().and_then(|f| f.read().ok()) {
            snap.mem = parse_meminfo(text);
        }
        snap.disks.clear();
        if let Some(text) = self.diskstats.as_mut().and_then(|f| f.read().ok()) {
            for name in &self.devices {
                match parse_diskstats_for(text, name) {
                    Some(d) => snap.disks.push(d),
                    None => {
                        missing.entry("disk".into()).or_insert_with(|| {
                            format!("device {name} disappeared from /proc/diskstats")
                        });
                        snap.disks.clear();
                        break;
                    }
                }
            }
        }
        snap.server = match self.server.as_mut().map(ServerReader::read) {
            Some(Ok(t)) => Some(t),
            Some(Err(reason)) => {
                missing.entry("server".into()).or_insert(reason);
                None
            }
            None => None,
        };
        if let Some(reason) = self.server.as_mut().and_then(|s| s.io_error.take()) {
            missing.entry("server_io".into()).or_insert(reason);
        }
        let (process, thread) = process_and_thread_cpu_secs();
        snap.client_cpu = process - thread;
        true
    }

    /// The interval between two snapshots, in vmstat/iostat units.
    fn row(&self, a: &Snapshot, b: &Snapshot, phase: Phase) -> HostSecond {
        let secs = (b.t - a.t).max(1e-9);
        let rate = |x: u64, y: u64| y.saturating_sub(x) as f64 / secs;
        let (c0, c1) = (&a.stat.cpu, &b.stat.cpu);
        let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
        let guest = d(c0.guest, c1.guest) + d(c0.guest_nice, c1.guest_nice);
        let user = d(c0.user, c1.user) + d(c0.nice, c1.nice);
        let sys = d(c0.system, c1.system) + d(c0.irq, c1.irq) + d(c0.softirq, c1.softirq);
        let idle = d(c0.idle, c1.idle);
        let iowait = d(c0.iowait, c1.iowait);
        let steal = d(c0.steal, c1.steal);
        let total = (user + sys + idle + iowait + steal).max(1.0);
        let pct = |x: f64| 100.0 * x / total;
        let page_kb = self.page as f64 / 1024.0;
        let server = match (a.server, b.server) {
            (Some(x), Some(y)) => Some((x, y)),
            _ => None,
        };
        HostSecond {
            sec: 0,
            phase,
            end_secs: b.t,
            secs,
            r: b.stat.procs_running,
            b: b.stat.procs_blocked,
            swpd: b.mem.swap_used,
            free: b.mem.free,
            buff: b.mem.buffers,
            cache: b.mem.cache,
            si: rate(a.vm.pswpin, b.vm.pswpin) * page_kb,
            so: rate(a.vm.pswpout, b.vm.pswpout) * page_kb,
            bi: rate(a.vm.pgpgin_kb, b.vm.pgpgin_kb),
            bo: rate(a.vm.pgpgout_kb, b.vm.pgpgout_kb),
            intr: rate(a.stat.intr, b.stat.intr),
            cs: rate(a.stat.ctxt, b.stat.ctxt),
            us: pct((user - guest).max(0.0)),
            sy: pct(sys),
            id: pct(idle),
            wa: pct(iowait),
            st: pct(steal),
            disk: disk_rates(&a.disks, &b.disks, secs),
            server_cpu_pct: server
                .map(|(x, y)| y.cpu_ns.saturating_sub(x.cpu_ns) as f64 / 1e9 / secs * 100.0),
            server_read_kbps: server
                .and_then(|(_, y)| y.read_bytes_since_last)
                .map(|r| r as f64 / 1024.0 / secs),
            server_rss_bytes: b.server.map(|s| s.rss_bytes),
            server_procs: b.server.map(|s| s.procs),
            client_cpu_pct: ((b.client_cpu - a.client_cpu) / secs * 100.0).max(0.0),
        }
    }
}

/// iostat's extended columns from two readings of the same devices.
fn disk_rates(a: &[DiskCounters], b: &[DiskCounters], secs: f64) -> Option<DiskRates> {
    if a.is_empty() || a.len() != b.len() {
        return None;
    }
    let mut out = DiskRates::default();
    let (mut r, mut w, mut dc, mut fl) = (0.0, 0.0, 0.0, 0.0);
    let (mut r_ms, mut w_ms, mut dc_ms, mut fl_ms) = (0.0, 0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        let d = |f: fn(&DiskCounters) -> u64| f(y).saturating_sub(f(x)) as f64;
        r += d(|c| c.rd_ios);
        w += d(|c| c.wr_ios);
        dc += d(|c| c.dc_ios);
        fl += d(|c| c.fl_ios);
        r_ms += d(|c| c.rd_ticks);
        w_ms += d(|c| c.wr_ticks);
        dc_ms += d(|c| c.dc_ticks);
        fl_ms += d(|c| c.fl_ticks);
        out.rkbps += d(|c| c.rd_sectors) / 2.0 / secs;
        out.wkbps += d(|c| c.wr_sectors) / 2.0 / secs;
        out.dkbps += d(|c| c.dc_sectors) / 2.0 / secs;
        out.aqu_sz += d(|c| c.time_in_queue) / 1000.0 / secs;
        out.util = out.util.max(d(|c| c.io_ticks) / 10.0 / secs);
    }
    let per = |ms: f64, n: f64| if n > 0.0 { ms / n } else { 0.0 };
    out.rps = r / secs;
    out.wps = w / secs;
    out.dps = dc / secs;
    out.fps = fl / secs;
    out.r_await = per(r_ms, r);
    out.w_await = per(w_ms, w);
    out.d_await = per(dc_ms, dc);
    out.f_await = per(fl_ms, fl);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_numbered_like_the_runners() {
        let mut rows: Vec<HostSecond> = [
            Phase::Warmup,
            Phase::Warmup,
            Phase::Measured,
            Phase::Measured,
            Phase::After,
        ]
        .into_iter()
        .map(|phase| HostSecond {
            phase,
            ..HostSecond::default()
        })
        .collect();
        number_seconds(&mut rows);
        let secs: Vec<i64> = rows.iter().map(|r| r.sec).collect();
        assert_eq!(secs, [-2, -1, 0, 1, 2]);
    }

    #[test]
    fn disk_rates_follow_iostat() {
        let a = DiskCounters::default();
        let b = DiskCounters {
            rd_ios: 100,
            rd_sectors: 1600, // 800 kB
            rd_ticks: 250,
            wr_ios: 40,
            wr_sectors: 320,
            wr_ticks: 20,
            fl_ios: 10,
            fl_ticks: 5,
            io_ticks: 500,
            time_in_queue: 1500,
            ..DiskCounters::default()
        };
        let d = disk_rates(&[a, a], &[b, a], 2.0).unwrap();
        assert_eq!((d.rps, d.rkbps, d.r_await), (50.0, 400.0, 2.5));
        assert_eq!((d.wps, d.wkbps, d.w_await), (20.0, 80.0, 0.5));
        assert_eq!((d.fps, d.f_await), (5.0, 0.5));
        assert_eq!(d.util, 25.0, "500 ms busy in 2 s");
        assert_eq!(d.aqu_sz, 0.75);
        assert_eq!(d.rareq_sz(), 8.0);
        assert_eq!(disk_rates(&[], &[], 1.0), None);
    }

    /// A sampler on this host with nobody ticking: it ticks itself, and the
    /// process it is told is the server (a child we start) shows its CPU.
    #[test]
    fn samples_itself_and_a_child_process_tree() {
        let mut busy = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let sampler = Sampler::start(SamplerConfig {
            server_pid: Ok(busy.id()),
            devices: Err("test: no disk".into()),
            interval: Duration::from_millis(200),
        })
        .unwrap();
        // The child's own CPU from its stat file, seconds: what the rows
        // must add up to, however busy the machine is.
        let pid = busy.id();
        let cpu_secs = || {
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            let s = super::super::procfs::parse_pid_stat(&text).unwrap();
            (s.utime + s.stime) as f64 / super::super::procfs::clock_ticks_per_sec()
        };
        let before = cpu_secs();
        std::thread::sleep(Duration::from_millis(700));
        let out = sampler.stop();
        let used = cpu_secs() - before;
        let _ = busy.kill();
        let _ = busy.wait();
        assert!(out.rows.len() >= 3, "{} rows", out.rows.len());
        assert!(out.rows.iter().all(|r| r.phase == Phase::Measured));
        let full = &out.rows[1];
        assert!(full.us + full.sy + full.id + full.wa + full.st > 99.0);
        assert!(full.cs > 0.0);
        let sampled: f64 = (out.rows.iter())
            .map(|r| r.server_cpu_pct.unwrap() / 100.0 * r.secs)
            .sum();
        assert!(
            used > 0.05 && (sampled - used).abs() <= 0.03,
            "{sampled} s sampled, {used} s used"
        );
        assert!(full.server_rss_bytes.unwrap() > 0);
        assert!(
            out.rows.iter().all(|r| r.server_read_kbps.is_some()),
            "the first interval starts at the sampler's first reading"
        );
        assert_eq!(full.disk, None);
        assert_eq!(out.missing["disk"], "test: no disk");
        assert!(out.sampler_cpu_pct().unwrap() < 50.0);
    }

    #[test]
    fn ticks_close_intervals_and_set_phases() {
        let sampler = Sampler::start(SamplerConfig {
            server_pid: Err("none".into()),
            devices: Ok(vec![]),
            interval: Duration::from_secs(60),
        })
        .unwrap();
        for phase in [Phase::Warmup, Phase::Measured, Phase::Measured] {
            std::thread::sleep(Duration::from_millis(120));
            sampler.tick(phase);
        }
        std::thread::sleep(Duration::from_millis(150));
        let out = sampler.stop();
        let phases: Vec<Phase> = out.rows.iter().map(|r| r.phase).collect();
        assert_eq!(
            phases,
            [
                Phase::Warmup,
                Phase::Measured,
                Phase::Measured,
                Phase::After
            ]
        );
        let secs: Vec<i64> = out.rows.iter().map(|r| r.sec).collect();
        assert_eq!(secs, [-1, 0, 1, 2]);
        assert!(out.rows.iter().all(|r| r.server_cpu_pct.is_none()));
        assert_eq!(out.missing["server"], "none");

        // A tick right after another folds into the next interval, and a
        // short tail after the last tick is dropped.
        let sampler = Sampler::start(SamplerConfig {
            server_pid: Err("none".into()),
            devices: Ok(vec![]),
            interval: Duration::from_secs(60),
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(120));
        sampler.tick(Phase::Measured);
        sampler.tick(Phase::Measured);
        std::thread::sleep(Duration::from_millis(120));
        sampler.tick(Phase::Measured);
        let out = sampler.stop();
        assert_eq!(out.rows.len(), 2, "{:?}", out.rows);
        assert!(out.rows.iter().all(|r| r.secs > 0.02));
    }
}
