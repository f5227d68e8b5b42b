//! Storing and reading what the samplers measured for a step
//! (`step_host_seconds`, `step_metrics`, schema 2). Written inside the
//! step's own transaction; a step stored without samplers (schema 1, or a
//! build without them) reads back as `None`.

use std::collections::BTreeMap;

use super::backend::{Backend, Row, Value, params};
use super::write::{int, real};
use crate::record::{
    DiskRates, HostAverages, HostCost, HostSecond, OpRates, PerOp, Phase, StepHost,
};
use anyhow::{Context, Result, anyhow};

/// Columns of `step_host_seconds` before the disk's, in the order
/// [`insert`] binds them.
const SECOND_COLUMNS: [&str; 23] = [
    "step_id", "seq", "sec", "phase", "end_secs", "secs", "r", "b", "swpd_kb", "free_kb",
    "buff_kb", "cache_kb", "si", "so", "bi", "bo", "intr", "cs", "us", "sy", "id", "wa", "st",
];

/// Columns of `step_host_seconds` after the disk's.
const SECOND_SERVER_COLUMNS: [&str; 5] = [
    "server_cpu_pct",
    "server_read_kbps",
    "server_rss_bytes",
    "server_procs",
    "client_cpu_pct",
];

/// Columns of `step_metrics` before the disk's, in the order [`insert`]
/// binds them.
const METRICS_COLUMNS: [&str; 21] = [
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
];

/// Columns of `step_metrics` after the disk's.
const METRICS_PER_OP_COLUMNS: [&str; 17] = [
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

/// The iostat columns both tables hold, in the order of [`disk_values`]; all
/// NULL when no disk was sampled.
const DISK_COLUMNS: [&str; 13] = [
    "rps", "rkbps", "r_await", "wps", "wkbps", "w_await", "dps", "dkbps", "d_await", "fps",
    "f_await", "aqu_sz", "util",
];

/// `INSERT INTO table (columns…) VALUES (?1, …)` for the columns before the
/// disk's, the disk's, and those after.
fn insert_sql(table: &str, before: &[&str], after: &[&str]) -> String {
    let columns: Vec<&str> = [before, &DISK_COLUMNS, after].concat();
    let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
    format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        columns.join(", "),
        marks.join(", ")
    )
}

/// A disk's rates in [`DISK_COLUMNS`] order; NULL for no disk, or for a
/// value that is not finite.
fn disk_values(d: Option<&DiskRates>) -> [Option<f64>; 13] {
    let v = |f: fn(&DiskRates) -> f64| d.map(f).filter(|x| x.is_finite());
    [
        v(|d| d.rps),
        v(|d| d.rkbps),
        v(|d| d.r_await),
        v(|d| d.wps),
        v(|d| d.wkbps),
        v(|d| d.w_await),
        v(|d| d.dps),
        v(|d| d.dkbps),
        v(|d| d.d_await),
        v(|d| d.fps),
        v(|d| d.f_await),
        v(|d| d.aqu_sz),
        v(|d| d.util),
    ]
}

/// The values of an [`insert_sql`] statement, in its column order.
fn bound(before: &[Value], disk: &[Option<f64>; 13], after: &[Value]) -> Vec<Value> {
    before
        .iter()
        .cloned()
        .chain(disk.iter().map(|d| Value::from(*d)))
        .chain(after.iter().cloned())
        .collect()
}

/// The disk rates of a row whose `rps` is not NULL, `None` when it is;
/// `get` reads each of the other [`DISK_COLUMNS`].
fn disk_from_row(r: &Row<'_>, get: impl Fn(&str) -> Result<f64>) -> Result<Option<DiskRates>> {
    let Some(rps) = r.get::<Option<f64>>("rps")? else {
        return Ok(None);
    };
    Ok(Some(DiskRates {
        rps,
        rkbps: get("rkbps")?,
        r_await: get("r_await")?,
        wps: get("wps")?,
        wkbps: get("wkbps")?,
        w_await: get("w_await")?,
        dps: get("dps")?,
        dkbps: get("dkbps")?,
        d_await: get("d_await")?,
        fps: get("fps")?,
        f_await: get("f_await")?,
        aqu_sz: get("aqu_sz")?,
        util: get("util")?,
    }))
}

