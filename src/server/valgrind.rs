//! A managed PostgreSQL or MariaDB server under Valgrind's callgrind (`run
//! --instructions`), and how a step's measured interval is cut out of its
//! processes' (threads') instruction counts.
//!
//! The postmaster runs under `valgrind --tool=callgrind
//! --trace-children=yes`, so every process it forks counts its own
//! instructions into its own files (`callgrind.out.PID.N`). The interval is
//! bracketed without `callgrind_control`/`vgdb`: on this kind of host vgdb
//! reaches a process blocked in a system call only through ptrace, and
//! that invocation hung on PostgreSQL 15's idle backends and, when
//! interrupted, killed the process it had attached to (the checkpointer
//! and WAL writer exited, the postmaster restarted). Instead callgrind
//! dumps on its own when a process enters a named function
//! (`--dump-before`), and tidemark makes the processes enter one at
//! chosen moments:
//!
//! - **client backends**: each client runs its warm-up events, then waits
//!   for the others ([`Meeting`]); the last to arrive calls
//!   `pg_reload_conf()` (below). Then each sends `SELECT pg_backend_pid()`
//!   twice — the reload is processed with the first, before its dump, so
//!   its cost stays outside; the dumps of the second pair bracket one
//!   marker cycle, measured to be subtracted — runs its events, and sends
//!   the marker once more after its last event ([`Marked`]). Deterministic:
//!   the same code runs between the dumps whatever the timing.
//! - **background processes** (postmaster, and every process
//!   `pg_stat_activity` lists that is not a client backend: checkpointer,
//!   WAL writer, background writer, autovacuum launcher, …): the reload at
//!   the meeting and one after the step; each process dumps on entering
//!   `ProcessConfigFile` ([`Background`]), and that function's own cost is
//!   subtracted. Their interval is the step's wall time, so they are
//!   reported apart, per query. Autovacuum workers that start and end
//!   between the two reloads are not counted.
//!
//! What the background does to a step's count (autovacuum's snapshots and
//! samples, timed checkpoints) is kept out by the counted mode's settings
//! and the VACUUM and CHECKPOINT before each step
//! (`orchestrate::provide`, `workload::sysbench::load::settle_for_count`).
//! Work that comes with time rather than with queries is left out of a
//! client's count ([`PG_CLIENT_LEFT_OUT`]: waiting for the client's next
//! message or for it to take a result, the idle statistics flush): when
//! it happens depends on timing,
//! and before it was left out it moved an A/A pair by up to ~150
//! instructions per statement. What remains differs between two identical
//! servers by at most 0.14 % of a statement in an A/A of the 32 quick
//! tests (`report::instructions`' floors).
//!
//! **MariaDB** (one process, a thread per connection) runs under
//! `--separate-threads=yes`, so every thread counts apart and a dump on
//! entering a function writes only the thread that entered it (callgrind's
//! `dump_profile(trigger, only_current_thread)`, checked here: one file
//! `callgrind.out.PID.N-TT` per marker):
//!
//! - **connection threads**: the same markers around each client's events,
//!   `SELECT ROW_COUNT()` entering `Item_func_row_count::val_int()`. The
//!   threads are found from their dumps: those with marker dumps after the
//!   interval's start.
//! - **background threads** (purge, page cleaner, timers, the accepting
//!   main thread, …): nothing makes them all enter a function on demand, so
//!   the interval's start and end are dumps of every thread at once,
//!   callgrind's `dump` monitor command sent through `vgdb`. vgdb runs as
//!   the server's account (as root it reached the server but got no
//!   answer) with `--max-invoke-ms=0`, so it never ptraces: the server
//!   answers when one of its threads next runs, which the connection that
//!   asked makes happen with `SELECT 1` until vgdb returns. Threads that ran
//!   a command (`do_command`) in the interval are connections (tidemark's
//!   clients and its counter sampler), not background. A thread that starts
//!   and ends inside the interval is counted: callgrind keeps its counts
//!   until the next dump of all threads.
//!
//! Under Valgrind the server gets `innodb_use_native_aio=OFF` (with
//! io_uring it hung at start, a thread waiting in `io_uring_enter`) and
//! `innodb_buffer_pool_size_max` equal to the pool (10.11's default
//! reserves 8 TiB of address space, which Valgrind refuses).
//!
//! The counts come from [`crate::metrics::instructions`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::db::{Conn, Connector, DbError, ErrorKind, first_value};
use crate::metrics::instructions::{self, ClientCount};
use crate::record::StepInstructions;
use crate::runner::{
    ClientWork, Done, Progress, Schedule, StepPlan, StepResult, StepWork, run_step,
};

