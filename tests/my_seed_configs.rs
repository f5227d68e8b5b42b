//! The seeds' my.cnf files as complete configs on real servers: each
//! shipped complete file starts on a MariaDB it is for (the system's 10.11,
//! and 10.2.11 and 11.4.5 installed through Maven into the shared test
//! cache) and on an Oracle MySQL it is for (5.7.29, 8.0.31, 9.7.4
//! installed into the same cache), and the server reports every value of
//! the file (`@@GLOBAL`); a config with no file for a version is refused
//! before anything starts, on one line (MySQL 5.6.24 predates the 5.6
//! file's `innodb_numa_interleave`). The MySQL 8.4 files (`cz12a`,
//! `cz12a_nocb`) are not started: no package carries an 8.4 server.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use tidemark::db::mysql::MyConn;
use tidemark::server::mysql::{
    Flavor, ManagedMyOptions, ManagedMysql, MyBinaries, find_binaries, seeds,
};
use tidemark::server::postgres::install::VersionReq;

const CACHE: &str = "/tmp/tidemark-test-cache";
const MAVEN_REPO: &str = "/tmp/tidemark-test-cache/m2";

fn tm() -> Command {
    let mut cmd = tidemark();
    cmd.env("TIDEMARK_CACHE", CACHE)
        .env("TIDEMARK_MAVEN_REPO", MAVEN_REPO);
    cmd
}

