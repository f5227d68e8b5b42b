//! Reading the kernel's counters from `/proc`, cheaply enough to do once a
//! second beside a benchmark: files stay open and are re-read from offset 0
//! into buffers that are reused, and parsing never allocates.
//!
//! These are the same files `vmstat` and `iostat` read (`/proc/stat`,
//! `/proc/vmstat`, `/proc/meminfo`, `/proc/diskstats`), plus the per-process
//! `stat`, `statm` and `children` files for the server's processes. Parsers
//! are plain functions of the text so they can be tested on samples.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

/// A `/proc` file kept open and re-read from the start on every call; the
/// kernel regenerates the text at each read from offset 0.
pub struct ProcFile {
    file: File,
    buf: Vec<u8>,
}

impl ProcFile {
    /// Opens `path` (and reads it once, to fail early and size the buffer).
    pub fn open(path: &str) -> io::Result<ProcFile> {
        let mut f = ProcFile {
            file: File::open(path)?,
            buf: Vec::with_capacity(8192),
        };
        f.read()?;
        Ok(f)
    }

    /// The file's current text.
    pub fn read(&mut self) -> io::Result<&str> {
        self.file.seek(SeekFrom::Start(0))?;
        self.buf.clear();
        self.file.read_to_end(&mut self.buf)?;
        std::str::from_utf8(&self.buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

/// Reads a whole file into `buf` (cleared first), reusing its capacity.
pub fn read_into(path: &str, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    File::open(path)?.read_to_end(buf)?;
    Ok(())
}

/// Host-wide CPU time in clock ticks, the `cpu` line of `/proc/stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    /// Time running guests; the kernel also counts it in `user`.
    pub guest: u64,
    /// Time running niced guests; also counted in `nice`.
    pub guest_nice: u64,
}

/// What `/proc/stat` says about the whole host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatCounters {
    pub cpu: CpuTicks,
    /// Context switches since boot.
    pub ctxt: u64,
    /// Interrupts since boot (the first number of the `intr` line).
    pub intr: u64,
    /// Runnable tasks now (a gauge).
    pub procs_running: u64,
    /// Tasks blocked on I/O now (a gauge).
    pub procs_blocked: u64,
}

/// Parses `/proc/stat`; `None` if the `cpu` line is missing.
pub fn parse_stat(text: &str) -> Option<StatCounters> {
    let mut out = StatCounters::default();
    let mut seen_cpu = false;
    for line in text.lines() {
        let mut words = line.split_ascii_whitespace();
        match words.next() {
            Some("cpu") => {
                let mut v = [0u64; 10];
                for slot in v.iter_mut() {
                    match words.next() {
                        Some(w) => *slot = w.parse().ok()?,
                        None => break,
                    }
                }
                out.cpu = CpuTicks {
                    user: v[0],
                    nice: v[1],
                    system: v[2],
                    idle: v[3],
                    iowait: v[4],
                    irq: v[5],
                    softirq: v[6],
                    steal: v[7],
                    guest: v[8],
                    guest_nice: v[9],
                };
                seen_cpu = true;
            }
            Some("ctxt") => out.ctxt = first_number(&mut words)?,
            Some("intr") => out.intr = first_number(&mut words)?,
            Some("procs_running") => out.procs_running = first_number(&mut words)?,
            Some("procs_blocked") => out.procs_blocked = first_number(&mut words)?,
            _ => {}
        }
    }
    seen_cpu.then_some(out)
}

fn first_number<'a>(words: &mut impl Iterator<Item = &'a str>) -> Option<u64> {
    words.next()?.parse().ok()
}

/// Paging and swapping counters of `/proc/vmstat`, in pages except where
/// noted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VmCounters {
    /// KiB read from block devices since boot (`pgpgin`, despite the name).
    pub pgpgin_kb: u64,
    /// KiB written to block devices since boot.
    pub pgpgout_kb: u64,
    /// Pages swapped in since boot.
    pub pswpin: u64,
    /// Pages swapped out since boot.
    pub pswpout: u64,
}

/// Parses `/proc/vmstat` (absent keys stay 0).
pub fn parse_vmstat(text: &str) -> VmCounters {
    let mut out = VmCounters::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(' ') else {
            continue;
        };
        let slot = match key {
            "pgpgin" => &mut out.pgpgin_kb,
            "pgpgout" => &mut out.pgpgout_kb,
            "pswpin" => &mut out.pswpin,
            "pswpout" => &mut out.pswpout,
            _ => continue,
        };
        *slot = value.trim().parse().unwrap_or(0);
    }
    out
}