/// The name callgrind's files start with.
pub const OUT_PREFIX: &str = "callgrind.out";
/// The function each client's marker query enters.
pub const MARKER_FN: &str = "pg_backend_pid";
/// The marker query.
pub const MARKER_SQL: &str = "SELECT pg_backend_pid()";
/// The function every process enters on a configuration reload.
pub const RELOAD_FN: &str = "ProcessConfigFile";
/// What a PostgreSQL client backend's count leaves out: the reload that
/// starts the interval, and work that comes with time rather than with
/// queries, whose share per query under Valgrind depends on timing and is
/// 30-100x what it is on a real server: `secure_read` (reading the client's
/// next message: a backend that finds it not yet there waits in
/// `WaitEventSetWait`, ~90 instructions more per query in an A/A pair),
/// `secure_write` (sending a result: when the socket's buffer is full the
/// backend waits for the client to take it, +128 per statement in one of
/// three repetitions of read-only-simple, whose results are 1,000 rows),
/// `pgstat_report_stat` (the statistics flush when idle, at most once a
/// second: ~21,500 instructions with one table, landing in a step or in
/// the marker cycle subtracted from it) and `AdvanceXLInsertBuffer`
/// (initialising the next WAL pages, which the WAL writer does instead
/// when it gets there first: −197 to +1,869 per statement between two
/// servers in one repetition of the write tests). The flush's
/// consequences are timed too: after one, the next statement re-creates
/// its table's pending statistics entry (`pgstat_assoc_relation`, ~280
/// instructions), and an idle backend with statistics left unflushed arms
/// a timer for the next try (`enable_timeout_after`, `disable_timeout`, the
/// alarm's handler `handle_sig_alarm`, ~40-160 each): on a 97-million-
/// instruction scan statement these moved a planted build's increase by
/// +85 per statement against the patch's 406. And `LWLockUpdateVar`: a
/// backend that finds the next WAL page uninitialised advertises how far
/// it got before initialising it (`AdvanceXLInsertBuffer`, above); in a
/// client backend nothing else calls it, and whether the page was ready
/// is timing (update-inlist: 35 or 581 such calls in one step of 100
/// statements). None of them calls another.
pub const PG_CLIENT_LEFT_OUT: [&str; 10] = [
    RELOAD_FN,
    "secure_read",
    "secure_write",
    "pgstat_report_stat",
    "AdvanceXLInsertBuffer",
    "pgstat_assoc_relation",
    "enable_timeout_after",
    "disable_timeout",
    "handle_sig_alarm",
    "LWLockUpdateVar",
];
/// The function MariaDB's marker query enters.
pub const MARIADB_MARKER_FN: &str = "Item_func_row_count::val_int()";
/// MariaDB's marker query.
pub const MARIADB_MARKER_SQL: &str = "SELECT ROW_COUNT()";
/// A function a MariaDB connection thread runs for every command it reads.
const MARIADB_COMMAND_FN: &str = "do_command(";
/// How long vgdb may take to have every thread dumped.
const VGDB_WAIT: Duration = Duration::from_secs(120);
/// How long background processes may take to answer a reload.
const RELOAD_WAIT: Duration = Duration::from_secs(20);

/// How long a counted step waits for the postmaster to reap the backends
/// of earlier connections ([`Server::wait_reaped`]).
const REAP_WAIT: Duration = Duration::from_secs(20);

/// Why Valgrind cannot count here, or `None` when it can.
pub fn unavailable() -> Option<String> {
    match std::process::Command::new("valgrind")
        .arg("--version")
        .output()
    {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "`valgrind --version` failed ({}): reinstall Debian's package valgrind",
            o.status
        )),
        Err(_) => Some(
            "valgrind is not installed: install Debian's package valgrind (apt-get install valgrind)"
                .to_string(),
        ),
    }
}

/// The program and arguments that run a PostgreSQL server binary under
/// callgrind writing into `out_dir`.
pub fn postgres_wrapper(out_dir: &Path) -> Vec<OsString> {
    let mut out_file = OsString::from("--callgrind-out-file=");
    out_file.push(out_dir.join(format!("{OUT_PREFIX}.%p")));
    vec![
        "valgrind".into(),
        "--tool=callgrind".into(),
        "--trace-children=yes".into(),
        "--vgdb=no".into(),
        "--dump-line=no".into(),
        format!("--dump-before={MARKER_FN}").into(),
        format!("--dump-before={RELOAD_FN}").into(),
        out_file,
    ]
}

