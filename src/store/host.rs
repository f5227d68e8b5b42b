//! Storing and reading what the samplers measured for a step
//! (`step_host_seconds`, `step_metrics`, schema 2). Written inside the
//! step's own transaction; a step stored without samplers (schema 1, or a
//! build without them) reads back as `None`.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::metrics::summary::{
    DiskRates, HostAverages, HostSecond, OpRates, PerOp, Phase, StepHost, StepMetrics,
};

/// Columns of `step_host_seconds`, in the order [`insert`] binds them.
const SECOND_COLUMNS: [&str; 41] = [
    "step_id",
    "seq",
    "sec",
    "phase",
    "end_secs",
    "secs",
    "r",
    "b",
    "swpd_kb",
    "free_kb",
    "buff_kb",
    "cache_kb",
    "si",
    "so",
    "bi",
    "bo",
    "intr",
    "cs",
    "us",
    "sy",
    "id",
    "wa",
    "st",
    "rps",
    "rkbps",
    "r_await",
    "wps",
    "wkbps",
    "w_await",
    "dps",
    "dkbps",
    "d_await",
    "fps",
    "f_await",
    "aqu_sz",
    "util",
    "server_cpu_pct",
    "server_read_kbps",
    "server_rss_bytes",
    "server_procs",
    "client_cpu_pct",
];

/// Columns of `step_metrics`, in the order [`insert`] binds them.
const METRICS_COLUMNS: [&str; 51] = [
    "step_id",
    "ncpu",
    "devices",
    "rate_basis",
    "rate",
    "ips",
    "secs",
    "samples",
    "us",
    "sy",
    "id",
    "wa",
    "st",
    "cs",
    "intr",
    "bi",
    "bo",
    "si",
    "so",
    "r",
    "b",
    "rps",
    "rkbps",
    "r_await",
    "wps",
    "wkbps",
    "w_await",
    "dps",
    "dkbps",
    "d_await",
    "fps",
    "f_await",
    "aqu_sz",
    "util",
    "server_cpu_pct",
    "server_read_kbps",
    "client_cpu_pct",
    "server_rss_bytes",
    "rpq",
    "rkbpq",
    "wpi",
    "wkbpi",
    "cspq",
    "cpupq",
    "scpupq",
    "ccpupq",
    "srkbpq",
    "db_bytes",
    "datadir_bytes",
    "sampler_cpu_pct",
    "missing_json",
];

/// `INSERT INTO table (columns…) VALUES (?1, …)`.
fn insert_sql(table: &str, columns: &[&str]) -> String {
    let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
    format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        columns.join(", "),
        marks.join(", ")
    )
}

