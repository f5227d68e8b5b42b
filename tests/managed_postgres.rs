//! Starts real PostgreSQL servers through `ManagedPostgres` and checks that
//! they come up configured as asked, that bad inputs fail fast with one-line
//! errors, and that no server outlives its handle.
//!
//! Needs PostgreSQL server binaries (`find_bindir(None)` must find them).

mod common;

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::kill;
use nix::unistd::{Pid, Uid};
use tidemark::db::Conn;
use tidemark::db::postgres::PgConn;
use tidemark::server::postgres::{ManagedPgOptions, ManagedPostgres, find_bindir};

/// A scratch directory under /tmp that the server user can enter.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("tidemark-pg-test-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn options(dir: &Path) -> ManagedPgOptions {
    let bindir = find_bindir(None).expect("PostgreSQL binaries");
    ManagedPgOptions::for_profile(bindir, dir.join("pgdata"), "quick").unwrap()
}

fn assert_gone(pid: u32) {
    assert!(
        kill(Pid::from_raw(pid as i32), None).is_err(),
        "postgres pid {pid} is still there"
    );
}

fn show(conn: &mut PgConn, name: &str) -> String {
    let rows = conn.query_text(&format!("SHOW {name}")).unwrap();
    rows[0][0].clone().unwrap()
}

#[test]
fn starts_configured_reports_info_and_stops() {
    let dir = scratch();
    let mut opts = options(dir.path());
    opts.overrides = vec![("work_mem".into(), "8MB".into())];
    let mut pg = ManagedPostgres::start(opts).unwrap();
    let pid = pg.pid();
    assert!(pg.is_running());

    let info = pg.info("pg@system", "pg.quick").unwrap();
    assert!(info.version.starts_with("PostgreSQL "), "{}", info.version);
    assert_eq!(info.version_number, pg.binaries().version);
    assert!(info.managed);
    assert_eq!(info.dbms, "postgres");
    assert_eq!(info.config_name.as_deref(), Some("quick"));
    let setting = |name: &str| {
        info.settings
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(setting("port"), Some(pg.port().to_string()));
    assert_eq!(setting("shared_buffers").as_deref(), Some("256MB"));
    assert_eq!(setting("work_mem").as_deref(), Some("8MB"));
    assert!(
        info.config_text.ends_with("work_mem = '8MB'\n"),
        "{}",
        info.config_text
    );
    assert_eq!(info.extra["port"], pg.port());
    assert_eq!(info.extra["datadir"], pg.datadir().to_str().unwrap());

    let mut tcp = PgConn::connect(&pg.connect_options()).unwrap();
    assert_eq!(show(&mut tcp, "work_mem"), "8MB");
    assert_eq!(show(&mut tcp, "max_parallel_workers"), "0");
    let db = tcp.query_text("SELECT current_database()").unwrap();
    assert_eq!(db[0][0].as_deref(), Some("tidemark"));
    drop(tcp);
    let mut unix = PgConn::connect(&pg.socket_options()).unwrap();
    assert_eq!(show(&mut unix, "listen_addresses"), "127.0.0.1");
    drop(unix);

    pg.stop().unwrap();
    assert!(!pg.is_running());
    assert_gone(pid);
    pg.stop().unwrap();
}

#[test]
fn dropping_the_handle_stops_the_server() {
    let dir = scratch();
    let pg = ManagedPostgres::start(options(dir.path())).unwrap();
    let pid = pg.pid();
    assert!(kill(Pid::from_raw(pid as i32), None).is_ok());
    drop(pg);
    assert_gone(pid);
}

#[test]
fn unknown_setting_fails_fast() {
    let dir = scratch();
    let mut opts = options(dir.path());
    let version = opts.bindir.version.clone();
    opts.overrides = vec![
        ("work_mem".into(), "8MB".into()),
        ("foo".into(), "1".into()),
    ];
    let started = Instant::now();
    let err = ManagedPostgres::start(opts).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "unknown PostgreSQL setting 'foo' for {version} (from -c foo=1): check the name with \
             `postgres --describe-config`"
        )
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    // Rejected before initdb: nothing was initialised.
    assert!(!dir.path().join("pgdata/PG_VERSION").exists());
}

