//! Round trips of the samplers' rows and summary through the store, and
//! the exports' hardware columns.

use super::*;
use crate::store::Store;
use crate::store::tests::{plans, run_info, step_info, step_result, target, write_sample_step};

/// Samples with a disk in one row and not the other, a server, and a
/// summary with some metrics missing.
fn sample_host() -> StepHost {
    let disk = DiskRates {
        rps: 1.5,
        rkbps: 24.0,
        r_await: 0.25,
        wps: 300.0,
        wkbps: 4800.0,
        w_await: 0.125,
        dps: 2.0,
        dkbps: 8.0,
        d_await: 0.5,
        fps: 150.0,
        f_await: 0.0625,
        aqu_sz: 0.75,
        util: 12.5,
    };
    let second = |sec: i64, phase: Phase, disk: Option<DiskRates>| HostSecond {
        sec,
        phase,
        end_secs: 1.5 + sec as f64,
        secs: 1.0,
        r: 2,
        b: 1,
        swpd: 0,
        free: 1 << 20,
        buff: 4096,
        cache: 1 << 19,
        si: 0.0,
        so: 0.0,
        bi: 12.0,
        bo: 4800.0,
        intr: 9000.0,
        cs: 35_000.5,
        us: 10.5,
        sy: 18.25,
        id: 55.0,
        wa: 16.25,
        st: 0.0,
        disk,
        server_cpu_pct: (sec >= 0).then_some(47.5),
        server_read_kbps: (sec >= 0).then_some(0.5),
        server_rss_bytes: Some(58 << 20),
        server_procs: Some(8),
        client_cpu_pct: 6.25,
    };
    let seconds = vec![
        second(-1, Phase::Warmup, Some(disk)),
        second(0, Phase::Measured, Some(disk)),
        second(1, Phase::Measured, None),
    ];
    let mut missing = BTreeMap::new();
    missing.insert("disk".to_string(), "vda vanished".to_string());
    let mut metrics = HostCost::from_samples(
        &seconds,
        2,
        vec!["vda".into(), "vdb".into()],
        OpRates::queries(4_000.0),
        missing,
    );
    metrics.db_bytes = Some(11_091_303);
    metrics.sampler_cpu_pct = Some(0.0625);
    // Two readings of the server's counters, one value read only once.
    let reading = |seq: i64, phase, values: &[(&str, f64)]| crate::record::CounterReading {
        sec: seq - 1,
        phase,
        end_secs: seq as f64 * 1.25,
        values: values.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
    };
    let server_counters = Some(crate::record::ServerCounters {
        readings: vec![
            reading(0, Phase::Warmup, &[("wal_bytes", 1e9), ("n_dead_tup", 0.0)]),
            reading(1, Phase::Measured, &[("wal_bytes", 1.5e9 + 0.25)]),
        ],
    });
    StepHost {
        seconds,
        metrics,
        server_counters,
        cpu_profile: Some(crate::record::CpuProfile {
            hz: 499,
            secs: 2.5,
            samples: 7,
            folded: "postgres;PostgresMain;ExecScan 5\npostgres;[unknown] 2\n".into(),
        }),
        instructions: Some(crate::record::StepInstructions {
            events: 300,
            statements: 300,
            client_ir: 12_345_678,
            marker_ir: 41_013,
            background_ir: 2_000_000,
            background_procs: 6,
            clients: 1,
            functions: vec![crate::record::FunctionIr {
                name: "postgres+0x1d70d0".into(),
                self_ir: 100,
                incl_ir: 1307,
            }],
        }),
    }
}

#[test]
fn samples_and_summary_round_trip_with_missing_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let run = store.begin_run(&run_info()).unwrap();
    let t = store.add_target(run, 0, &target(5)).unwrap();
    let host = sample_host();
    assert!(host.metrics.avg.as_ref().unwrap().disk.is_some());
    assert_eq!(host.metrics.datadir_bytes, None);
    write_sample_step(&mut store, t, 0, &plans(0), Some(&host));
    write_sample_step(&mut store, t, 1, &[], None);
    let loaded = store.load_run(run).unwrap();
    let steps = &loaded.targets[0].steps;
    assert_eq!(steps[0].host.as_ref(), Some(&host));
    assert_eq!(steps[1].host, None, "a step stored without samplers");

    // The summary of a step that sampled nothing keeps its reasons.
    let empty = StepHost {
        seconds: vec![],
        metrics: HostCost::from_samples(&[], 2, vec![], OpRates::queries(0.0), BTreeMap::new()),
        server_counters: None,
        cpu_profile: None,
        instructions: None,
    };
    write_sample_step(&mut store, t, 2, &[], Some(&empty));
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.targets[0].steps[2].host.as_ref(), Some(&empty));
}

