//! A preloaded allocator (`+jemalloc`, `+tcmalloc`) is in the running
//! MariaDB and PostgreSQL servers' memory maps (every PostgreSQL process:
//! the postmaster and its backends), and a run records which library it
//! was.

mod common;

use common::cli_runs::*;
use common::*;
use tidemark::db::Connector;
use tidemark::server::allocator::{Allocator, process_maps};
use tidemark::server::mysql::{Flavor, ManagedMyOptions, ManagedMysql, find_binaries};
use tidemark::server::postgres::{ManagedPgOptions, ManagedPostgres, base_config, find_bindir};

#[test]
fn the_server_process_maps_the_preloaded_allocator() {
    for allocator in [Allocator::Jemalloc, Allocator::Tcmalloc] {
        let lib = allocator
            .library()
            .expect("libjemalloc2 and libtcmalloc-minimal4 (apt-get install them)");
        let mut bins = find_binaries(None, Some(Flavor::MariaDb)).expect("mariadb-server");
        let dir = server_tempdir();
        let plain =
            ManagedMyOptions::for_profile(bins.clone(), dir.path().join("a"), "quick", "base")
                .unwrap();
        let mut without = ManagedMysql::start(plain).unwrap();
        assert!(
            !process_maps(without.pid(), &lib).unwrap(),
            "without +{} the server does not map {}",
            allocator.name(),
            lib.display()
        );
        without.stop().unwrap();
        bins.preload = Some(lib.clone());
        let opts =
            ManagedMyOptions::for_profile(bins, dir.path().join("b"), "quick", "base").unwrap();
        let mut server = ManagedMysql::start(opts).unwrap();
        assert!(
            process_maps(server.pid(), &lib).unwrap(),
            "the server maps {}",
            lib.display()
        );
        let info = server.info("mariadb@system+x", "x").unwrap();
        assert_eq!(info.extra["allocator"], lib.to_str().unwrap());
        server.stop().unwrap();
    }
}

#[test]
fn a_run_records_the_allocator_in_its_context() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let args = short_run(
        results,
        "point-query",
        &["mariadb@system+cz12b+jemalloc"],
        &["--suite", "sysbench"],
    );
    assert_success(&run_tidemark(&args));
    let doc = export_json(results);
    let t = &doc["runs"][0]["targets"][0];
    assert_eq!(
        t["label"],
        "ma101119.cz12b+jemalloc".replace("101119", &digits(t))
    );
    let lib = Allocator::Jemalloc.library().unwrap();
    assert_eq!(t["extra"]["allocator"], lib.to_str().unwrap());
    assert!(
        t["config_text"]
            .as_str()
            .unwrap()
            .contains("# --- config cz12b (")
    );
    fails_in_one_line(
        &[
            "run",
            "--target",
            "sqlite:/tmp/tidemark-no-such.db+tcmalloc",
        ],
        &["+tcmalloc preloads an allocator into a server tidemark starts"],
        std::time::Duration::from_secs(10),
    );
}

#[test]
fn postgres_processes_map_the_preloaded_allocator_and_the_run_records_it() {
    let _turn = serial();
    let lib = Allocator::Tcmalloc.library().expect("libtcmalloc-minimal4");
    let dir = server_tempdir();
    let mut bins = find_bindir(None).expect("PostgreSQL binaries");
    bins.preload = Some(lib.clone());
    let mut server = ManagedPostgres::start(ManagedPgOptions {
        bindir: bins,
        datadir: dir.path().join("data"),
        port: None,
        config_name: "base".into(),
        base_config: base_config("quick").unwrap(),
        overrides: Vec::new(),
        dbname: "tidemark".into(),
        start_timeout: std::time::Duration::from_secs(120),
        callgrind_dir: None,
    })
    .unwrap();
    let postmaster = server.pid();
    assert!(
        process_maps(postmaster, &lib).unwrap(),
        "the postmaster maps {}",
        lib.display()
    );
    // A backend forked for a connection inherits it.
    let mut conn = PgConnector(server.connect_options()).connect().unwrap();
    let backend: u32 = scalar(conn.as_mut(), "SELECT pg_backend_pid()")
        .parse()
        .unwrap();
    assert_ne!(backend, postmaster);
    assert!(
        process_maps(backend, &lib).unwrap(),
        "the backend maps {}",
        lib.display()
    );
    drop(conn);
    let info = server.info("pg@system+tcmalloc", "x").unwrap();
    assert_eq!(info.extra["allocator"], lib.to_str().unwrap());
    server.stop().unwrap();

    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let args = short_run(
        results,
        "point-query",
        &["pg@system+jemalloc"],
        &["--suite", "sysbench"],
    );
    assert_success(&run_tidemark(&args));
    let doc = export_json(results);
    let t = &doc["runs"][0]["targets"][0];
    assert!(
        t["label"].as_str().unwrap().ends_with(".base+jemalloc"),
        "{}",
        t["label"]
    );
    let jemalloc = Allocator::Jemalloc.library().unwrap();
    assert_eq!(t["extra"]["allocator"], jemalloc.to_str().unwrap());
}

/// The version digits of a stored target (`101119`).
fn digits(t: &serde_json::Value) -> String {
    t["version_number"]
        .as_str()
        .unwrap()
        .chars()
        .filter(char::is_ascii_digit)
        .collect()
}