/// The program and arguments that run a MariaDB server binary under
/// callgrind writing into `out_dir`, one file per thread and dump, with
/// vgdb's pipes there too.
pub fn mariadb_wrapper(out_dir: &Path) -> Vec<OsString> {
    let mut out_file = OsString::from("--callgrind-out-file=");
    out_file.push(out_dir.join(format!("{OUT_PREFIX}.%p")));
    let mut prefix = OsString::from("--vgdb-prefix=");
    prefix.push(out_dir.join("vgdb"));
    vec![
        "valgrind".into(),
        "--tool=callgrind".into(),
        "--separate-threads=yes".into(),
        "--vgdb=yes".into(),
        prefix,
        "--dump-line=no".into(),
        format!("--dump-before={MARIADB_MARKER_FN}").into(),
        out_file,
    ]
}

/// The environment vgdb and the server it talks to must share: vgdb finds
/// the server's pipes by the user and host names these give.
pub const VGDB_ENV: [(&str, &str); 3] = [
    ("LOGNAME", "tidemark"),
    ("USER", "tidemark"),
    ("HOST", "tidemark"),
];

/// The lines a MariaDB option file gets to run under Valgrind (see the
/// module's notes), given the buffer pool size `text` sets.
pub fn mariadb_config_lines(text: &str) -> String {
    let pool = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .filter(|(n, _)| n.trim().replace('-', "_") == "innodb_buffer_pool_size")
        .map(|(_, v)| v.trim().to_string())
        .next_back()
        .unwrap_or_else(|| "128M".to_string());
    format!(
        "# --- added by tidemark: under Valgrind (run --instructions) ---\n\
         innodb_use_native_aio = OFF\n\
         loose-innodb_buffer_pool_size_max = {pool}\n"
    )
}

/// The server a step is counted on.
#[derive(Clone, Debug)]
pub enum Server {
    /// PostgreSQL: a process per connection; background processes dump on
    /// a configuration reload.
    Postgres { postmaster_pid: u32 },
    /// MariaDB: one process, a thread per connection; every thread dumped
    /// at once through vgdb, run as `owner` (uid, gid) when set.
    Mariadb { pid: u32, owner: Option<(u32, u32)> },
}

