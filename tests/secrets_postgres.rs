//! A database password never reaches a file or an output line: runs against
//! a real PostgreSQL with password (SCRAM) authentication, with the password
//! in the target URL, in `PGPASSWORD`, in `~/.pgpass` and in a variable the
//! URL names; then every file under the results directory (the store's
//! bytes, reports, logs) and every line tidemark printed is searched for it.

mod common;

use std::path::Path;
use std::process::Output;

use common::cli_runs::short_run;
use common::*;
use tidemark::db::Conn;
use tidemark::db::postgres::PgConn;

const PASSWORD: &str = "Zq7-SecretPw-4242";

fn assert_no_password_in_output(o: &Output, what: &str) {
    for (name, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        assert!(
            !String::from_utf8_lossy(bytes).contains(PASSWORD),
            "{what}: {name} shows the password:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn a_password_is_in_no_file_and_no_output_line() {
    let dir = server_tempdir();
    let server = start_pg(dir.path(), &[]);
    let opts = server.connect_options();
    let mut admin = PgConn::connect(&opts).unwrap();
    admin
        .execute_text("SET password_encryption = 'scram-sha-256'")
        .unwrap();
    admin
        .execute_text(&format!("CREATE ROLE bench LOGIN PASSWORD '{PASSWORD}'"))
        .unwrap();
    admin
        .execute_text("CREATE DATABASE benchdb OWNER bench")
        .unwrap();
    let port = opts.port;
    let with_password = format!("postgres://bench:{PASSWORD}@127.0.0.1:{port}/benchdb");
    let without = format!("postgres://bench@127.0.0.1:{port}/benchdb");
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let mut outputs = Vec::new();

    // The password in the URL.
    let o = run_tidemark(&short_run(results, "point-query", &[&with_password], &[]));
    assert_success(&o);
    outputs.push(("run with the password in the URL", o));

    // Without it, the server refuses: the password really is checked.
    let o = tidemark()
        .args(short_run(results, "point-query", &[&without], &[]))
        .env_remove("PGPASSWORD")
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(!o.status.success(), "a run without the password got in");
    assert!(stderr(&o).contains("password"), "{}", stderr(&o));

    // From PGPASSWORD, from ~/.pgpass and from a variable the URL names.
    let o = tidemark()
        .args(short_run(
            results,
            "point-query",
            &[&without],
            &["--drop-existing"],
        ))
        .env("PGPASSWORD", PASSWORD)
        .output()
        .unwrap();
    assert_success(&o);
    outputs.push(("run with PGPASSWORD", o));
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let pgpass = home.join(".pgpass");
    std::fs::write(
        &pgpass,
        format!("127.0.0.1:{port}:benchdb:bench:{PASSWORD}\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = tidemark()
        .args(short_run(
            results,
            "point-query",
            &[&without],
            &["--drop-existing"],
        ))
        .env_remove("PGPASSWORD")
        .env("HOME", &home)
        .output()
        .unwrap();
    assert_success(&o);
    outputs.push(("run with ~/.pgpass", o));
    let named = format!("{without}?password_env=TIDEMARK_BENCH_PW");
    let o = tidemark()
        .args(short_run(
            results,
            "point-query",
            &[&named],
            &["--drop-existing"],
        ))
        .env_remove("PGPASSWORD")
        .env("TIDEMARK_BENCH_PW", PASSWORD)
        .output()
        .unwrap();
    assert_success(&o);
    outputs.push(("run with password_env", o));

    // A run that fails after the URL was read, and clap's own error.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let bad = format!("postgres://bench:{PASSWORD}@127.0.0.1:{closed_port}/benchdb");
    let o = run_tidemark(&short_run(results, "point-query", &[&bad], &[]));
    assert!(!o.status.success());
    outputs.push(("run of an unreachable URL", o));
    let o = run_tidemark(&[
        "run",
        "--results",
        results,
        "--no-such-flag",
        &with_password,
    ]);
    assert!(!o.status.success());
    outputs.push(("clap error", o));

    // Every way the stored runs are shown.
    let report_dir = dir.path().join("results/report-out");
    let report_dir = report_dir.to_str().unwrap();
    for args in [
        vec!["runs", "--results", results],
        vec!["export", "--format", "json", "--results", results],
        vec!["export", "--format", "csv", "--results", results],
        vec!["report", "--results", results, "-o", report_dir],
    ] {
        let o = run_tidemark(&args);
        assert_success(&o);
        outputs.push(("a reading verb", o));
    }
    for (what, o) in &outputs {
        assert_no_password_in_output(o, what);
    }
    let results_dir = Path::new(results);
    assert!(results_dir.join("results.db").is_file());
    assert!(results_dir.join("reports/run-1/report.md").is_file());
    let holding = files_holding(results_dir, PASSWORD.as_bytes());
    assert!(holding.is_empty(), "files hold the password: {holding:?}");
    // What the store shows instead.
    let o = run_tidemark(&["export", "--format", "json", "--results", results]);
    assert!(
        stdout(&o).contains("postgres://bench:***@127.0.0.1"),
        "the command line keeps the URL, its password redacted"
    );
}
