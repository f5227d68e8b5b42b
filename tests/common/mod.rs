//! Helpers shared by the integration tests: real managed servers in temp
//! directories, the tidemark binary and headless Chromium ([`chromium`]). The checks several tests make
//! alike live in the submodules: CLI runs and Ctrl-C ([`cli_runs`]), the
//! Insert Benchmark steps ([`ibench_checks`]), headless Chromium
//! ([`chromium`]), the samplers
//! ([`sampler_checks`]) and the sysbench microbenchmarks
//! ([`sysbench_checks`]).
#![allow(dead_code)]

pub mod chromium;
pub mod cli_runs;
pub mod ibench_checks;
pub mod pg_source;
pub mod sampler_checks;
pub mod sysbench_checks;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tidemark::db::Conn;
#[allow(unused_imports)] // not every test binary uses it
pub use tidemark::db::postgres::PgConnector;
use tidemark::server::mysql::{Flavor, ManagedMyOptions, ManagedMysql, find_binaries};
use tidemark::server::postgres::{ManagedPgOptions, ManagedPostgres, base_config, find_bindir};

static SERIAL: Mutex<()> = Mutex::new(());

/// Takes this test binary's turn: tests that measure rates or read
/// host-wide counters and the process's own CPU hold it, so one test's
/// server does not make the machine busy under another's measurement.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A temp dir that the unprivileged server user can reach (tests run as root).
pub fn server_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("tidemark-test-")
        .tempdir_in("/tmp")
        .expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Starts a managed PostgreSQL with the quick base config plus `overrides`.
pub fn start_pg(dir: &Path, overrides: &[(&str, &str)]) -> ManagedPostgres {
    let bins = find_bindir(None).expect("PostgreSQL binaries (apt-get install postgresql)");
    ManagedPostgres::start(ManagedPgOptions {
        bindir: bins,
        datadir: dir.join("data"),
        port: None,
        config_name: "base".into(),
        base_config: base_config("quick").expect("quick config"),
        overrides: overrides
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        dbname: "tidemark".into(),
        start_timeout: Duration::from_secs(120),
        callgrind_dir: None,
    })
    .expect("managed PostgreSQL starts")
}

/// Starts a managed MariaDB (quick profile, named `config`) plus `overrides`.
pub fn start_mariadb(dir: &Path, config: &str, overrides: &[(&str, &str)]) -> ManagedMysql {
    let bins = find_binaries(None, Some(Flavor::MariaDb))
        .expect("MariaDB server binaries (apt-get install mariadb-server)");
    let mut opts = ManagedMyOptions::for_profile(bins, dir.join("data"), "quick", config).unwrap();
    opts.overrides = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ManagedMysql::start(opts).expect("managed MariaDB starts")
}

/// The first column of the first row of `sql`, as text.
pub fn scalar(conn: &mut dyn Conn, sql: &str) -> String {
    conn.query_text(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
        .unwrap_or_default()
}

pub fn scalar_i64(conn: &mut dyn Conn, sql: &str) -> i64 {
    let s = scalar(conn, sql);
    s.parse().unwrap_or_else(|_| panic!("{sql} returned {s:?}"))
}

/// The tidemark binary built for these tests.
pub fn tidemark() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tidemark"))
}

/// Runs tidemark with `args` and returns its output.
pub fn run_tidemark<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    tidemark().args(args).output().expect("tidemark runs")
}

/// `o` is of a run that succeeded; the failure shows both streams.
pub fn assert_success(o: &Output) {
    assert!(
        o.status.success(),
        "run failed: {}\n{}",
        stderr(o),
        stdout(o)
    );
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Pids of postgres processes whose command line mentions `needle`.
pub fn postgres_pids_mentioning(needle: &str) -> Vec<u32> {
    pids_mentioning("postgres", needle)
}

/// Pids of mariadbd/mysqld processes whose command line mentions `needle`.
pub fn mysqld_pids_mentioning(needle: &str) -> Vec<u32> {
    let mut pids = pids_mentioning("mariadbd", needle);
    pids.extend(pids_mentioning("mysqld", needle));
    pids
}

/// Pids of processes whose command line mentions `program` and `needle`.
pub fn pids_mentioning(program: &str, needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(program) && text.contains(needle) {
            pids.push(pid);
        }
    }
    pids
}

/// The results directory argument for a test.
pub fn results_arg(dir: &Path) -> PathBuf {
    dir.join("results")
}

/// The URL of a managed PostgreSQL as an external target: user `tidemark`
/// with the server's own password (from the tool's API), over TCP.
pub fn pg_url(opts: &tidemark::db::postgres::PgConnectOptions) -> String {
    format!(
        "postgres://{}:{}@127.0.0.1:{}/{}",
        opts.user,
        opts.password.as_deref().unwrap_or_default(),
        opts.port,
        opts.dbname
    )
}

/// The URL of a managed MariaDB as an external target: user `tidemark`
/// with the server's own password (from the tool's API), over TCP.
pub fn mariadb_url(opts: &tidemark::db::mysql::MyConnectOptions) -> String {
    format!(
        "mariadb://{}:{}@127.0.0.1:{}/{}",
        opts.user,
        opts.password.as_deref().unwrap_or_default(),
        opts.port,
        opts.dbname
    )
}

/// The files under `dir` (recursively, links not followed) whose bytes
/// contain `needle`: where a secret must not be.
pub fn files_holding(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                todo.push(e.path());
            } else if t.is_file()
                && std::fs::read(e.path())
                    .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
            {
                found.push(e.path());
            }
        }
    }
    found
}

/// A private Maven repository for a test that spoils an artifact: Maven's
/// own plugins copied from the shared repository `shared` (a fresh
/// repository spends 30–40 s downloading them on every first call), the
/// artifact groups under `skip` (`ch`, `org/kill-bill`) left out.
pub fn private_maven_repo(shared: &Path, into: &Path, skip: &[&str]) {
    fn copy(from: &Path, to: &Path, rel: &Path, skip: &[&str]) {
        if skip.iter().any(|s| rel == Path::new(s)) {
            return;
        }
        let Ok(entries) = std::fs::read_dir(from) else {
            return;
        };
        std::fs::create_dir_all(to).unwrap();
        for entry in entries {
            let entry = entry.unwrap();
            let (src, dst) = (entry.path(), to.join(entry.file_name()));
            if entry.file_type().unwrap().is_dir() {
                copy(&src, &dst, &rel.join(entry.file_name()), skip);
            } else {
                std::fs::copy(&src, &dst).unwrap();
            }
        }
    }
    copy(shared, into, Path::new(""), skip);
}
