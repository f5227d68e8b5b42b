//! The instruction section from a real store: two targets whose point
//! query differs by a planted 1 % in instructions per statement, one count
//! each.

use std::collections::BTreeMap;

use crate::record::{
    Counts, FunctionIr, Group, HostCost, OpRates, StepHost, StepInfo, StepInstructions, StepResult,
    StepStatus, TargetInfo,
};
use crate::store::{RunInfo, Store};

fn counted(client_ir: u64, extra_fn: u64) -> StepHost {
    StepHost {
        seconds: Vec::new(),
        metrics: HostCost::from_samples(&[], 2, vec![], OpRates::queries(1.0), BTreeMap::new()),
        server_counters: None,
        cpu_profile: None,
        instructions: Some(StepInstructions {
            events: 1000,
            statements: 1000,
            client_ir,
            marker_ir: 40_000,
            background_ir: 600_000,
            background_procs: 6,
            clients: 1,
            functions: vec![
                FunctionIr {
                    name: "PostgresMain".into(),
                    self_ir: 1_000_000,
                    incl_ir: client_ir,
                },
                FunctionIr {
                    name: "planted_cost".into(),
                    self_ir: extra_fn,
                    incl_ir: extra_fn,
                },
            ],
        }),
    }
}

fn step() -> (StepInfo, StepResult) {
    let info = StepInfo {
        suite: "sysbench".into(),
        name: "point-query_range=100".into(),
        test: "point-query".into(),
        range: Some(100),
        group: Some(Group::Point),
        reported: true,
        note: None,
        params: serde_json::json!({}),
        sweep_threads: None,
    };
    let mut result = StepResult::failed(1, "");
    result.status = StepStatus::Ok;
    result.failure = None;
    result.secs = 2.0;
    result.counts = Counts {
        events: 1000,
        statements: 1000,
        ..Counts::default()
    };
    (info, result)
}

#[test]
fn a_planted_one_percent_is_slower_by_the_floor_and_named_by_its_function() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let run = store
        .begin_run(&RunInfo {
            started_at: "2026-11-27T09:00:00Z".into(),
            profile: "quick".into(),
            suite: "sysbench".into(),
            ..RunInfo::default()
        })
        .unwrap();
    let (info, result) = step();
    for (pos, (ir, planted)) in [(44_000_000u64, 0u64), (44_440_000, 440_000)]
        .into_iter()
        .enumerate()
    {
        let t = store
            .add_target(
                run,
                pos as u32,
                &TargetInfo {
                    spec: "pg@system".into(),
                    label: format!("pg{pos}"),
                    dbms: "postgres".into(),
                    managed: true,
                    ..TargetInfo::default()
                },
            )
            .unwrap();
        store
            .write_step(
                t,
                0,
                "2026-11-27T09:00:01Z",
                &info,
                &result,
                &[],
                Some(&counted(ir, planted)),
            )
            .unwrap();
    }
    store.finish_run(run, "finished").unwrap();
    let report = crate::report::model_for_run(&store, run, 0.03).unwrap();
    let s = report
        .instructions
        .as_ref()
        .expect("an instruction section");
    let cell = s.tests[0].cells[1].as_ref().unwrap();
    assert!((cell.per_query - 44_440.0).abs() < 1e-9);
    assert!((cell.relative.unwrap() - 1.01).abs() < 1e-9);
    assert_eq!(cell.verdict, Some("slower"));
    assert!(cell.method.as_deref().unwrap().contains("floor from A/A"));
    assert_eq!(s.summaries[0].verdicts.lower, 1, "counted as slower");
    assert_eq!(s.functions[0].rows[0].name, "planted_cost");
    assert!((s.functions[0].rows[0].self_change() - 440.0).abs() < 1e-9);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("ran under Valgrind")),
        "{:?}",
        report.notes
    );
    // The gate counts the cell: `--fail-on slower` fails on it, naming
    // the instruction count, and Bencher's format carries it.
    let failing = crate::report::gate::failing(&report, crate::report::gate::FailOn::Slower);
    assert_eq!(failing.len(), 1, "{failing:?}");
    assert_eq!(failing[0].suite, "instructions");
    assert!(
        failing[0]
            .line()
            .contains("Ir/q 1.010 (1.007–1.013, A/A floor), slower"),
        "{}",
        failing[0].line()
    );
    assert!(crate::report::gate::failing(&report, crate::report::gate::FailOn::Faster).is_empty());
    let bencher: serde_json::Value =
        serde_json::from_str(&crate::report::ci_formats::bencher(&report)).unwrap();
    let rel = &bencher["instructions/point-query_range=100 [pg1]"]["relative-instructions"];
    assert!(
        (rel["value"].as_f64().unwrap() - 1.01).abs() < 1e-9,
        "{bencher}"
    );
    assert_eq!(
        bencher["instructions/point-query_range=100 [pg0]"]["instructions"]["value"],
        44_000.0
    );
    let md = crate::report::render::markdown::render(&report);
    assert!(
        md.contains(
            "| point-query_range=100 | 44,000 | 600 | 44,440 | 1.0100 ±0.0025 | slower | 600 |"
        ),
        "{md}"
    );
    // The terminal draws the same table: the same cells on one line.
    let term = crate::console::instructions::summary(&report);
    let row = term
        .lines()
        .find(|l| l.trim_start().starts_with("point-query_range=100"))
        .unwrap_or_else(|| panic!("{term}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "point-query_range=100",
            "44,000",
            "600",
            "44,440",
            "1.0100",
            "±0.0025",
            "slower",
            "600"
        ],
        "{term}"
    );
}

#[test]
fn a_step_whose_count_was_lost_is_said_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let run = store.begin_run(&RunInfo::default()).unwrap();
    let (info, result) = step();
    let mut lost = counted(0, 0);
    lost.instructions = None;
    let why = "callgrind.out.7.2: an incomplete dump (no closing `totals:` line after 30 s)";
    lost.metrics
        .missing
        .insert("instructions".into(), why.into());
    for (pos, host) in [counted(44_000_000, 0), lost].iter().enumerate() {
        let t = (store.add_target(run, pos as u32, &TargetInfo::default())).unwrap();
        (store.write_step(t, 0, "", &info, &result, &[], Some(host))).unwrap();
    }
    store.finish_run(run, "finished").unwrap();
    let report = crate::report::model_for_run(&store, run, 0.03).unwrap();
    let note = (report.instructions.as_ref().unwrap().uncounted_note.clone()).unwrap();
    assert!(
        note.starts_with("1 of 2 steps run under Valgrind"),
        "{note}"
    );
    assert!(note.ends_with(&format!("(the first: {why})")), "{note}");
    let md = crate::report::render::markdown::render(&report);
    assert!(md.contains("Missing counts: 1 of 2 steps"), "{md}");
    assert!(crate::console::instructions::summary(&report).contains("missing counts: 1 of 2"));
    // A CI gate does not pass on a run whose counts were lost.
    let why = crate::report::gate::missing(&report).expect("the gate names the lost count");
    assert!(why.starts_with("missing counts: 1 of 2 steps"), "{why}");
}