#[test]
fn developer_settings_are_accepted_and_bad_values_rejected() {
    let dir = scratch();
    let mut opts = options(dir.path());
    opts.overrides = vec![("trace_sort".into(), "on".into())];
    let mut pg = ManagedPostgres::start(opts).unwrap();
    assert_eq!(
        show(
            &mut PgConn::connect(&pg.connect_options()).unwrap(),
            "trace_sort"
        ),
        "on"
    );
    pg.stop().unwrap();

    let dir = scratch();
    let mut opts = options(dir.path());
    opts.overrides = vec![("work_mem".into(), "banana".into())];
    let err = ManagedPostgres::start(opts).unwrap_err().to_string();
    assert!(err.contains("rejected the configuration in"), "{err}");
    assert!(
        err.contains(r#"invalid value for parameter "work_mem": "banana""#),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

#[test]
fn port_in_use_is_refused() {
    let dir = scratch();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let mut opts = options(dir.path());
    opts.port = Some(port);
    let err = ManagedPostgres::start(opts).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "port {port} on 127.0.0.1 is already in use: pass another --port, or omit it to \
             pick a free one"
        )
    );
}

#[test]
fn bindir_without_postgres_is_refused() {
    let dir = scratch();
    let err = find_bindir(Some(dir.path())).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "--pg-bindir {} has no postgres binary: point it at the bin/ directory of a \
             PostgreSQL install or build",
            dir.path().display()
        )
    );
}

#[test]
fn unreachable_data_directory_is_relocated_when_root() {
    if !Uid::effective().is_root() {
        return;
    }
    // A directory only root may enter, like root's home.
    let private = tempfile::Builder::new()
        .prefix("tidemark-pg-private-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in("/tmp")
        .unwrap();
    let requested = private.path().join("pgdata");
    let mut pg = ManagedPostgres::start(options(private.path())).unwrap();
    let datadir = pg.datadir().to_path_buf();
    assert!(
        datadir.starts_with("/var/tmp/tidemark"),
        "{}",
        datadir.display()
    );
    assert!(datadir.join("PG_VERSION").exists());
    assert_eq!(pg.log_path(), private.path().join("pgdata.log"));
    let info = pg.info("pg@system", "pg.quick").unwrap();
    assert_eq!(info.extra["requested_datadir"], requested.to_str().unwrap());
    assert_eq!(info.extra["datadir"], datadir.to_str().unwrap());
    pg.stop().unwrap();
    assert!(!datadir.exists());
}

#[test]
fn a_deep_data_directory_gets_a_short_socket_directory() {
    let dir = scratch();
    let deep = dir
        .path()
        .join("a-results-directory-with-a-long-name/and-another-level-below-it");
    let mut pg = ManagedPostgres::start(options(&deep)).unwrap();
    let socket = pg.socket_options();
    assert!(
        socket.host.starts_with("/tmp/tidemark-pg-"),
        "{}",
        socket.host
    );
    let mut unix = PgConn::connect(&socket).unwrap();
    assert_eq!(show(&mut unix, "unix_socket_directories"), socket.host);
    drop(unix);
    pg.stop().unwrap();
    assert!(!Path::new(&socket.host).exists());
}

#[test]
fn only_tidemark_gets_in() {
    let dir = scratch();
    let pg = ManagedPostgres::start(options(dir.path())).unwrap();
    let good = pg.connect_options();
    let password = good
        .password
        .clone()
        .expect("a managed server has a password");
    assert!(password.len() >= 32, "a long random password");
    let refused = |opts: &tidemark::db::postgres::PgConnectOptions, why: &str| {
        let err = PgConn::connect(opts)
            .err()
            .unwrap_or_else(|| panic!("{why}: let in"));
        assert!(
            err.to_string().contains("password") || err.to_string().contains("28P01"),
            "{why}: {err}"
        );
    };
    let mut no_password = good.clone();
    no_password.password = None;
    refused(&no_password, "TCP without a password");
    let mut wrong = good.clone();
    wrong.password = Some("tidemark".into());
    refused(&wrong, "TCP with a wrong password");
    let mut socket = pg.socket_options();
    socket.password = None;
    refused(&socket, "the unix socket without a password");
    let mut other_role = socket.clone();
    other_role.user = "postgres".into();
    assert!(
        PgConn::connect(&other_role).is_err(),
        "role postgres let in"
    );
    PgConn::connect(&pg.socket_options()).expect("tidemark's credentials work on the socket");

    // The stock client, as another local program would try it.
    let psql = pg.binaries().bindir.join("psql");
    if psql.exists() {
        for host in [pg.socket_options().host, "127.0.0.1".to_string()] {
            let out = std::process::Command::new(&psql)
                .args(["-w", "-h", &host, "-p", &pg.port().to_string()])
                .args(["-U", "tidemark", "-d", "postgres", "-c", "SELECT 1"])
                .env_remove("PGPASSWORD")
                .output()
                .unwrap();
            assert!(!out.status.success(), "psql -h {host} got in");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("password"), "psql -h {host}: {err}");
        }
    }

    // Every pg_hba line asks for the password, and no file keeps it.
    let hba = std::fs::read_to_string(pg.datadir().join("pg_hba.conf")).unwrap();
    for line in hba
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        assert!(line.trim_end().ends_with("scram-sha-256"), "{line}");
    }
    let holding = common::files_holding(dir.path(), password.as_bytes());
    assert!(holding.is_empty(), "files hold the password: {holding:?}");
    drop(pg);
}