impl Server {
    fn marker_fn(&self) -> &'static str {
        match self {
            Server::Postgres { .. } => MARKER_FN,
            Server::Mariadb { .. } => MARIADB_MARKER_FN,
        }
    }

    /// The functions whose calls a client's interval leaves out.
    fn client_left_out(&self) -> &'static [&'static str] {
        match self {
            Server::Postgres { .. } => &PG_CLIENT_LEFT_OUT,
            Server::Mariadb { .. } => &[],
        }
    }

    /// PostgreSQL: waits (up to [`REAP_WAIT`]) until the postmaster has
    /// reaped every client backend of earlier connections (the previous
    /// step's clients, the VACUUM and CHECKPOINT before this one), so that
    /// the clients about to connect fork from a postmaster whose heap went
    /// through the same allocations and frees in the same order whatever the
    /// timing. A child's heap is the postmaster's at the fork; under
    /// Valgrind a backend takes a while to exit (it writes its counts), and
    /// whether the postmaster had freed its entry before the next fork
    /// changed which paths glibc's malloc took in that child for the whole
    /// step (`_int_malloc` −95, `unlink_chunk` −46 instructions per statement
    /// in one repetition of a planted run). What stays is what
    /// `pg_stat_activity` lists (a backend leaves it early in its exit,
    /// long before Valgrind has written its counts): the background
    /// processes and connections open now, such as tidemark's own, but not
    /// the connection that asks, which is waited for too (found by its port:
    /// `pg_backend_pid()` is the marker).
    fn wait_reaped(&self, connector: &dyn Connector) -> Result<(), DbError> {
        let Server::Postgres { postmaster_pid } = *self else {
            return Ok(());
        };
        let staying = pids(
            connector.connect()?.as_mut(),
            "SELECT pid FROM pg_stat_activity \
             WHERE client_port IS DISTINCT FROM inet_client_port()",
        )?;
        let path = format!("/proc/{postmaster_pid}/task/{postmaster_pid}/children");
        let deadline = Instant::now() + REAP_WAIT;
        let mut children = Vec::new();
        loop {
            children.clear();
            match std::fs::read_to_string(&path) {
                Ok(text) => crate::metrics::procfs::parse_children(&text, &mut children),
                // No such file (an old kernel): nothing to wait on.
                Err(_) => return Ok(()),
            }
            if children.iter().all(|c| staying.contains(c)) || Instant::now() >= deadline {
                // Past the deadline the count is still right, only less
                // repeatable: carry on.
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends the marker query; PostgreSQL's returns the backend's pid.
    fn marker(&self, conn: &mut dyn Conn) -> Result<Option<u32>, DbError> {
        let Server::Postgres { .. } = self else {
            conn.query_text(MARIADB_MARKER_SQL)?;
            return Ok(None);
        };
        let rows = conn.query_text(MARKER_SQL)?;
        first_value(rows)
            .and_then(|v| v.parse().ok())
            .map(Some)
            .ok_or_else(|| {
                DbError::new(
                    ErrorKind::Other,
                    "",
                    "the marker query returned no backend pid",
                )
            })
    }
}

/// A client's work wrapped with the markers: in `prepare` its warm-up
/// events, the meeting of all clients (the last to arrive starts the
/// background interval), then the first two markers; the last marker after
/// its last event.
pub struct Marked {
    inner: Box<dyn ClientWork>,
    warmup_events: u64,
    events: u64,
    done: u64,
    pids: Arc<Mutex<Vec<u32>>>,
    meeting: Arc<Meeting>,
}

impl ClientWork for Marked {
    fn prepare(&mut self, conn: &mut dyn Conn) -> Result<(), DbError> {
        let mut warm = || -> Result<(), DbError> {
            self.inner.prepare(conn)?;
            for _ in 0..self.warmup_events {
                if let Err(e) = self.inner.event(conn)
                    && e.kind == ErrorKind::Connection
                {
                    return Err(e);
                }
            }
            Ok(())
        };
        let warmed = warm();
        // Every client arrives, even one that failed, so none waits in vain.
        self.meeting.arrive(conn);
        warmed?;
        // The reload reaches this backend with the first marker's command:
        // its cost lands before the first dump, outside the interval.
        let server = &self.meeting.server;
        server.marker(conn)?;
        if let Some(pid) = server.marker(conn)? {
            self.pids.lock().expect("pids").push(pid);
        }
        Ok(())
    }

    fn event(&mut self, conn: &mut dyn Conn) -> Result<Done, DbError> {
        let done = self.inner.event(conn)?;
        self.done += 1;
        if self.done == self.events {
            self.meeting.server.marker(conn)?;
        }
        Ok(done)
    }

    fn measuring(&mut self) {
        self.inner.measuring();
    }
}

/// Where the clients meet after their warm-up: the last to arrive starts
/// the background processes' interval on its connection, the others wait
/// for it (at most [`MEET_WAIT`]).
pub struct Meeting {
    clients: usize,
    dir: PathBuf,
    server: Server,
    state: Mutex<(usize, Option<Result<Background, String>>)>,
    met: std::sync::Condvar,
}

/// How long a client waits for the others at the meeting.
const MEET_WAIT: Duration = Duration::from_secs(600);

impl Meeting {
    fn arrive(&self, conn: &mut dyn Conn) {
        let mut state = self.state.lock().expect("meeting");
        state.0 += 1;
        if state.0 == self.clients {
            drop(state);
            let b = Background::start(conn, &self.dir, &self.server);
            self.state.lock().expect("meeting").1 = Some(b);
            self.met.notify_all();
            return;
        }
        let _ = self
            .met
            .wait_timeout_while(state, MEET_WAIT, |s| s.1.is_none())
            .expect("meeting");
    }
}

/// The background's side of an interval: PostgreSQL's processes with the
/// part each wrote at the first reload, or MariaDB's dump of every thread
/// that started it.
pub enum Background {
    Processes {
        dir: PathBuf,
        /// (pid, the part its first reload dump wrote).
        started: Vec<(u32, u32)>,
    },
    Threads {
        dir: PathBuf,
        pid: u32,
        owner: Option<(u32, u32)>,
        /// The part number of the dump of every thread that started it.
        started: u32,
    },
}

/// The process ids `sql` (a query of `pg_stat_activity`'s `pid`) lists.
fn pids(conn: &mut dyn Conn, sql: &str) -> Result<Vec<u32>, DbError> {
    Ok(conn
        .query_text(sql)?
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten()?.parse().ok())
        .collect())
}

/// Asks every process to reload its configuration and waits until each of
/// `before`'s (pid, part) has written a part after it; returns (pid, part
/// before, part written), leaving out a process that wrote none within
/// [`RELOAD_WAIT`] (it ended, or it is an autovacuum worker inside a table,
/// which PostgreSQL before 16 reloads only between tables): its share of
/// the interval is not counted.
fn reload_and_wait(
    conn: &mut dyn Conn,
    dir: &Path,
    before: &[(u32, u32)],
) -> Result<Vec<(u32, u32, u32)>, String> {
    conn.query_text("SELECT pg_reload_conf()")
        .map_err(|e| format!("pg_reload_conf(): {e}"))?;
    let deadline = Instant::now() + RELOAD_WAIT;
    loop {
        let now: Vec<(u32, u32)> = before
            .iter()
            .map(|&(pid, _)| (pid, instructions::latest_part(dir, OUT_PREFIX, pid)))
            .collect();
        let answered = |(_, n): &(u32, u32), (_, b): &(u32, u32)| n > b;
        if now.iter().zip(before).all(|(n, b)| answered(n, b)) || Instant::now() >= deadline {
            return Ok(now
                .into_iter()
                .zip(before)
                .filter(|(n, b)| answered(n, b))
                .map(|((pid, upto), (_, from))| (pid, *from, upto))
                .collect());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Has every thread of MariaDB server `pid` dump through vgdb (run as
/// `owner`), sending `SELECT 1` on `conn` until it is done so that a
/// thread runs to take the request; returns the dump's part number.
fn dump_all_threads(
    conn: &mut dyn Conn,
    dir: &Path,
    pid: u32,
    owner: Option<(u32, u32)>,
) -> Result<u32, String> {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("vgdb");
    cmd.arg(format!("--vgdb-prefix={}", dir.join("vgdb").display()))
        .arg(format!("--pid={pid}"))
        .arg("--max-invoke-ms=0")
        .arg("dump")
        .envs(VGDB_ENV)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    if let Some((uid, gid)) = owner {
        cmd.uid(uid).gid(gid);
    }
    let mut child = cmd.spawn().map_err(|e| format!("cannot run vgdb: {e}"))?;
    let deadline = Instant::now() + VGDB_WAIT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                if let Err(e) = conn.query_text("SELECT 1") {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("while vgdb waited: {e}"));
                }
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "vgdb got no answer from the server within {}s",
                    VGDB_WAIT.as_secs()
                ));
            }
            Err(e) => return Err(format!("vgdb: {e}")),
        }
    };
    if !status.success() {
        let mut said = String::new();
        if let Some(mut err) = child.stderr.take() {
            use std::io::Read;
            let _ = err.read_to_string(&mut said);
        }
        return Err(format!("vgdb failed ({status}): {}", said.trim()));
    }
    instructions::thread_parts_latest(dir, OUT_PREFIX, pid)
        .ok_or_else(|| "vgdb's dump wrote no file".to_string())
}