#[test]
fn a_database_from_before_the_samplers_migrates_and_keeps_its_steps() {
    let dir = tempfile::tempdir().unwrap();
    let run = {
        let mut store = Store::open(dir.path()).unwrap();
        let run = crate::store::tests::write_sample_run(&mut store);
        // Turn it into what a build before the samplers left behind (the
        // migrations before V2_SAMPLERS; later ones go too).
        let before = crate::store::schema::MIGRATIONS
            .iter()
            .position(|m| m.name == "V2_SAMPLERS")
            .unwrap();
        store
            .db()
            .batch(&format!(
                "DROP TABLE step_server_counters; DROP TABLE step_cpu_profiles;
                 DROP TABLE step_host_seconds; DROP TABLE step_metrics;
                 DROP INDEX runs_uuid; ALTER TABLE runs DROP COLUMN uuid;
                 ALTER TABLE runs DROP COLUMN origin;
                 ALTER TABLE runs DROP COLUMN host_name;
                 ALTER TABLE runs DROP COLUMN pid;
                 ALTER TABLE runs DROP COLUMN process_start;
                 ALTER TABLE steps DROP COLUMN sweep_threads;
                 DROP TABLE shard_members; DROP TABLE shard_steps;
                 DROP TABLE step_instructions;
                 UPDATE meta SET value = '{before}' WHERE key = 'schema_version';"
            ))
            .unwrap();
        run
    };
    let mut store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store.schema_version().unwrap(),
        crate::store::SCHEMA_VERSION
    );
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.targets[0].steps.len(), 3);
    assert!(loaded.targets[0].steps.iter().all(|s| s.host.is_none()));
    let t = loaded.targets[0].id;
    store
        .write_step(
            t,
            3,
            "2026-11-20T23:53:00Z",
            &step_info(0),
            &step_result(0),
            &[],
            Some(&sample_host()),
        )
        .unwrap();
}

#[test]
fn exports_carry_the_reference_columns() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let run = store.begin_run(&run_info()).unwrap();
    let t = store.add_target(run, 0, &target(5)).unwrap();
    write_sample_step(&mut store, t, 0, &[], Some(&sample_host()));
    let mut out = Vec::new();
    crate::store::export_json(&store, Some(run), &mut out).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let step = &doc["runs"][0]["targets"][0]["steps"][0];
    let hw = &step["hw"];
    // The measured rows: cs 35,000.5/s at 4,000 qps; us+sy 28.75% of 2
    // CPUs = 0.575 CPU-s/s → 143.75 µs per query.
    assert_eq!(hw["csps"], 35_000.5);
    assert_eq!(hw["cspq"], 35_000.5 / 4_000.0);
    assert_eq!(hw["cpupq"], 0.2875 * 2.0 * 1e6 / 4_000.0);
    assert_eq!(hw["scpupq"], 0.475 * 1e6 / 4_000.0);
    assert_eq!(hw["srkbpq"], 0.5 / 4_000.0);
    // Disk from the one measured row that has it (1 s of 2).
    assert_eq!(hw["wps"], 300.0);
    assert_eq!(hw["wpi"], 300.0 / 4_000.0);
    assert_eq!(hw["wmbps"], 4800.0 / 1024.0);
    assert_eq!(hw["f/s"], 150.0);
    assert_eq!(hw["rss"], 58.0 / 1024.0);
    assert!(hw["dbgb2"].is_null());
    assert_eq!(hw["missing"]["disk"], "vda vanished");
    assert_eq!(hw["devices"], serde_json::json!(["vda", "vdb"]));
    let rows = step["host_seconds"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["phase"], "warmup");
    assert_eq!(rows[1]["disk"]["w/s"], 300.0);
    assert!(rows[2]["disk"].is_null());

    let mut out = Vec::new();
    crate::store::export_csv(&store, Some(run), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    // The target label holds a quoted comma; the hardware cells are the
    // last ones, so count them from the end.
    let cell = |name: &str| {
        let from_end = header.len() - header.iter().position(|c| *c == name).unwrap();
        row[row.len() - from_end]
    };
    assert_eq!(cell("wpi"), (300.0f64 / 4_000.0).to_string());
    assert_eq!(cell("dbgb2"), "");
    assert_eq!(cell("devices"), "vda+vdb");
    assert_eq!(cell("hw_missing"), "disk: vda vanished");
}
