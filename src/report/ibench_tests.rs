//! Unit tests of the Insert Benchmark section's rules on small hand-made
//! inputs (the suite's stored runs come later).

use super::*;
use crate::record::{LatencySummary, new_histogram};

fn step(name: &str, ips: Option<f64>, qps: Option<f64>, target: Option<f64>) -> IbenchStepInput {
    IbenchStepInput {
        step: name.into(),
        status: StepStatus::Ok,
        ips,
        qps,
        insert_target: target,
        client_finish_secs: Vec::new(),
        roles: Vec::new(),
        seconds: Vec::new(),
        host: StepHostMetrics::default(),
        maxop_secs: None,
        p50: None,
        p99: None,
    }
}

#[test]
fn query_steps_and_their_rates() {
    assert!(is_query_step("qr100") && is_query_step("qp1000"));
    assert!(!is_query_step("l.i1") && !is_query_step("qrx"));
    assert_eq!(per_client_insert_rate("qp500"), Some(500.0));
}

#[test]
fn sla_fails_below_95_percent_of_the_target() {
    assert!(!sla_failed(800.0, 800.0));
    assert!(!sla_failed(760.0, 800.0));
    assert!(sla_failed(759.0, 800.0));
    // The seeds' 16beta3: 7486/s of 8000/s.
    assert!(sla_failed(7486.0, 8000.0));
}

#[test]
fn shades_follow_the_reference_quarters() {
    let v = [Some(100.0), Some(60.0), Some(80.0), Some(96.0), Some(64.0)];
    let s = throughput_shades(&v, &[false; 5]);
    assert_eq!(
        s,
        [
            Some(Shade::High),
            Some(Shade::Low),
            None,
            Some(Shade::High),
            Some(Shade::Low)
        ]
    );
}

#[test]
fn no_red_when_the_minimum_is_close_to_the_maximum() {
    let v = [Some(100.0), Some(85.0), Some(90.0)];
    let s = throughput_shades(&v, &[false; 3]);
    assert_eq!(s, [Some(Shade::High), None, None]);
}

#[test]
fn an_sla_failure_is_ignored_for_the_maximum_and_not_shaded() {
    // The failed cell has the highest QPS (it skipped its inserts).
    let v = [Some(100.0), Some(50.0), Some(300.0)];
    let s = throughput_shades(&v, &[false, false, true]);
    assert_eq!(s, [Some(Shade::High), Some(Shade::Low), None]);
}

#[test]
fn fairness_is_the_spread_of_finish_times() {
    // The seeds' 15.3 cached row: diff 365, pct 5.9.
    let f = fairness(&[6186.0, 6551.0, 6300.0]).unwrap();
    assert_eq!(f.clients, 3);
    assert_eq!(f.min_time, 6186.0);
    assert_eq!(f.max_time, 6551.0);
    assert_eq!(f.diff, 365.0);
    assert!((f.pct - 5.9).abs() < 0.01, "{}", f.pct);
    assert_eq!(fairness(&[]), None);
    assert_eq!(fairness(&[0.0, 1.0]), None);
}

#[test]
fn buckets_split_a_histogram_in_percent() {
    let mut h = new_histogram();
    for v in [50, 90, 500, 5_000] {
        h.record(v).unwrap();
    }
    let b = crate::report::ibench_input::bucket_percentages(&h).unwrap();
    assert_eq!(b, [50.0, 25.0, 25.0, 0.0, 0.0, 0.0]);
    assert_eq!(
        crate::report::ibench_input::bucket_percentages(&new_histogram()),
        None
    );
}

fn two_targets() -> Vec<(String, Vec<IbenchStepInput>)> {
    let mut a_li1 = step("l.i1", Some(1000.0), None, None);
    a_li1.client_finish_secs = vec![100.0, 150.0];
    // What the step stored (workload::ibench::metrics derives them).
    a_li1.maxop_secs = Some(2.5);
    a_li1.p50 = Some(1_000.0);
    a_li1.p99 = Some(900.0);
    a_li1.roles = vec![RoleLatency {
        role: "insert".into(),
        latency: LatencySummary {
            max: 2_500_000,
            ..Default::default()
        },
        buckets_pct: None,
    }];
    a_li1.seconds = (0..4)
        .map(|s| IbenchSecond {
            sec: s,
            ips: Some(900.0 + f64::from(s) * 50.0),
            qps: None,
            max_rt_us: Some(1000),
            dps: None,
            max_insert_us: None,
            max_delete_us: None,
            max_query_us: None,
        })
        .collect();
    vec![
        (
            "pg17".into(),
            vec![
                step("l.i0", Some(50_000.0), None, None),
                a_li1,
                step("qr100", Some(200.0), Some(4000.0), Some(200.0)),
            ],
        ),
        (
            "pg18".into(),
            vec![
                step("qr100", Some(150.0), Some(5000.0), Some(200.0)),
                step("l.i0", Some(47_000.0), None, None),
                step("l.i1", Some(1100.0), None, None),
            ],
        ),
    ]
}