/// Inserts a step's sampler rows and summary.
pub(super) fn insert(conn: &Connection, step_id: i64, host: &StepHost) -> Result<()> {
    let mut insert = conn.prepare_cached(&insert_sql("step_host_seconds", &SECOND_COLUMNS))?;
    for (seq, s) in host.seconds.iter().enumerate() {
        let d = s.disk.as_ref();
        let disk = |f: fn(&DiskRates) -> f64| d.map(f).filter(|x| x.is_finite());
        insert
            .execute(params![
                step_id,
                seq as i64,
                s.sec,
                s.phase.as_str(),
                finite(s.end_secs),
                finite(s.secs),
                int(s.r),
                int(s.b),
                int(s.swpd),
                int(s.free),
                int(s.buff),
                int(s.cache),
                finite(s.si),
                finite(s.so),
                finite(s.bi),
                finite(s.bo),
                finite(s.intr),
                finite(s.cs),
                finite(s.us),
                finite(s.sy),
                finite(s.id),
                finite(s.wa),
                finite(s.st),
                disk(|d| d.rps),
                disk(|d| d.rkbps),
                disk(|d| d.r_await),
                disk(|d| d.wps),
                disk(|d| d.wkbps),
                disk(|d| d.w_await),
                disk(|d| d.dps),
                disk(|d| d.dkbps),
                disk(|d| d.d_await),
                disk(|d| d.fps),
                disk(|d| d.f_await),
                disk(|d| d.aqu_sz),
                disk(|d| d.util),
                s.server_cpu_pct.filter(|x| x.is_finite()),
                s.server_read_kbps.filter(|x| x.is_finite()),
                s.server_rss_bytes.map(int),
                s.server_procs,
                finite(s.client_cpu_pct),
            ])
            .with_context(|| format!("host sample {seq}"))?;
    }

    let m = &host.metrics;
    let a = m.avg.as_ref();
    let avg = |f: fn(&HostAverages) -> f64| a.map(f).filter(|x| x.is_finite());
    let d = a.and_then(|a| a.disk.as_ref());
    let disk = |f: fn(&DiskRates) -> f64| d.map(f).filter(|x| x.is_finite());
    let p = &m.per_op;
    let rates = m.rates.as_ref();
    conn.execute(
        &insert_sql("step_metrics", &METRICS_COLUMNS),
        params![
            step_id,
            m.ncpu,
            m.devices.join(","),
            rates.map(|r| r.basis.as_str()),
            rates.map(|r| finite(r.rate)),
            rates.and_then(|r| r.insert_rate).filter(|x| x.is_finite()),
            avg(|a| a.secs),
            a.map(|a| a.samples),
            avg(|a| a.us),
            avg(|a| a.sy),
            avg(|a| a.id),
            avg(|a| a.wa),
            avg(|a| a.st),
            avg(|a| a.cs),
            avg(|a| a.intr),
            avg(|a| a.bi),
            avg(|a| a.bo),
            avg(|a| a.si),
            avg(|a| a.so),
            avg(|a| a.r),
            avg(|a| a.b),
            disk(|d| d.rps),
            disk(|d| d.rkbps),
            disk(|d| d.r_await),
            disk(|d| d.wps),
            disk(|d| d.wkbps),
            disk(|d| d.w_await),
            disk(|d| d.dps),
            disk(|d| d.dkbps),
            disk(|d| d.d_await),
            disk(|d| d.fps),
            disk(|d| d.f_await),
            disk(|d| d.aqu_sz),
            disk(|d| d.util),
            a.and_then(|a| a.server_cpu_pct).filter(|x| x.is_finite()),
            a.and_then(|a| a.server_read_kbps).filter(|x| x.is_finite()),
            avg(|a| a.client_cpu_pct),
            a.and_then(|a| a.server_rss_bytes).map(int),
            p.rpq.filter(|x| x.is_finite()),
            p.rkbpq.filter(|x| x.is_finite()),
            p.wpi.filter(|x| x.is_finite()),
            p.wkbpi.filter(|x| x.is_finite()),
            p.cspq.filter(|x| x.is_finite()),
            p.cpupq.filter(|x| x.is_finite()),
            p.scpupq.filter(|x| x.is_finite()),
            p.ccpupq.filter(|x| x.is_finite()),
            p.srkbpq.filter(|x| x.is_finite()),
            m.db_bytes.map(int),
            m.datadir_bytes.map(int),
            m.sampler_cpu_pct.filter(|x| x.is_finite()),
            serde_json::to_string(&m.missing)?,
        ],
    )
    .context("host summary")?;
    Ok(())
}

/// A step's sampler rows and summary; `None` when it has no summary.
pub(super) fn load(conn: &Connection, step_id: i64) -> Result<Option<StepHost>> {
    let metrics = conn
        .prepare_cached("SELECT * FROM step_metrics WHERE step_id = ?1")?
        .query_row([step_id], |r| Ok(metrics_from_row(r)))
        .optional()?
        .transpose()
        .with_context(|| format!("step {step_id}: step_metrics"))?;
    let Some(metrics) = metrics else {
        return Ok(None);
    };
    let mut stmt =
        conn.prepare_cached("SELECT * FROM step_host_seconds WHERE step_id = ?1 ORDER BY seq")?;
    let seconds = stmt
        .query_and_then([step_id], second_from_row)?
        .collect::<Result<Vec<_>>>()
        .with_context(|| format!("step {step_id}: step_host_seconds"))?;
    Ok(Some(StepHost { seconds, metrics }))
}