/// The binaries of MariaDB `version` from the shared cache, installed
/// first when missing.
fn installed(version: &str) -> MyBinaries {
    let o = tm()
        .args(["servers", "install", &format!("mariadb@{version}")])
        .output()
        .unwrap();
    assert!(o.status.success(), "install {version}: {}", stderr(&o));
    let req = VersionReq::parse(version).unwrap();
    let mut dirs: Vec<_> = std::fs::read_dir(Path::new(CACHE).join("mariadb"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| req.matches(&p.file_name().unwrap().to_string_lossy()))
        .collect();
    dirs.sort();
    let dir = dirs.pop().expect("the installed tree");
    find_binaries(Some(&dir), Some(Flavor::MariaDb)).unwrap()
}

/// The binaries of MySQL `version` from the shared cache, installed first
/// when missing.
fn installed_mysql(version: &str) -> MyBinaries {
    let o = tm()
        .args(["servers", "install", &format!("mysql@{version}")])
        .output()
        .unwrap();
    assert!(o.status.success(), "install {version}: {}", stderr(&o));
    let dir = Path::new(CACHE).join("mysql").join(version);
    find_binaries(Some(&dir), Some(Flavor::Mysql)).unwrap()
}

/// `1G` → `1073741824`, `5.000000` → `5`, `ON` → `1`, `OFF` → `0`; anything
/// else upper-cased.
fn normal(v: &str) -> String {
    let v = v.trim().to_ascii_uppercase();
    let scale = match v.chars().last() {
        Some('K') => 1u64 << 10,
        Some('M') => 1 << 20,
        Some('G') => 1 << 30,
        _ => 1,
    };
    if scale > 1
        && let Ok(n) = v[..v.len() - 1].parse::<u64>()
    {
        return (n * scale).to_string();
    }
    if let Ok(f) = v.parse::<f64>() {
        return f.to_string();
    }
    match v.as_str() {
        "ON" | "TRUE" => "1".into(),
        "OFF" | "FALSE" => "0".into(),
        _ => v,
    }
}

/// Options of the file that are not server variables of that name.
const NOT_VARIABLES: &[&str] = &["ssl", "log_bin", "innodb_data_file_path"];

/// What InnoDB makes of a file's value with the quick profile's 256 MB
/// buffer pool: one pool instance below 1 GB, and no more page cleaners
/// than instances (MariaDB 10.2-10.4).
const QUICK_ADJUSTS: &[(&str, &str)] = &[
    ("innodb_buffer_pool_instances", "1"),
    ("innodb_page_cleaners", "1"),
];

/// How a server writes a value back that the file spells otherwise:
/// MySQL lists sql_mode's flags in its own order.
fn same(name: &str, file: &str, server: &str) -> bool {
    if name == "sql_mode" {
        let set = |v: &str| {
            let mut f: Vec<String> = v.split(',').map(normal).collect();
            f.sort();
            f
        };
        return set(file) == set(server);
    }
    normal(file) == normal(server)
}

/// Starts `config` on `bins` and checks each setting of its file against
/// the server's `@@GLOBAL` value; returns how many it checked.
fn check_config_on(bins: &MyBinaries, config: &str) -> usize {
    let dir = server_tempdir();
    let opts =
        ManagedMyOptions::for_profile(bins.clone(), dir.path().join("data"), "quick", config)
            .unwrap_or_else(|e| panic!("{config} on {}: {e:#}", bins.version));
    let text = opts.base_config.clone();
    let mut server = ManagedMysql::start(opts)
        .unwrap_or_else(|e| panic!("{config} starts on {}: {e:#}", bins.version));
    let mut conn = MyConn::connect(&server.connect_options()).unwrap();
    let mut checked = 0;
    let mut differ = Vec::new();
    for (name, want) in seeds::settings_of(&text) {
        if NOT_VARIABLES.contains(&name.as_str()) {
            continue;
        }
        let got = scalar(&mut conn, &format!("SELECT @@GLOBAL.{name}"));
        let expected = match QUICK_ADJUSTS.iter().find(|(n, _)| *n == name) {
            Some((_, v)) => v.to_string(),
            None => want,
        };
        if !same(&name, &expected, &got) {
            differ.push(format!("{name}: file {expected}, server {got}"));
        }
        checked += 1;
    }
    assert!(
        differ.is_empty(),
        "{config} on {} {}: {differ:?}",
        bins.flavor.title(),
        bins.version
    );
    // The options that are not variables of their own name.
    assert_eq!(scalar(&mut conn, "SELECT @@GLOBAL.log_bin"), "1");
    let info = server
        .info(&format!("{}+{config}", bins.flavor.as_str()), "x")
        .unwrap();
    assert_eq!(info.config_name.as_deref(), Some(config));
    let stored = &info.config_text;
    assert!(stored.contains(&format!("# --- config {config} (config/mysql/seeds/")));
    server.stop().unwrap();
    checked
}

#[test]
fn each_complete_file_starts_and_the_server_reports_its_values() {
    let _guard = serial();
    let system = find_binaries(None, Some(Flavor::MariaDb)).expect("mariadb-server");
    let old = installed("10.2");
    let new = installed("11.4.5");
    let mut covered = Vec::new();
    for (bins, configs) in [
        (&old, &["cz12a", "cz12b"][..]),
        (&system, &["cz12a", "cz12b", "cz12a_dw0", "cz12b_dw0"][..]),
        (&new, &["cz12b", "cz12b_dw0"][..]),
    ] {
        for config in configs {
            let file = seeds::pick(config, Flavor::MariaDb, &bins.version).unwrap();
            let n = check_config_on(bins, config);
            assert!(n > 30, "{config}: {n} settings checked");
            covered.push(file.path);
        }
    }
    // Every shipped MariaDB file was started.
    for f in seeds::SEED_FILES
        .iter()
        .filter(|f| f.family == Flavor::MariaDb)
    {
        assert!(covered.contains(&f.path), "{} is tested", f.path);
    }
}

#[test]
fn each_mysql_complete_file_starts_and_the_server_reports_its_values() {
    let _guard = serial();
    let mut covered = Vec::new();
    for (version, configs) in [
        ("5.7.29", &["cz12a"][..]),
        ("8.0.31", &["cz12a"][..]),
        ("9.7.4", &["cz12a", "cz13a"][..]),
    ] {
        let bins = installed_mysql(version);
        for config in configs {
            let file = seeds::pick(config, Flavor::Mysql, &bins.version).unwrap();
            let n = check_config_on(&bins, config);
            assert!(n > 35, "{config} on {version}: {n} settings checked");
            covered.push(file.path);
        }
    }
    // Every shipped MySQL file a packaged server can run was started; the
    // 5.6 file needs 5.6.27+ (5.6.24 is refused below) and 8.4 has no
    // package.
    for f in seeds::SEED_FILES
        .iter()
        .filter(|f| f.family == Flavor::Mysql)
    {
        let untestable = f.path.contains("-8.4") || f.path.contains("-5.6");
        assert!(
            untestable || covered.contains(&f.path),
            "{} is tested",
            f.path
        );
    }
}

#[test]
fn mysql_5_6_24_is_refused_the_5_6_file_in_one_line() {
    let _guard = serial();
    installed_mysql("5.6.24");
    refused(
        "mysql@5.6+cz12a",
        &[
            "config cz12a has no file for MySQL 5.6.24",
            "MySQL 5.6.27 up to 5.7",
        ],
    );
}

/// `tidemark run` of `target` fails within seconds, on one line, naming
/// `wants`.
fn refused(target: &str, wants: &[&str]) {
    let started = Instant::now();
    let dir = server_tempdir();
    let o = tm()
        .args(["run", "--suite", "sysbench", "--tests", "point-query"])
        .args(["--target", target])
        .arg("--results")
        .arg(dir.path().join("r"))
        .output()
        .unwrap();
    assert!(!o.status.success(), "{target} must be refused");
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    for w in wants {
        assert!(err.contains(w), "{err} names {w}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "before any start"
    );
    assert!(
        !dir.path().join("r/servers").exists() || {
            let left = std::fs::read_dir(dir.path().join("r/servers"))
                .unwrap()
                .count();
            left == 0
        }
    );
}

#[test]
fn a_config_without_a_file_for_the_version_is_refused_before_start() {
    let _guard = serial();
    installed("11.4.5");
    refused(
        "mariadb@system+cz13a",
        &["config cz13a has no file for MariaDB 10.11", "MySQL 9.0+"],
    );
    refused(
        "mariadb@11.4.5+cz12a",
        &["O_DIRECT_NO_FSYNC", "MariaDB 11.4.5", "use cz12b"],
    );
    refused(
        "mariadb@system+cz12a_nocb",
        &[
            "config cz12a_nocb has no file for MariaDB 10.11.19",
            "MySQL 8.4",
        ],
    );
}