#[test]
fn section_tables_from_two_targets() {
    let s = section(&two_targets(), Bands::IBENCH).unwrap();
    assert_eq!(s.steps, ["l.i0", "l.i1", "qr100"]);
    assert_eq!(s.query_steps, ["qr100"]);
    let pg18 = &s.throughput[1];
    assert_eq!(pg18.cells[0].value, Some(47_000.0));
    assert_eq!(
        pg18.cells[0].relative.map(crate::report::model::round2),
        Some(0.94)
    );
    assert_eq!(pg18.cells[0].band, Some(Band::Slower));
    assert_eq!(pg18.cells[1].band, Some(Band::Faster));
    // qr100 on pg18 missed its SLA (150 of 200/s): greyed, not shaded.
    assert_eq!(pg18.cells[2].value, Some(5000.0));
    assert!(pg18.cells[2].sla_failed && pg18.cells[2].shade.is_none());
    assert!(s.background[1].cells[0].sla_failed);
    assert!(!s.background[0].cells[0].sla_failed);
    assert_eq!(s.background_targets, [Some(200.0)]);
    // Fairness only where two clients finished.
    assert_eq!(s.fairness.len(), 1);
    assert_eq!(s.fairness[0].step, "l.i1");
    assert_eq!(s.fairness[0].rows[0].1.pct, 50.0);
    // The metrics row: ips, and maxop, p50, p99 as the step stored them.
    let li1 = s.metrics.iter().find(|m| m.step == "l.i1").unwrap();
    let row = &li1.rows[0].1;
    let col = |k: &str| row[METRIC_COLUMNS.iter().position(|c| *c == k).unwrap()];
    assert_eq!(col("ips"), Some(1000.0));
    assert_eq!(col("maxop"), Some(2.5));
    assert_eq!(col("p50"), Some(1_000.0));
    assert_eq!(col("p99"), Some(900.0));
    assert_eq!(col("cpupq"), None, "host metrics are n/a until stored");
    assert_eq!(s.series.len(), 1);
    assert_eq!(s.series[0].lines[0].ips.len(), 4);
}

#[test]
fn no_steps_no_section() {
    assert!(section(&[("a".into(), Vec::new())], Bands::IBENCH).is_none());
}

fn report_with(section: IbenchSection) -> crate::report::Report {
    use crate::report::context::Context;
    use crate::report::model::{Report, TargetColumn};
    let target = |label: &str, column: &str| TargetColumn {
        label: label.into(),
        column: column.into(),
        stored_label: label.into(),
        run_id: 1,
        position: 0,
        spec: "pg@system".into(),
        dbms: "postgres".into(),
        version_number: "17".into(),
        config_name: None,
        managed: true,
        status: "finished".into(),
        failure: None,
    };
    Report {
        format: 1,
        tidemark_version: "test".into(),
        generated_at: "2026-01-01T00:00:00Z".into(),
        base: "pg17".into(),
        bands: Bands::SYSBENCH,
        ibench_bands: Bands::IBENCH,
        chart_floor: 0.8,
        within_bp: 2.0,
        min_effect: 0.03,
        chain: false,
        interval_method: None,
        targets: vec![target("pg17", "base"), target("pg18", "col-1")],
        context: Context {
            runs: Vec::new(),
            same_host: true,
            targets: Vec::new(),
            settings_common: Vec::new(),
            settings_differ: Vec::new(),
        },
        sysbench: None,
        ibench: Some(section),
        sweep: None,
        query_plan_changes: Vec::new(),
        server: None,
        profiles: None,
        instructions: None,
        storage: Vec::new(),
        shards: Vec::new(),
        notes: Vec::new(),
    }
}

#[test]
fn markdown_shows_the_three_summary_tables_and_fairness() {
    let r = report_with(section(&two_targets(), Bands::IBENCH).unwrap());
    let md = crate::report::markdown::render(&r);
    assert!(md.contains("| dbms | l.i0 | l.i1 | qr100 |"), "{md}");
    // pg18's qr100 missed its SLA: marked in every table.
    assert!(md.contains("| pg18 | 47000 | 1100 | 5000 † |"), "{md}");
    assert!(
        md.contains("| pg18 | _0.94_ | **1.10** | **1.25** † |"),
        "{md}"
    );
    assert!(
        md.contains("| pg18 | 150 † |") && md.contains("| target | 200 |"),
        "{md}"
    );
    assert!(
        md.contains("| pg17 | 2 | 100 | 150 | 50.0 | 50.0 |"),
        "{md}"
    );
    assert!(md.contains("Metrics of l.i1:"), "{md}");
}

#[test]
fn html_greys_sla_failures_and_draws_the_per_second_lines() {
    let r = report_with(section(&two_targets(), Bands::IBENCH).unwrap());
    let html = crate::report::html::render(&r);
    assert!(html.contains(r#"<td class="sla">5000</td>"#), "{html}");
    assert_eq!(
        html.matches("class=\"chart lines\"").count(),
        2,
        "ips and max rt of l.i1"
    );
    // One inline filter script, nothing loaded.
    assert!(!html.contains("<script src"));
    assert_eq!(html.matches("<script").count(), 1);
}