impl Background {
    /// Starts the background interval: PostgreSQL's first reload (the
    /// postmaster and every process `pg_stat_activity` lists that is not
    /// a client backend), MariaDB's first dump of every thread.
    pub fn start(conn: &mut dyn Conn, dir: &Path, server: &Server) -> Result<Background, String> {
        match *server {
            Server::Postgres { postmaster_pid } => Self::reload_start(conn, dir, postmaster_pid),
            Server::Mariadb { pid, owner } => Ok(Background::Threads {
                dir: dir.to_path_buf(),
                pid,
                owner,
                started: dump_all_threads(conn, dir, pid, owner)?,
            }),
        }
    }

    fn reload_start(
        conn: &mut dyn Conn,
        dir: &Path,
        postmaster_pid: u32,
    ) -> Result<Background, String> {
        let mut pids = pids(
            conn,
            "SELECT pid FROM pg_stat_activity WHERE backend_type <> 'client backend'",
        )
        .map_err(|e| format!("pg_stat_activity: {e}"))?;
        pids.push(postmaster_pid);
        let before: Vec<(u32, u32)> = pids
            .iter()
            .map(|&p| (p, instructions::latest_part(dir, OUT_PREFIX, p)))
            .collect();
        let started = reload_and_wait(conn, dir, &before)?
            .into_iter()
            .map(|(pid, _, part)| (pid, part))
            .collect();
        Ok(Background::Processes {
            dir: dir.to_path_buf(),
            started,
        })
    }

