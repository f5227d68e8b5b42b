//! A step's hardware summary as export columns, named as the reference
//! names them (workloads.md A.7 and C.1: `rps`, `rmbps`, `wps`, `wmbps`,
//! `rpq`, `rkbpq`, `wpi`, `wkbpi`, `csps`, `cpups`, `cspq`, `cpupq`,
//! `ccpupq`, `dbgb1`, `dbgb2`, `rss`), then iostat's and vmstat's own
//! column names for the averages, then what the seeds did not have
//! (`scpupq`: server CPU µs per operation; `srkbpq`: KB the server's own
//! processes read from storage per operation). Shared by the JSON and CSV
//! exports so both spell them the same.

use crate::record::HostCost;

/// Numeric summary columns, in export order.
pub const HW_NUMERIC: [&str; 45] = [
    "rate",
    "ips",
    "rps",
    "rmbps",
    "wps",
    "wmbps",
    "rpq",
    "rkbpq",
    "wpi",
    "wkbpi",
    "csps",
    "cpups",
    "cspq",
    "cpupq",
    "scpupq",
    "ccpupq",
    "srkbpq",
    "dbgb1",
    "dbgb2",
    "rss",
    "r_await",
    "w_await",
    "rareq-sz",
    "wareq-sz",
    "aqu-sz",
    "%util",
    "f/s",
    "f_await",
    "d/s",
    "dkB/s",
    "rkB/s",
    "wkB/s",
    "us",
    "sy",
    "id",
    "wa",
    "st",
    "in",
    "r",
    "b",
    "server_cpu_pct",
    "server_rkbps",
    "client_cpu_pct",
    "window_secs",
    "sampler_cpu_pct",
];

/// Text summary columns, after the numeric ones in CSV.
pub const HW_TEXT: [&str; 3] = ["rate_basis", "devices", "hw_missing"];

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The numeric columns' values; `None` where the metric is missing.
pub fn numeric_values(m: &HostCost) -> [Option<f64>; 45] {
    let a = m.avg.as_ref();
    let d = a.and_then(|a| a.disk.as_ref());
    let p = &m.per_op;
    let rates = m.rates.as_ref();
    let gib = |b: Option<u64>| b.map(|b| b as f64 / GIB);
    [
        rates.map(|r| r.rate),
        rates.and_then(|r| r.insert_rate),
        d.map(|d| d.rps),
        d.map(|d| d.rkbps / 1024.0),
        d.map(|d| d.wps),
        d.map(|d| d.wkbps / 1024.0),
        p.rpq,
        p.rkbpq,
        p.wpi,
        p.wkbpi,
        a.map(|a| a.cs),
        a.map(|a| a.cpups()),
        p.cspq,
        p.cpupq,
        p.scpupq,
        p.ccpupq,
        p.srkbpq,
        gib(m.db_bytes),
        gib(m.datadir_bytes),
        gib(a.and_then(|a| a.server_rss_bytes)),
        d.map(|d| d.r_await),
        d.map(|d| d.w_await),
        d.map(|d| d.rareq_sz()),
        d.map(|d| d.wareq_sz()),
        d.map(|d| d.aqu_sz),
        d.map(|d| d.util),
        d.map(|d| d.fps),
        d.map(|d| d.f_await),
        d.map(|d| d.dps),
        d.map(|d| d.dkbps),
        d.map(|d| d.rkbps),
        d.map(|d| d.wkbps),
        a.map(|a| a.us),
        a.map(|a| a.sy),
        a.map(|a| a.id),
        a.map(|a| a.wa),
        a.map(|a| a.st),
        a.map(|a| a.intr),
        a.map(|a| a.r),
        a.map(|a| a.b),
        a.and_then(|a| a.server_cpu_pct),
        a.and_then(|a| a.server_read_kbps),
        a.map(|a| a.client_cpu_pct),
        a.map(|a| a.secs),
        m.sampler_cpu_pct,
    ]
}

/// The text columns' values: the rate's basis, the watched devices
/// (`+`-separated) and the missing groups as `group: reason; …`.
pub fn text_values(m: &HostCost) -> [String; 3] {
    [
        m.rates
            .as_ref()
            .map(|r| r.basis.clone())
            .unwrap_or_default(),
        m.devices.join("+"),
        m.missing
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join("; "),
    ]
}

/// The summary as a JSON object: every numeric column (null when
/// missing), `rate_basis`, `ncpu`, `devices` and `missing` (group → reason).
pub fn json_object(m: &HostCost) -> serde_json::Value {
    let mut obj = serde_json::Map::new();
    for (name, value) in HW_NUMERIC.iter().zip(numeric_values(m)) {
        obj.insert(
            (*name).to_string(),
            value.map_or(serde_json::Value::Null, serde_json::Value::from),
        );
    }
    obj.insert(
        "rate_basis".into(),
        m.rates
            .as_ref()
            .map_or(serde_json::Value::Null, |r| r.basis.clone().into()),
    );
    obj.insert("ncpu".into(), m.ncpu.into());
    obj.insert("devices".into(), m.devices.clone().into());
    obj.insert(
        "missing".into(),
        serde_json::to_value(&m.missing).unwrap_or_default(),
    );
    serde_json::Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{DiskRates, HostAverages, OpRates, PerOp};

    #[test]
    fn names_are_unique_and_values_line_up() {
        let mut seen = std::collections::HashSet::new();
        assert!(HW_NUMERIC.iter().chain(&HW_TEXT).all(|c| seen.insert(*c)));
        let m = HostCost {
            ncpu: 2,
            devices: vec!["vda".into()],
            rates: Some(OpRates::queries(1000.0)),
            avg: Some(HostAverages {
                us: 30.0,
                sy: 20.0,
                disk: Some(DiskRates {
                    rkbps: 2048.0,
                    ..DiskRates::default()
                }),
                ..HostAverages::default()
            }),
            per_op: PerOp {
                cpupq: Some(1000.0),
                ..PerOp::default()
            },
            db_bytes: Some(3 * 1024 * 1024 * 1024),
            ..HostCost::default()
        };
        let v = numeric_values(&m);
        let at = |name: &str| v[HW_NUMERIC.iter().position(|c| *c == name).unwrap()];
        assert_eq!(at("rmbps"), Some(2.0));
        assert_eq!(at("cpups"), Some(50.0));
        assert_eq!(at("cpupq"), Some(1000.0));
        assert_eq!(at("dbgb1"), Some(3.0));
        assert_eq!(at("dbgb2"), None);
        assert_eq!(at("scpupq"), None);
        let j = json_object(&m);
        assert_eq!(j["%util"], 0.0);
        assert!(j["rss"].is_null());
        assert_eq!(j["devices"][0], "vda");
        assert_eq!(text_values(&m)[0], "qps");
    }
}