fn second_from_row(r: &Row<'_>) -> Result<HostSecond> {
    let phase: String = r.get("phase")?;
    let disk = match r.get::<_, Option<f64>>("rps")? {
        None => None,
        Some(rps) => Some(DiskRates {
            rps,
            rkbps: r.get("rkbps")?,
            r_await: r.get("r_await")?,
            wps: r.get("wps")?,
            wkbps: r.get("wkbps")?,
            w_await: r.get("w_await")?,
            dps: r.get("dps")?,
            dkbps: r.get("dkbps")?,
            d_await: r.get("d_await")?,
            fps: r.get("fps")?,
            f_await: r.get("f_await")?,
            aqu_sz: r.get("aqu_sz")?,
            util: r.get("util")?,
        }),
    };
    Ok(HostSecond {
        sec: r.get("sec")?,
        phase: Phase::parse(&phase).ok_or_else(|| anyhow!("unknown phase {phase:?}"))?,
        end_secs: r.get("end_secs")?,
        secs: r.get("secs")?,
        r: uint(r.get("r")?),
        b: uint(r.get("b")?),
        swpd: uint(r.get("swpd_kb")?),
        free: uint(r.get("free_kb")?),
        buff: uint(r.get("buff_kb")?),
        cache: uint(r.get("cache_kb")?),
        si: r.get("si")?,
        so: r.get("so")?,
        bi: r.get("bi")?,
        bo: r.get("bo")?,
        intr: r.get("intr")?,
        cs: r.get("cs")?,
        us: r.get("us")?,
        sy: r.get("sy")?,
        id: r.get("id")?,
        wa: r.get("wa")?,
        st: r.get("st")?,
        disk,
        server_cpu_pct: r.get("server_cpu_pct")?,
        server_read_kbps: r.get("server_read_kbps")?,
        server_rss_bytes: r.get::<_, Option<i64>>("server_rss_bytes")?.map(uint),
        server_procs: r.get("server_procs")?,
        client_cpu_pct: r.get("client_cpu_pct")?,
    })
}

fn metrics_from_row(r: &Row<'_>) -> Result<StepMetrics> {
    let f = |c: &str| -> rusqlite::Result<Option<f64>> { r.get(c) };
    let avg = match f("us")? {
        None => None,
        Some(us) => Some(HostAverages {
            secs: f("secs")?.unwrap_or(0.0),
            samples: r.get::<_, Option<u32>>("samples")?.unwrap_or(0),
            us,
            sy: f("sy")?.unwrap_or(0.0),
            id: f("id")?.unwrap_or(0.0),
            wa: f("wa")?.unwrap_or(0.0),
            st: f("st")?.unwrap_or(0.0),
            cs: f("cs")?.unwrap_or(0.0),
            intr: f("intr")?.unwrap_or(0.0),
            bi: f("bi")?.unwrap_or(0.0),
            bo: f("bo")?.unwrap_or(0.0),
            si: f("si")?.unwrap_or(0.0),
            so: f("so")?.unwrap_or(0.0),
            r: f("r")?.unwrap_or(0.0),
            b: f("b")?.unwrap_or(0.0),
            disk: match f("rps")? {
                None => None,
                Some(rps) => Some(DiskRates {
                    rps,
                    rkbps: f("rkbps")?.unwrap_or(0.0),
                    r_await: f("r_await")?.unwrap_or(0.0),
                    wps: f("wps")?.unwrap_or(0.0),
                    wkbps: f("wkbps")?.unwrap_or(0.0),
                    w_await: f("w_await")?.unwrap_or(0.0),
                    dps: f("dps")?.unwrap_or(0.0),
                    dkbps: f("dkbps")?.unwrap_or(0.0),
                    d_await: f("d_await")?.unwrap_or(0.0),
                    fps: f("fps")?.unwrap_or(0.0),
                    f_await: f("f_await")?.unwrap_or(0.0),
                    aqu_sz: f("aqu_sz")?.unwrap_or(0.0),
                    util: f("util")?.unwrap_or(0.0),
                }),
            },
            server_cpu_pct: f("server_cpu_pct")?,
            server_read_kbps: f("server_read_kbps")?,
            client_cpu_pct: f("client_cpu_pct")?.unwrap_or(0.0),
            server_rss_bytes: r.get::<_, Option<i64>>("server_rss_bytes")?.map(uint),
        }),
    };
    let basis: Option<String> = r.get("rate_basis")?;
    let devices: String = r.get("devices")?;
    let missing: String = r.get("missing_json")?;
    let missing: BTreeMap<String, String> =
        serde_json::from_str(&missing).context("malformed missing_json")?;
    Ok(StepMetrics {
        ncpu: r.get("ncpu")?,
        devices: devices
            .split(',')
            .filter(|d| !d.is_empty())
            .map(String::from)
            .collect(),
        rates: basis
            .map(|basis| -> rusqlite::Result<OpRates> {
                Ok(OpRates {
                    basis,
                    rate: f("rate")?.unwrap_or(0.0),
                    insert_rate: f("ips")?,
                })
            })
            .transpose()?,
        avg,
        per_op: PerOp {
            rpq: f("rpq")?,
            rkbpq: f("rkbpq")?,
            wpi: f("wpi")?,
            wkbpi: f("wkbpi")?,
            cspq: f("cspq")?,
            cpupq: f("cpupq")?,
            scpupq: f("scpupq")?,
            ccpupq: f("ccpupq")?,
            srkbpq: f("srkbpq")?,
        },
        db_bytes: r.get::<_, Option<i64>>("db_bytes")?.map(uint),
        datadir_bytes: r.get::<_, Option<i64>>("datadir_bytes")?.map(uint),
        sampler_cpu_pct: f("sampler_cpu_pct")?,
        missing,
    })
}