/// The memory gauges `vmstat` prints, KiB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemKb {
    pub free: u64,
    pub buffers: u64,
    /// `Cached` + `SReclaimable`, as procps-ng's vmstat counts its `cache`.
    pub cache: u64,
    /// Swap in use (`SwapTotal` − `SwapFree`).
    pub swap_used: u64,
}

/// Parses `/proc/meminfo`.
pub fn parse_meminfo(text: &str) -> MemKb {
    let (mut free, mut buffers, mut cached, mut reclaimable) = (0, 0, 0, 0);
    let (mut swap_total, mut swap_free) = (0u64, 0u64);
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let slot = match key {
            "MemFree" => &mut free,
            "Buffers" => &mut buffers,
            "Cached" => &mut cached,
            "SReclaimable" => &mut reclaimable,
            "SwapTotal" => &mut swap_total,
            "SwapFree" => &mut swap_free,
            _ => continue,
        };
        *slot = rest
            .split_ascii_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
    }
    MemKb {
        free,
        buffers,
        cache: cached + reclaimable,
        swap_used: swap_total.saturating_sub(swap_free),
    }
}

/// One block device's line of `/proc/diskstats` (Documentation/admin-guide/
/// iostats.rst). Times are milliseconds; sectors are 512 bytes whatever
/// the device's own sector size. Discard and flush fields are 0 on kernels
/// that do not report them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub rd_ios: u64,
    pub rd_merges: u64,
    pub rd_sectors: u64,
    pub rd_ticks: u64,
    pub wr_ios: u64,
    pub wr_merges: u64,
    pub wr_sectors: u64,
    pub wr_ticks: u64,
    /// Requests in flight now (a gauge).
    pub in_flight: u64,
    /// Milliseconds the device had I/O in flight (`%util`).
    pub io_ticks: u64,
    /// Weighted milliseconds of I/O in flight (`aqu-sz`).
    pub time_in_queue: u64,
    pub dc_ios: u64,
    pub dc_merges: u64,
    pub dc_sectors: u64,
    pub dc_ticks: u64,
    pub fl_ios: u64,
    pub fl_ticks: u64,
}

/// The counters of device `name` in `/proc/diskstats` text.
pub fn parse_diskstats_for(text: &str, name: &str) -> Option<DiskCounters> {
    text.lines().find_map(|line| {
        let mut words = line.split_ascii_whitespace();
        let (_major, _minor) = (words.next()?, words.next()?);
        if words.next()? != name {
            return None;
        }
        let mut v = [0u64; 17];
        let mut n = 0;
        for (slot, w) in v.iter_mut().zip(words) {
            *slot = w.parse().ok()?;
            n += 1;
        }
        if n < 11 {
            return None;
        }
        Some(DiskCounters {
            rd_ios: v[0],
            rd_merges: v[1],
            rd_sectors: v[2],
            rd_ticks: v[3],
            wr_ios: v[4],
            wr_merges: v[5],
            wr_sectors: v[6],
            wr_ticks: v[7],
            in_flight: v[8],
            io_ticks: v[9],
            time_in_queue: v[10],
            dc_ios: v[11],
            dc_merges: v[12],
            dc_sectors: v[13],
            dc_ticks: v[14],
            fl_ios: v[15],
            fl_ticks: v[16],
        })
    })
}

/// Whether `/proc/diskstats` text lists device `name`.
pub fn diskstats_has(text: &str, name: &str) -> bool {
    parse_diskstats_for(text, name).is_some()
}

/// The parts of `/proc/PID/stat` the samplers use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcStat {
    pub ppid: u32,
    /// User CPU of the process (all its threads), clock ticks.
    pub utime: u64,
    /// System CPU, clock ticks.
    pub stime: u64,
    /// User CPU of its children that exited and were waited for.
    pub cutime: u64,
    /// System CPU of those children.
    pub cstime: u64,
    /// Threads in the process.
    pub num_threads: u64,
    /// When the process started, clock ticks after boot.
    pub starttime: u64,
}

