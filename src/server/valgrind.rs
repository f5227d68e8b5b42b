//! A managed PostgreSQL server under Valgrind's callgrind (`run
//! --instructions`), and how a step's measured interval is cut out of its
//! processes' instruction counts.
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
//! What remains uncounted or noisy, measured here: opportunistic page
//! pruning (`heap_page_prune`) by reads after writes depends on the xmin
//! horizon at the moment (up to 1.6 % of a point query between identical
//! servers when no VACUUM ran between), and whether a backend finds the
//! next query already arrived (`WaitEventSetWait`, ~140 instructions, 0.3 %
//! of a point query).
//!
//! The counts come from [`crate::metrics::instructions`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::db::{Conn, Connector, DbError, ErrorKind, first_value};
use crate::metrics::instructions::{self, ClientCount};
use crate::record::StepInstructions;
use crate::runner::{ClientWork, Done, Progress, StepPlan, StepResult, run_step_counted};

/// The name callgrind's files start with.
pub const OUT_PREFIX: &str = "callgrind.out";
/// The function each client's marker query enters.
pub const MARKER_FN: &str = "pg_backend_pid";
/// The marker query.
pub const MARKER_SQL: &str = "SELECT pg_backend_pid()";
/// The function every process enters on a configuration reload.
pub const RELOAD_FN: &str = "ProcessConfigFile";
/// How long background processes may take to answer a reload.
const RELOAD_WAIT: Duration = Duration::from_secs(20);

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

fn marker(conn: &mut dyn Conn) -> Result<u32, DbError> {
    let rows = conn.query_text(MARKER_SQL)?;
    first_value(rows)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| {
            DbError::new(
                ErrorKind::Other,
                "",
                "the marker query returned no backend pid",
            )
        })
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
        marker(conn)?;
        let pid = marker(conn)?;
        self.pids.lock().expect("pids").push(pid);
        Ok(())
    }

    fn event(&mut self, conn: &mut dyn Conn) -> Result<Done, DbError> {
        let done = self.inner.event(conn)?;
        self.done += 1;
        if self.done == self.events {
            marker(conn)?;
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
    postmaster_pid: u32,
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
            let b = Background::start(conn, &self.dir, self.postmaster_pid);
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

/// The background processes' side of an interval: their parts at its
/// first reload.
pub struct Background {
    dir: PathBuf,
    /// (pid, the part its first reload dump wrote).
    started: Vec<(u32, u32)>,
}

/// Asks every process to reload its configuration and waits until each of
/// `pids` has written a part after `before`; returns the part each wrote,
/// leaving out a process that wrote none within [`RELOAD_WAIT`] (it ended,
/// or it is an autovacuum worker inside a table, which PostgreSQL before 16
/// reloads only between tables): its share of the interval is not counted.
fn reload_and_wait(
    conn: &mut dyn Conn,
    dir: &Path,
    before: &[(u32, u32)],
) -> Result<Vec<(u32, u32)>, String> {
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
                .map(|(n, _)| n)
                .collect());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Background {
    /// The first reload: the postmaster (`postmaster_pid`) and every
    /// process `pg_stat_activity` lists that is not a client backend.
    pub fn start(
        conn: &mut dyn Conn,
        dir: &Path,
        postmaster_pid: u32,
    ) -> Result<Background, String> {
        let rows = conn
            .query_text("SELECT pid FROM pg_stat_activity WHERE backend_type <> 'client backend'")
            .map_err(|e| format!("pg_stat_activity: {e}"))?;
        let mut pids: Vec<u32> = rows
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten()?.parse().ok())
            .collect();
        pids.push(postmaster_pid);
        let before: Vec<(u32, u32)> = pids
            .iter()
            .map(|&p| (p, instructions::latest_part(dir, OUT_PREFIX, p)))
            .collect();
        let started = reload_and_wait(conn, dir, &before)?;
        Ok(Background {
            dir: dir.to_path_buf(),
            started,
        })
    }

    /// The second reload; returns the instructions of the background
    /// processes between the two and how many processes that covers.
    pub fn finish(self, conn: &mut dyn Conn) -> Result<(u64, u32), String> {
        let alive: Vec<(u32, u32)> = self
            .started
            .iter()
            .copied()
            .filter(|(pid, _)| Path::new(&format!("/proc/{pid}")).exists())
            .collect();
        let ended = reload_and_wait(conn, &self.dir, &alive)?;
        let mut total = 0;
        for &(pid, upto) in &ended {
            let from = alive.iter().find(|(p, _)| *p == pid).map_or(0, |a| a.1);
            let parts = instructions::parts(&self.dir, OUT_PREFIX, pid)?;
            total += instructions::parts_between(&parts, from, upto, RELOAD_FN);
        }
        Ok((total, ended.len() as u32))
    }
}

/// How a step is counted: the server's callgrind directory and
/// postmaster, the events each client runs measured and before.
#[derive(Clone, Debug)]
pub struct Counting {
    pub dir: PathBuf,
    pub postmaster_pid: u32,
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
        make_work: &(dyn Fn(u32) -> Box<dyn ClientWork> + Sync),
        cancel: &std::sync::atomic::AtomicBool,
        on_progress: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<(StepResult, Result<StepInstructions, String>), DbError> {
        let pids = Arc::new(Mutex::new(Vec::new()));
        let meeting = Arc::new(Meeting {
            clients: plan.threads.max(1) as usize,
            dir: self.dir.clone(),
            postmaster_pid: self.postmaster_pid,
            state: Mutex::new((0, None)),
            met: std::sync::Condvar::new(),
        });
        let wrapped = |client: u32| -> Box<dyn ClientWork> {
            Box::new(Marked {
                inner: make_work(client),
                warmup_events: self.warmup_events,
                events: self.events_per_client,
                done: 0,
                pids: pids.clone(),
                meeting: meeting.clone(),
            })
        };
        let result = run_step_counted(
            plan,
            self.events_per_client,
            connector,
            &wrapped,
            cancel,
            on_progress,
            &|| Ok(()),
        )?;
        let background = meeting.state.lock().expect("meeting").1.take();
        let count = (|| {
            let mut control = connector.connect().map_err(|e| e.to_string())?;
            let background = background
                .ok_or("the clients never all arrived to start the interval")??
                .finish(control.as_mut())?;
            let clients: Vec<ClientCount> = pids
                .lock()
                .expect("pids")
                .iter()
                .map(|&pid| {
                    let parts = instructions::parts(&self.dir, OUT_PREFIX, pid)?;
                    instructions::client_interval(&parts, MARKER_FN, RELOAD_FN)
                        .map_err(|e| format!("backend {pid}: {e}"))
                })
                .collect::<Result<_, String>>()?;
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
