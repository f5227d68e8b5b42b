//! Unit tests of the step summary: the reference's per-operation formulas,
//! time-weighted averages, and what a summary says is missing.

use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// Hand-computed from the reference formulas (workloads.md C.1).
#[test]
fn per_op_follows_the_reference_formulas() {
    let avg = HostAverages {
        secs: 10.0,
        samples: 10,
        us: 40.0,
        sy: 10.0,
        cs: 20_000.0,
        disk: Some(DiskRates {
            rps: 50.0,
            rkbps: 800.0,
            wps: 300.0,
            wkbps: 4_096.0,
            ..DiskRates::default()
        }),
        server_cpu_pct: Some(60.0),
        server_read_kbps: Some(5.0),
        client_cpu_pct: 25.0,
        ..HostAverages::default()
    };
    // A q step: 10,000 queries/s with 1,000 inserts/s on a 4-CPU host.
    let rates = OpRates {
        basis: "qps".into(),
        rate: 10_000.0,
        insert_rate: Some(1_000.0),
    };
    let p = per_op(&avg, 4, &rates);
    // cpupq = (cpups/100)·ncpu·1e6/rate = 0.5·4·1e6/1e4 = 200 µs.
    assert!(close(p.cpupq.unwrap(), 200.0), "{p:?}");
    // cspq = 20,000/10,000; rpq = 50/10,000; rkbpq = 800/10,000.
    assert!(close(p.cspq.unwrap(), 2.0));
    assert!(close(p.rpq.unwrap(), 0.005));
    assert!(close(p.rkbpq.unwrap(), 0.08));
    // Writes divide by the insert rate: wpi = 300/1,000, wkbpi = 4,096/1,000.
    assert!(close(p.wpi.unwrap(), 0.3));
    assert!(close(p.wkbpi.unwrap(), 4.096));
    // Server: 0.6 cores · 1e6 / 1e4 = 60 µs; client 0.25 cores → 25 µs.
    assert!(close(p.scpupq.unwrap(), 60.0));
    assert!(close(p.ccpupq.unwrap(), 25.0));
    // The server's own storage reads: 5 KB/s over 10,000 queries/s.
    assert!(close(p.srkbpq.unwrap(), 0.0005));

    // No disk, no server, no inserts, zero rate: missing, never zero.
    let bare = HostAverages {
        disk: None,
        server_cpu_pct: None,
        server_read_kbps: None,
        ..avg.clone()
    };
    let p = per_op(&bare, 4, &OpRates::queries(0.0));
    assert_eq!(p, PerOp::default());
    let p = per_op(
        &bare,
        4,
        &OpRates {
            insert_rate: None,
            ..rates
        },
    );
    assert_eq!((p.rpq, p.wpi, p.scpupq), (None, None, None));
    assert!(p.cpupq.is_some());
}

fn row(secs: f64, phase: Phase, us: f64, disk: Option<DiskRates>) -> HostSecond {
    HostSecond {
        secs,
        phase,
        us,
        sy: 10.0,
        cs: 1000.0 * us,
        disk,
        server_cpu_pct: Some(us),
        client_cpu_pct: 5.0,
        ..HostSecond::default()
    }
}

#[test]
fn averages_weight_by_time_and_waits_by_requests() {
    let d1 = DiskRates {
        rps: 100.0,
        r_await: 2.0,
        wps: 10.0,
        w_await: 1.0,
        util: 50.0,
        ..DiskRates::default()
    };
    let d2 = DiskRates {
        rps: 300.0,
        r_await: 4.0,
        wps: 0.0,
        w_await: 0.0,
        util: 10.0,
        ..DiskRates::default()
    };
    let rows = [
        row(1.0, Phase::Measured, 20.0, Some(d1)),
        row(3.0, Phase::Measured, 60.0, Some(d2)),
    ];
    let refs: Vec<&HostSecond> = rows.iter().collect();
    let a = averages(&refs).unwrap();
    assert!(close(a.us, (20.0 + 3.0 * 60.0) / 4.0));
    assert!(close(a.cpups(), 50.0 + 10.0));
    let d = a.disk.unwrap();
    assert!(close(d.rps, (100.0 + 900.0) / 4.0));
    // 100 reads at 2 ms and 900 at 4 ms: 3.8 ms per read.
    assert!(close(d.r_await, (100.0 * 2.0 + 900.0 * 4.0) / 1000.0));
    assert!(
        close(d.w_await, 1.0),
        "seconds without writes do not dilute"
    );
    assert!(close(d.util, (50.0 + 30.0) / 4.0));
    assert!(averages(&[]).is_none());
}

#[test]
fn the_summary_uses_the_measured_rows_and_says_what_is_missing() {
    let rows = [
        row(1.0, Phase::Warmup, 90.0, None),
        row(1.0, Phase::Measured, 40.0, None),
        row(1.0, Phase::Measured, 40.0, None),
        row(0.2, Phase::After, 0.0, None),
    ];
    let mut missing = BTreeMap::new();
    missing.insert("disk".to_string(), "tmpfs".to_string());
    let m = HostCost::from_samples(&rows, 2, vec![], OpRates::queries(1000.0), missing);
    let a = m.avg.as_ref().unwrap();
    assert_eq!(a.samples, 2);
    assert!(close(a.us, 40.0));
    // (40+10)/100 · 2 CPUs · 1e6 / 1000 = 1000 µs.
    assert!(close(m.per_op.cpupq.unwrap(), 1000.0));
    assert_eq!(m.per_op.rpq, None);
    assert_eq!(m.missing["disk"], "tmpfs");

    let m = HostCost::from_samples(&[], 2, vec![], OpRates::queries(0.0), BTreeMap::new());
    assert!(m.avg.is_none());
    assert!(m.missing.contains_key("host") && m.missing.contains_key("per_op"));
    assert_eq!(Phase::parse("after"), Some(Phase::After));
}