/// Parses `/proc/PID/stat`. The command name in parentheses may hold
/// spaces and parentheses itself, so fields are counted from the last `)`.
pub fn parse_pid_stat(text: &str) -> Option<ProcStat> {
    let after = &text[text.rfind(')')? + 1..];
    // Fields 3 (state) onwards; field k is at index k - 3.
    let mut words = after.split_ascii_whitespace();
    let mut get = |skip: usize| -> Option<u64> { words.nth(skip)?.parse().ok() };
    let ppid = get(1)?; // field 4
    let utime = get(9)?; // field 14
    let stime = get(0)?; // 15
    let cutime = get(0)?; // 16
    let cstime = get(0)?; // 17
    let num_threads = get(2)?; // 20
    let starttime = get(1)?; // 22
    Some(ProcStat {
        ppid: u32::try_from(ppid).ok()?,
        utime,
        stime,
        cutime,
        cstime,
        num_threads,
        starttime,
    })
}

/// The first field of `/proc/PID/schedstat`: nanoseconds the task (the
/// process's main thread) has run on a CPU, counted by the scheduler
/// rather than in clock ticks.
pub fn parse_schedstat_ns(text: &str) -> Option<u64> {
    text.split_ascii_whitespace().next()?.parse().ok()
}

/// `resident` and `shared` pages of `/proc/PID/statm`.
pub fn parse_statm(text: &str) -> Option<(u64, u64)> {
    let mut words = text.split_ascii_whitespace();
    let _size = words.next()?;
    let resident = words.next()?.parse().ok()?;
    let shared = words.next()?.parse().ok()?;
    Some((resident, shared))
}

/// `read_bytes` of `/proc/PID/io`: what the process caused to be read
/// from storage (page cache hits are not counted).
///
/// Its `write_bytes` is not used: the kernel charges it when a page-cache
/// folio is dirtied, for the whole folio, so with large folios a WAL writer
/// that re-dirties the same folio after every fsync is charged many times
/// what it wrote (513 MB against 33 MB passed to `write()` in 2 s, seen
/// on a PostgreSQL backend running update-index).
pub fn parse_io_read_bytes(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key == "read_bytes").then(|| value.trim().parse().ok())?
    })
}

/// Appends the pids of a `/proc/PID/task/TID/children` text to `out`.
pub fn parse_children(text: &str, out: &mut Vec<u32>) {
    out.extend(
        text.split_ascii_whitespace()
            .filter_map(|w| w.parse::<u32>().ok()),
    );
}

/// Clock ticks per second of the `/proc` CPU times (`USER_HZ`).
pub fn clock_ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as f64 } else { 100.0 }
}

/// Bytes per memory page.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