/// NOT NULL columns: the sampler's arithmetic checks every divisor, so a
/// non-finite value cannot occur; should one, it is stored as 0 rather than
/// losing the step (nullable columns store it as NULL instead).
fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn uint(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::store::tests::{plans, run_info, step_info, step_result, target};

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
        let mut metrics = StepMetrics::from_samples(
            &seconds,
            2,
            vec!["vda".into(), "vdb".into()],
            OpRates::queries(4_000.0),
            missing,
        );
        metrics.db_bytes = Some(11_091_303);
        metrics.sampler_cpu_pct = Some(0.0625);
        StepHost { seconds, metrics }
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
        store
            .write_step_with_host(
                t,
                0,
                "2026-11-20T23:50:00Z",
                &step_info(0),
                &step_result(0),
                &plans(0),
                Some(&host),
            )
            .unwrap();
        store
            .write_step(
                t,
                1,
                "2026-11-20T23:51:00Z",
                &step_info(1),
                &step_result(1),
                &[],
            )
            .unwrap();
        let loaded = store.load_run(run).unwrap();
        let steps = &loaded.targets[0].steps;
        assert_eq!(steps[0].host.as_ref(), Some(&host));
        assert_eq!(steps[1].host, None, "a step stored without samplers");

        // The summary of a step that sampled nothing keeps its reasons.
        let empty = StepHost {
            seconds: vec![],
            metrics: StepMetrics::from_samples(
                &[],
                2,
                vec![],
                OpRates::queries(0.0),
                BTreeMap::new(),
            ),
        };
        store
            .write_step_with_host(
                t,
                2,
                "2026-11-20T23:52:00Z",
                &step_info(2),
                &step_result(2),
                &[],
                Some(&empty),
            )
            .unwrap();
        let loaded = store.load_run(run).unwrap();
        assert_eq!(loaded.targets[0].steps[2].host.as_ref(), Some(&empty));
    }

    #[test]
    fn a_database_from_before_the_samplers_migrates_and_keeps_its_steps() {
        let dir = tempfile::tempdir().unwrap();
        let run = {
            let mut store = Store::open(dir.path()).unwrap();
            let run = crate::store::tests::write_sample_run(&mut store);
            // Turn it into what a build before the samplers left behind
            // (every migration but the last).
            store
                .conn
                .execute_batch(
                    "DROP TABLE step_host_seconds; DROP TABLE step_metrics;
                     UPDATE meta SET value = '3' WHERE key = 'schema_version';",
                )
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
            .write_step_with_host(
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
        store
            .write_step_with_host(
                t,
                0,
                "2026-11-20T23:50:00Z",
                &step_info(0),
                &step_result(0),
                &[],
                Some(&sample_host()),
            )
            .unwrap();
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
}
