//! The report of a run with the same spec twice and `--repeat 2`
//! (tests/fixtures/report-repeat, a real short run; see its README): one
//! column per target, never per repetition; the second spec labelled `#2`;
//! every relative number with a paired interval of n = 2; a Markdown
//! snapshot of the whole page.

use std::path::{Path, PathBuf};

use tidemark::report::select::select;
use tidemark::report::{Report, ReportOptions, markdown, model};
use tidemark::store::Store;

/// A copy of the fixture's results directory (opening a store writes its
/// WAL files next to it, which must not happen in the source tree).
fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let results = dir.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-repeat/results.db");
    std::fs::copy(&src, results.join("results.db")).expect("fixture results.db");
    (dir, results)
}

fn fixture_report(results: &Path) -> Report {
    let store = Store::open_existing(results).expect("fixture opens");
    let sel = select(&store, &[], &[]).expect("selection");
    model::build(&sel, &ReportOptions::default()).expect("report builds")
}

#[test]
fn repetitions_make_one_column_per_target_with_an_interval() {
    let (_dir, results) = fixture_copy();
    let r = fixture_report(&results);
    let labels: Vec<&str> = r.targets.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(labels, ["pg1518.base", "pg1518.base#2"]);
    let s = r.sysbench.as_ref().unwrap();
    let mut cells = 0;
    for t in s.groups.iter().flat_map(|g| &g.tests) {
        let base = t.cells[0].as_ref().unwrap();
        assert_eq!(base.n, 2, "{}", t.name);
        assert!(base.interval.is_none() && base.verdict.is_none());
        let c = t.cells[1].as_ref().unwrap();
        assert_eq!(c.n, 2, "{}", t.name);
        let iv = c.interval.unwrap();
        assert_eq!(iv.n, 2);
        // Each repetition ran on fresh servers; the variance is pooled
        // over the group's tests.
        assert_eq!(iv.method, tidemark::stats::Method::PooledRepetitions);
        assert!(iv.lo <= iv.estimate && iv.estimate <= iv.hi);
        assert_eq!(c.relative, Some(iv.estimate));
        assert!(c.verdict.is_some());
        cells += 1;
    }
    assert_eq!(cells, 4);
    // The servers were up together: host-wide costs get no verdict, the
    // server's own CPU does.
    let key = |name: &str| s.cost_columns.iter().position(|c| c.key == name).unwrap();
    let point_query = s.groups[0].tests[0].cells[1].as_ref().unwrap();
    assert_eq!(point_query.cost_verdict[key("cpupq")], Some("not verified"));
    let srv = point_query.cost_verdict[key("server_cpu")].unwrap();
    assert!(srv != "not verified", "{srv}");
    // Pooled: the two point tests' intervals are equally wide.
    let point = &s.groups[0];
    assert_eq!(point.group, "point");
    let hw: Vec<f64> = point
        .tests
        .iter()
        .map(|t| t.cells[1].as_ref().unwrap().interval.unwrap().half_width())
        .collect();
    assert_eq!(hw.len(), 2);
    assert!((hw[0] - hw[1]).abs() < 1e-12, "{hw:?}");
    for g in &s.groups {
        assert_eq!(g.summaries.len(), 1);
        assert_eq!(g.summaries[0].verdicts.decided() as usize, g.tests.len());
    }
}

#[test]
fn markdown_of_a_repeated_run_with_the_same_spec_twice() {
    let (_dir, results) = fixture_copy();
    let md = markdown::render(&fixture_report(&results));
    let mut s = insta::Settings::clone_current();
    s.add_filter(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", "[time]");
    s.add_filter(
        &format!("tidemark {}", env!("CARGO_PKG_VERSION").replace('.', r"\.")),
        "tidemark [version]",
    );
    s.bind(|| insta::assert_snapshot!("repeat_markdown", md));
}

#[test]
fn an_a_a_run_passes_the_gate_and_its_junit_file_is_well_formed() {
    let (dir, results) = fixture_copy();
    let out = dir.path().join("gate");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(["report", "--results"])
        .arg(&results)
        .arg("-o")
        .arg(&out)
        .args(["--fail-on", "any"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("gate --fail-on any: passed"), "{text}");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    let r = fixture_report(&results);
    let cells = tidemark::report::gate::cells(&r);
    assert!(!cells.is_empty());
    assert_eq!(junit.matches("<testcase ").count(), cells.len(), "{junit}");
    assert!(!junit.contains("<failure"), "{junit}");
    // Well formed: every element opened is closed, in order.
    let mut open: Vec<String> = Vec::new();
    for tag in junit.split('<').skip(1) {
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if tag.starts_with('?') {
            continue;
        } else if tag.starts_with('/') {
            assert_eq!(open.pop().as_deref(), Some(name.as_str()), "{junit}");
        } else if !tag.trim_end().ends_with("/>") {
            open.push(name);
        }
    }
    assert!(open.is_empty(), "{open:?}");
    // Every cell in Bencher's shape: benchmark → measure → value.
    let bencher: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bencher.json")).unwrap()).unwrap();
    for (name, measures) in bencher.as_object().unwrap() {
        assert!(name.contains(" ["), "{name}");
        for (measure, m) in measures.as_object().unwrap() {
            assert!(["throughput", "relative-throughput"].contains(&measure.as_str()));
            assert!(m["value"].is_f64(), "{name} {measure}: {m}");
        }
    }
}

/// A `.pre` run (a read test measured right after the load, before the
/// writes) is shown but not pooled with its group's reported tests: it
/// keeps the paired interval of its own repetitions, while the reported
/// test beside it keeps the pooled one.
#[test]
fn a_pre_run_keeps_its_own_repetitions_interval() {
    let (_dir, results) = fixture_copy();
    let db = rusqlite::Connection::open(results.join("results.db")).unwrap();
    let renamed = db
        .execute(
            "UPDATE steps SET name = 'point-query.pre_range=100', reported = 0 \
             WHERE name = 'point-query_range=100'",
            [],
        )
        .unwrap();
    assert!(renamed >= 4, "{renamed}");
    drop(db);
    let r = fixture_report(&results);
    let point = &r.sysbench.as_ref().unwrap().groups[0];
    let method = |name: &str| {
        let t = point.tests.iter().find(|t| t.name == name).unwrap();
        t.cells[1].as_ref().unwrap().interval.unwrap().method
    };
    use tidemark::stats::Method;
    assert_eq!(method("point-query.pre_range=100"), Method::PairedT);
    assert_eq!(method("random-points_range=10"), Method::PooledRepetitions);
}