/// User + system CPU seconds of this process (all threads, live and ended)
/// and of the calling thread, from `getrusage` (microsecond resolution).
pub fn process_and_thread_cpu_secs() -> (f64, f64) {
    fn usage(who: libc::c_int) -> f64 {
        // SAFETY: getrusage writes into the zeroed struct we pass.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(who, &mut ru) } != 0 {
            return 0.0;
        }
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    }
    (usage(libc::RUSAGE_SELF), usage(libc::RUSAGE_THREAD))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "\
cpu  153236 7 46697 193796 6285 3 14520 569 11 2
cpu0 76618 0 23348 96898 3142 0 7260 284 0 0
intr 9934511 0 9 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
ctxt 22140383
btime 1763683200
processes 41231
procs_running 3
procs_blocked 1
softirq 7707420 0 1 2 3
";

    #[test]
    fn stat() {
        let s = parse_stat(STAT).unwrap();
        assert_eq!(
            s.cpu,
            CpuTicks {
                user: 153236,
                nice: 7,
                system: 46697,
                idle: 193796,
                iowait: 6285,
                irq: 3,
                softirq: 14520,
                steal: 569,
                guest: 11,
                guest_nice: 2,
            }
        );
        assert_eq!(
            (s.ctxt, s.intr, s.procs_running, s.procs_blocked),
            (22140383, 9934511, 3, 1)
        );
        // Old kernels print fewer cpu columns.
        let old = parse_stat("cpu 1 2 3 4\nctxt 5\n").unwrap();
        assert_eq!((old.cpu.idle, old.cpu.steal, old.ctxt), (4, 0, 5));
        assert_eq!(parse_stat("ctxt 5\n"), None);
    }

    #[test]
    fn vmstat_and_meminfo() {
        let v = parse_vmstat("nr_free_pages 1\npgpgin 5624\npgpgout 4699\npswpin 2\npswpout 3\n");
        assert_eq!(
            v,
            VmCounters {
                pgpgin_kb: 5624,
                pgpgout_kb: 4699,
                pswpin: 2,
                pswpout: 3
            }
        );
        let m = parse_meminfo(
            "MemTotal: 100 kB\nMemFree:  40 kB\nBuffers: 3 kB\nCached: 20 kB\nSwapCached: 9 kB\n\
             SwapTotal: 50 kB\nSwapFree: 45 kB\nSReclaimable: 5 kB\n",
        );
        assert_eq!(
            m,
            MemKb {
                free: 40,
                buffers: 3,
                cache: 25,
                swap_used: 5
            }
        );
    }

    #[test]
    fn diskstats() {
        let text = "\
   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 254       0 vda 603267 52482 41736722 1130307 778747 102472 33622016 209133 2 94504 1371181 121042 27 13030328 11061 390498 20678
 254       1 vdb 1 2 3 4 5 6 7 8 9 10 11
";
        let d = parse_diskstats_for(text, "vda").unwrap();
        assert_eq!(d.rd_ios, 603267);
        assert_eq!(d.wr_sectors, 33622016);
        assert_eq!(d.in_flight, 2);
        assert_eq!(d.io_ticks, 94504);
        assert_eq!(d.time_in_queue, 1371181);
        assert_eq!(
            (d.dc_ios, d.dc_sectors, d.dc_ticks),
            (121042, 13030328, 11061)
        );
        assert_eq!((d.fl_ios, d.fl_ticks), (390498, 20678));
        // A kernel without discard and flush fields.
        let old = parse_diskstats_for(text, "vdb").unwrap();
        assert_eq!((old.time_in_queue, old.dc_ios, old.fl_ios), (11, 0, 0));
        assert!(diskstats_has(text, "loop0"));
        assert!(!diskstats_has(text, "vd"), "names match whole words");
    }

    #[test]
    fn pid_stat_counts_fields_after_the_command() {
        let text = "4242 (postgres: a (b) c) S 4200 4200 4200 0 -1 4194560 120 0 0 0 \
                    1234 567 89 10 20 0 1 0 4711 222000000 5120 18446744073709551615";
        let s = parse_pid_stat(text).unwrap();
        assert_eq!(
            s,
            ProcStat {
                ppid: 4200,
                utime: 1234,
                stime: 567,
                cutime: 89,
                cstime: 10,
                num_threads: 1,
                starttime: 4711
            }
        );
        assert_eq!(parse_pid_stat("1 (x) S 0"), None);
    }

    #[test]
    fn schedstat_gives_nanoseconds_on_cpu() {
        assert_eq!(
            parse_schedstat_ns("192363912 17666178 510\n"),
            Some(192363912)
        );
        assert_eq!(parse_schedstat_ns(""), None);
    }

    #[test]
    fn io() {
        let text = "rchar: 323934931\nwchar: 323929600\nsyscr: 632687\nsyscw: 632675\n\
                    read_bytes: 4096\nwrite_bytes: 323932160\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io_read_bytes(text), Some(4096));
        assert_eq!(parse_io_read_bytes("rchar: 1\n"), None);
    }

    #[test]
    fn statm_and_children() {
        assert_eq!(parse_statm("765 426 398 5 0 123 0\n"), Some((426, 398)));
        let mut pids = vec![1];
        parse_children("10 11 12 ", &mut pids);
        assert_eq!(pids, [1, 10, 11, 12]);
    }

    #[test]
    fn this_hosts_files_parse() {
        let mut stat = ProcFile::open("/proc/stat").unwrap();
        let first = parse_stat(stat.read().unwrap()).unwrap();
        let again = parse_stat(stat.read().unwrap()).unwrap();
        assert!(again.ctxt >= first.ctxt, "re-reading gives fresh counters");
        let mut buf = Vec::new();
        read_into("/proc/self/stat", &mut buf).unwrap();
        let me = parse_pid_stat(std::str::from_utf8(&buf).unwrap()).unwrap();
        assert_eq!(me.ppid, std::os::unix::process::parent_id());
        assert!(me.num_threads >= 1);
        read_into("/proc/self/schedstat", &mut buf).unwrap();
        assert!(parse_schedstat_ns(std::str::from_utf8(&buf).unwrap()).unwrap() > 0);
        read_into("/proc/meminfo", &mut buf).unwrap();
        assert!(parse_meminfo(std::str::from_utf8(&buf).unwrap()).free > 0);
        let (process, thread) = process_and_thread_cpu_secs();
        assert!(process >= thread && thread >= 0.0);
    }
}
