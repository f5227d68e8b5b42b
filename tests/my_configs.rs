//! Named MySQL/MariaDB configs on a real MariaDB: a variant is in effect on
//! the server tidemark starts (the server's own `@@` variables say so), a
//! config set runs each of its configs as a target, and a setting or config
//! the server would not run with fails in seconds, on one line naming the
//! setting and the target, before any server starts.

mod common;

use std::path::Path;
use std::time::Duration;

use common::cli_runs::*;
use common::*;
use tidemark::db::Conn;
use tidemark::db::mysql::MyConn;

/// `SELECT @@a, @@b, …` on `conn`, as text.
fn globals(conn: &mut MyConn, names: &[&str]) -> Vec<String> {
    let sql = format!(
        "SELECT {}",
        names
            .iter()
            .map(|n| format!("@@GLOBAL.{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    conn.query_text(&sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .remove(0)
        .into_iter()
        .map(|v| v.unwrap_or_default())
        .collect()
}

#[test]
fn a_config_variant_is_in_effect_on_the_server() {
    let dir = server_tempdir();
    let mut server = start_mariadb(
        dir.path(),
        "bl1_sync0_dw0",
        &[("innodb_io_capacity", "1234")],
    );
    let mut conn = MyConn::connect(&server.connect_options()).unwrap();
    let names = [
        "log_bin",
        "binlog_format",
        "sync_binlog",
        "innodb_flush_log_at_trx_commit",
        "innodb_doublewrite",
        "innodb_flush_method",
        "innodb_io_capacity",
    ];
    assert_eq!(
        globals(&mut conn, &names),
        ["1", "ROW", "0", "2", "0", "O_DIRECT", "1234"],
        "{names:?}"
    );
    let info = server.info("mariadb@system+bl1_sync0_dw0", "x").unwrap();
    assert_eq!(info.config_name.as_deref(), Some("bl1_sync0_dw0"));
    assert!(
        info.config_text
            .contains("# --- config bl1_sync0_dw0: binary log on"),
        "{}",
        info.config_text
    );
    // A tmpdir of its own: a server deletes the `#sql*` files in its tmpdir
    // when it starts, which in a shared /tmp are other servers' tables.
    let tmpdir = globals(&mut conn, &["tmpdir"]).remove(0);
    assert!(
        tmpdir.starts_with("/tmp/tidemark-mytmp-") && Path::new(&tmpdir).is_dir(),
        "{tmpdir}"
    );
    drop(conn);
    server.stop().unwrap();
    assert!(!Path::new(&tmpdir).exists(), "{tmpdir} is removed");

    // The base of the same family: durable, no binary log, doublewrite on;
    // z12a changes the flush method only.
    let dir = server_tempdir();
    let mut server = start_mariadb(dir.path(), "z12a", &[]);
    let mut conn = MyConn::connect(&server.connect_options()).unwrap();
    assert_eq!(
        globals(&mut conn, &names[..6]),
        ["0", "MIXED", "0", "1", "1", "O_DIRECT_NO_FSYNC"],
        "{names:?}"
    );
    drop(conn);
    server.stop().unwrap();
}

#[test]
fn a_config_set_runs_each_config_as_a_target() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let o = run_tidemark(&[
        "run",
        "--results",
        results,
        "--target",
        "mariadb@system:innodb_io_capacity=1500",
        "--config-set",
        "my-flush-method",
        "--tests",
        "point-query",
        "--table-size",
        "500",
        "--read-secs",
        "0.3",
        "--warmup-secs",
        "0",
        "--postwrite-scale",
        "0",
    ]);
    assert!(o.status.success(), "run failed: {}", stderr(&o));
    assert!(
        mysqld_pids_mentioning(results).is_empty(),
        "no server is left behind"
    );
    let doc = export_json(results);
    let targets = doc["runs"][0]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    for (t, (config, method)) in targets
        .iter()
        .zip([("z12a", "O_DIRECT_NO_FSYNC"), ("z12b", "O_DIRECT")])
    {
        assert_eq!(t["config_name"], config, "{t}");
        assert_eq!(
            t["spec"],
            format!("mariadb@system+{config}:innodb_io_capacity=1500")
        );
        assert!(
            t["label"]
                .as_str()
                .unwrap()
                .ends_with(&format!(".{config}:innodb_io_capacity=1500")),
            "{}",
            t["label"]
        );
        // What the server reported as set by the option file.
        assert_eq!(t["settings"]["innodb_flush_method"], method, "{t}");
        assert_eq!(t["settings"]["innodb_io_capacity"], "1500", "{t}");
        assert_eq!(t["steps"][0]["status"], "ok");
    }
}

#[test]
fn invalid_settings_fail_in_seconds_naming_the_setting_and_the_target() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--target", "mariadb@system:no_such_var=1"],
            &[
                "target mariadb@system:no_such_var=1: MariaDB",
                "unknown variable 'no_such_var=1'",
                "(from the target's :no_such_var=1)",
            ],
        ),
        (
            // A boolean option given an enum value: only a warning to MariaDB.
            &["--target", "mariadb@system:innodb_doublewrite=DETECT_ONLY"],
            &[
                "target mariadb@system:innodb_doublewrite=DETECT_ONLY: ",
                "invalid value 'DETECT_ONLY'",
                "innodb-doublewrite",
            ],
        ),
        (
            &[
                "--target",
                "mariadb@system",
                "-c",
                "innodb_flush_log_at_trx_commit=7",
            ],
            &[
                "target mariadb@system: ",
                "adjusted to 3",
                "(from -c innodb_flush_log_at_trx_commit=7)",
            ],
        ),
        (
            &[
                "--target",
                "mariadb@system",
                "-c",
                "innodb_flush_method=banana",
            ],
            &[
                "target mariadb@system: ",
                "Error while setting value 'banana'",
                "(from -c innodb_flush_method=banana)",
            ],
        ),
        (
            &["--target", "mariadb@system+bl1_sync1_dwDO"],
            &[
                "target mariadb@system+bl1_sync1_dwDO: config bl1_sync1_dwDO needs MySQL 8.0.30 or later",
                "(it sets innodb_doublewrite = DETECT_ONLY), and this is MariaDB 10.",
                "--config-set my-durability-nodo",
            ],
        ),
        (
            // The set's first config the server lacks stops the run.
            &[
                "--target",
                "mariadb@system",
                "--config-set",
                "my-durability",
            ],
            &["target mariadb@system+bl0_sync0_dwDO: config bl0_sync0_dwDO needs MySQL 8.0.30"],
        ),
        (
            &[
                "--target",
                "mariadb@system",
                "--config-set",
                "pg-durability",
            ],
            &[
                "--config-set pg-durability is for PostgreSQL targets, and target 'mariadb@system' is MariaDB: use one of my-",
            ],
        ),
        (
            &["--target", "mariadb@system+z99"],
            &["unknown config 'z99'", "bl0_sync0_dw0"],
        ),
    ];
    for (extra, wants) in cases {
        let mut args = vec!["run", "--results", results, "--tests", "point-query"];
        args.extend(extra.iter());
        // It must fail before anything starts.
        fails_in_one_line(&args, wants, Duration::from_secs(5));
        assert!(
            mysqld_pids_mentioning(results).is_empty(),
            "no server was started for {args:?}"
        );
    }
    let servers = dir.path().join("results/servers");
    assert!(
        !servers.exists() || std::fs::read_dir(&servers).unwrap().next().is_none(),
        "no data directory was created"
    );
}