    /// Ends the interval (the second reload, or dump of every thread);
    /// returns the background's instructions in it and how many processes
    /// (threads) that covers, and, for MariaDB, the part that started it.
    pub fn finish(self, conn: &mut dyn Conn) -> Result<((u64, u32), Option<u32>), String> {
        let (dir, started) = match self {
            Background::Processes { dir, started } => (dir, started),
            Background::Threads {
                dir,
                pid,
                owner,
                started,
            } => {
                let ended = dump_all_threads(conn, &dir, pid, owner)?;
                let threads = instructions::thread_parts(&dir, OUT_PREFIX, pid, started, ended)?;
                let background =
                    instructions::background_threads(&threads, started, ended, MARIADB_COMMAND_FN);
                return Ok((background, Some(started)));
            }
        };
        let alive: Vec<(u32, u32)> = started
            .iter()
            .copied()
            .filter(|(pid, _)| Path::new(&format!("/proc/{pid}")).exists())
            .collect();
        let ended = reload_and_wait(conn, &dir, &alive)?;
        let mut total = 0;
        for &(pid, from, upto) in &ended {
            let parts = instructions::parts(&dir, OUT_PREFIX, pid)?;
            total += instructions::parts_between(&parts, from, upto, &[RELOAD_FN]);
        }
        Ok(((total, ended.len() as u32), None))
    }
}

/// How a step is counted: the server's callgrind directory and kind, the
/// events each client runs measured and before.
#[derive(Clone, Debug)]
pub struct Counting {
    pub dir: PathBuf,
    pub server: Server,
    pub events_per_client: u64,
    pub warmup_events: u64,
}

impl Counting {
    /// Runs a step of `plan.threads` clients, each `events_per_client`
    /// events after its warm-up, and counts the server's instructions in
    /// the interval. The step's result is the runner's; the count is an
    /// error with the reason when it could not be had.
    pub fn run(
        &self,
        plan: &StepPlan,
        connector: &dyn Connector,
        work: &dyn StepWork,
        cancel: &std::sync::atomic::AtomicBool,
        on_progress: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<(StepResult, Result<StepInstructions, String>), DbError> {
        let pids = Arc::new(Mutex::new(Vec::new()));
        let meeting = Arc::new(Meeting {
            clients: plan.threads.max(1) as usize,
            dir: self.dir.clone(),
            server: self.server.clone(),
            state: Mutex::new((0, None)),
            met: std::sync::Condvar::new(),
        });
        let wrapped = |client: u32| -> Box<dyn ClientWork> {
            Box::new(Marked {
                inner: work.client(client),
                warmup_events: self.warmup_events,
                events: self.events_per_client,
                done: 0,
                pids: pids.clone(),
                meeting: meeting.clone(),
            })
        };
        let schedule = Schedule {
            events_per_client: Some(self.events_per_client),
            ..Schedule::PLAIN
        };
        self.server.wait_reaped(connector)?;
        let result = run_step(plan, schedule, connector, &wrapped, cancel, on_progress)?;
        let background = meeting.state.lock().expect("meeting").1.take();
        let count = (|| {
            let mut control = connector.connect().map_err(|e| e.to_string())?;
            let (background, started) = background
                .ok_or("the clients never all arrived to start the interval")??
                .finish(control.as_mut())?;
            let (marker, left_out) = (self.server.marker_fn(), self.server.client_left_out());
            let clients: Vec<ClientCount> = match (&self.server, started) {
                (Server::Mariadb { pid, .. }, Some(started)) => {
                    instructions::client_threads(&self.dir, OUT_PREFIX, *pid, started, marker)?
                }
                _ => pids
                    .lock()
                    .expect("pids")
                    .iter()
                    .map(|&pid| {
                        let parts = instructions::parts(&self.dir, OUT_PREFIX, pid)?;
                        instructions::client_interval(&parts, marker, left_out)
                            .map_err(|e| format!("backend {pid}: {e}"))
                    })
                    .collect::<Result<_, String>>()?,
            };
            if clients.len() != meeting.clients {
                return Err(format!(
                    "{} client connection(s) counted where {} ran",
                    clients.len(),
                    meeting.clients
                ));
            }
            let counts = result.counts;
            Ok(instructions::assemble(
                &clients,
                counts.events,
                counts.statements,
                background,
            ))
        })();
        Ok((result, count))
    }
}