/// Inserts a step's sampler rows and summary.
pub(super) fn insert(db: &mut Backend, step_id: i64, host: &StepHost) -> Result<()> {
    let mut rows = Vec::with_capacity(host.seconds.len());
    for (seq, s) in host.seconds.iter().enumerate() {
        let before = params![
            step_id,
            seq as i64,
            s.sec,
            s.phase.as_str(),
            real(s.end_secs),
            real(s.secs),
            int(s.r),
            int(s.b),
            int(s.swpd),
            int(s.free),
            int(s.buff),
            int(s.cache),
            real(s.si),
            real(s.so),
            real(s.bi),
            real(s.bo),
            real(s.intr),
            real(s.cs),
            real(s.us),
            real(s.sy),
            real(s.id),
            real(s.wa),
            real(s.st),
        ];
        let after = params![
            s.server_cpu_pct.filter(|x| x.is_finite()),
            s.server_read_kbps.filter(|x| x.is_finite()),
            s.server_rss_bytes.map(int),
            s.server_procs,
            real(s.client_cpu_pct),
        ];
        rows.push(bound(&before, &disk_values(s.disk.as_ref()), &after));
    }
    let columns: Vec<&str> = [&SECOND_COLUMNS[..], &DISK_COLUMNS, &SECOND_SERVER_COLUMNS].concat();
    db.insert_many("step_host_seconds", &columns, &rows)
        .context("host samples")?;

    let m = &host.metrics;
    let a = m.avg.as_ref();
    let avg = |f: fn(&HostAverages) -> f64| a.map(f).filter(|x| x.is_finite());
    let p = &m.per_op;
    let rates = m.rates.as_ref();
    let before = params![
        step_id,
        m.ncpu,
        m.devices.join(","),
        rates.map(|r| r.basis.as_str()),
        rates.map(|r| real(r.rate)),
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
    ];
    let after = params![
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
    ];
    let disk = disk_values(a.and_then(|a| a.disk.as_ref()));
    db.execute(
        &insert_sql("step_metrics", &METRICS_COLUMNS, &METRICS_PER_OP_COLUMNS),
        &bound(&before, &disk, &after),
    )
    .context("host summary")?;
    if let Some(counters) = &host.server_counters {
        super::counter_rows::insert(db, step_id, counters)?;
    }
    if let Some(profile) = &host.cpu_profile {
        super::counter_rows::insert_profile(db, step_id, profile)?;
    }
    if let Some(i) = &host.instructions {
        super::counter_rows::insert_instructions(db, step_id, i)?;
    }
    Ok(())
}

/// A step's sampler rows and summary; `None` when it has no summary.
pub(super) fn load(db: &mut Backend, step_id: i64) -> Result<Option<StepHost>> {
    let rows = db.query(
        "SELECT * FROM step_metrics WHERE step_id = ?1",
        &params![step_id],
    )?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let metrics =
        metrics_from_row(&row).with_context(|| format!("step {step_id}: step_metrics"))?;
    let seconds = db
        .query(
            "SELECT * FROM step_host_seconds WHERE step_id = ?1 ORDER BY seq",
            &params![step_id],
        )?
        .iter()
        .map(|r| second_from_row(&r))
        .collect::<Result<Vec<_>>>()
        .with_context(|| format!("step {step_id}: step_host_seconds"))?;
    let server_counters = super::counter_rows::load(db, step_id)
        .with_context(|| format!("step {step_id}: step_server_counters"))?;
    let cpu_profile = super::counter_rows::load_profile(db, step_id)
        .with_context(|| format!("step {step_id}: step_cpu_profiles"))?;
    let instructions = super::counter_rows::load_instructions(db, step_id)
        .with_context(|| format!("step {step_id}: step_instructions"))?;
    Ok(Some(StepHost {
        seconds,
        metrics,
        server_counters,
        cpu_profile,
        instructions,
    }))
}

fn second_from_row(r: &Row<'_>) -> Result<HostSecond> {
    let phase: String = r.get("phase")?;
    // A sampled second stores every disk column; each is read as stored.
    let disk = disk_from_row(r, |c| r.get(c))?;
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
        server_rss_bytes: r.get::<Option<i64>>("server_rss_bytes")?.map(uint),
        server_procs: r.get("server_procs")?,
        client_cpu_pct: r.get("client_cpu_pct")?,
    })
}

fn metrics_from_row(r: &Row<'_>) -> Result<HostCost> {
    let f = |c: &str| -> Result<Option<f64>> { r.get(c) };
    let avg = match f("us")? {
        None => None,
        Some(us) => Some(HostAverages {
            secs: f("secs")?.unwrap_or(0.0),
            samples: r.get::<Option<u32>>("samples")?.unwrap_or(0),
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
            disk: disk_from_row(r, |c| Ok(f(c)?.unwrap_or(0.0)))?,
            server_cpu_pct: f("server_cpu_pct")?,
            server_read_kbps: f("server_read_kbps")?,
            client_cpu_pct: f("client_cpu_pct")?.unwrap_or(0.0),
            server_rss_bytes: r.get::<Option<i64>>("server_rss_bytes")?.map(uint),
        }),
    };
    let basis: Option<String> = r.get("rate_basis")?;
    let devices: String = r.get("devices")?;
    let missing: String = r.get("missing_json")?;
    let missing: BTreeMap<String, String> =
        serde_json::from_str(&missing).context("malformed missing_json")?;
    Ok(HostCost {
        ncpu: r.get("ncpu")?,
        devices: devices
            .split(',')
            .filter(|d| !d.is_empty())
            .map(String::from)
            .collect(),
        rates: basis
            .map(|basis| -> Result<OpRates> {
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
        db_bytes: r.get::<Option<i64>>("db_bytes")?.map(uint),
        datadir_bytes: r.get::<Option<i64>>("datadir_bytes")?.map(uint),
        sampler_cpu_pct: f("sampler_cpu_pct")?,
        missing,
    })
}

fn uint(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

#[cfg(test)]
#[path = "host_rows_tests.rs"]
mod tests;
