//! `tidemark report` on a fixed stored fixture (tests/fixtures/report, two
//! real short runs; see its README): snapshots of the Markdown and the JSON,
//! the HTML rendered in headless Chromium, the CLI's files and its one-line
//! errors for bad input.

mod common;

use std::path::{Path, PathBuf};

use common::chromium::{probe_page, screenshot};
use common::*;
use tidemark::report::select::select;
use tidemark::report::{Report, ReportOptions, html, markdown, model};
use tidemark::store::Store;

/// A copy of the fixture's results directory (opening a store writes its
/// WAL files next to it, which must not happen in the source tree).
fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let results = dir.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/results.db");
    std::fs::copy(&src, results.join("results.db")).expect("fixture results.db");
    (dir, results)
}

/// The fixture's report: run 1's target as the base, run 2's two targets.
fn fixture_report(results: &Path) -> Report {
    let store = Store::open_existing(results).expect("fixture opens");
    let sel = select(&store, &["1".into(), "2".into()], &[]).expect("selection");
    model::build(&sel, &ReportOptions::default()).expect("report builds")
}

/// Insta settings that hide what changes from one report to the next:
/// timestamps and the tidemark version.
fn redacted() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", "[time]");
    s.add_filter(
        &format!("tidemark {}", regex_escape(env!("CARGO_PKG_VERSION"))),
        "tidemark [version]",
    );
    s
}

fn regex_escape(s: &str) -> String {
    s.replace('.', r"\.")
}

#[test]
fn markdown_of_the_fixture() {
    let (_dir, results) = fixture_copy();
    let md = markdown::render(&fixture_report(&results));
    redacted().bind(|| insta::assert_snapshot!("fixture_markdown", md));
}

#[test]
fn json_of_the_fixture() {
    let (_dir, results) = fixture_copy();
    let report = fixture_report(&results);
    insta::assert_json_snapshot!("fixture_json", report, {
        ".generated_at" => "[time]",
        ".tidemark_version" => "[version]",
        ".context.runs[].started_at" => "[time]",
        ".context.runs[].finished_at" => "[time]",
    });
}

#[test]
fn the_fixture_compares_what_was_measured() {
    let (_dir, results) = fixture_copy();
    let r = fixture_report(&results);
    // Run 1's target and run 2's two: the same stored label made unique.
    let labels: Vec<&str> = r.targets.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(
        labels,
        ["pg1518.base.r1", "pg1518.base.r2", "pg1518.base.r2#2"]
    );
    let s = r.sysbench.as_ref().expect("sysbench section");
    let groups: Vec<&str> = s.groups.iter().map(|g| g.group).collect();
    assert_eq!(groups, ["point", "range-noagg", "range-agg", "write"]);
    // Relative QPS is the ratio of the stored QPS, for every cell.
    for g in &s.groups {
        for t in &g.tests {
            let base = t.cells[0].as_ref().unwrap().qps;
            for c in t.cells[1..].iter().flatten() {
                let rel = c.relative.unwrap();
                assert!((rel - c.qps / base).abs() < 1e-12, "{}", t.name);
            }
        }
        assert_eq!(g.summaries.len(), 2);
    }
    // Run 2 set enable_bitmapscan=off: the settings differ and the plans
    // of the range tests changed from bitmap scans to index scans.
    let diff: Vec<&str> = r
        .context
        .settings_differ
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(diff, ["enable_bitmapscan", "work_mem"]);
    let covered = r
        .query_plan_changes
        .iter()
        .find(|p| p.test == "range-covered-pk_range=100")
        .expect("range-covered-pk's plan changed");
    assert_eq!(covered.targets.len(), 2, "both targets share the new plan");
    assert!(covered.rows.iter().any(|row| {
        row.changed
            && row
                .target
                .as_deref()
                .is_some_and(|t| t.contains("Index Only Scan"))
            && row
                .base
                .as_deref()
                .is_some_and(|b| b.contains("Bitmap Heap Scan"))
    }));
    // The samplers' summary of every step fills every cost column: host
    // CPU per query above the server's share of it, nothing missing.
    let col = |key: &str| s.cost_columns.iter().position(|c| c.key == key).unwrap();
    assert!(s.cost_present.iter().all(|p| *p), "{:?}", s.cost_present);
    let (cpupq, server) = (col("cpupq"), col("server_cpu"));
    for g in &s.groups {
        for t in &g.tests {
            for c in t.cells.iter().flatten() {
                let (host, srv) = (c.cost[cpupq].unwrap(), c.cost[server].unwrap());
                assert!(
                    srv > 0.0 && srv < host,
                    "{}: server {srv} host {host}",
                    t.name
                );
            }
        }
    }
}

/// Measures the rendered page: appended to a copy of the report (the
/// report itself has no script), it writes the page height and, for each
/// chart, its rendered size and how many bars or lines have a non-empty box.
const PROBE: &str = r#"<script>
const charts = [...document.querySelectorAll('svg.chart')].map(s => {
  const r = s.getBoundingClientRect();
  const marks = [...s.querySelectorAll('rect.bar, polyline.line')]
    .filter(e => { const b = e.getBBox(); return b.width > 0 && b.height > 0; }).length;
  return [Math.round(r.width), Math.round(r.height), marks];
});
const out = document.createElement('pre');
out.id = 'probe';
out.textContent = 'PROBE' + JSON.stringify({height: document.documentElement.scrollHeight,
  width: document.documentElement.scrollWidth, charts}) + 'END';
document.body.appendChild(out);
</script>"#;

#[test]
fn html_renders_in_headless_chromium_with_its_charts() {
    let (dir, results) = fixture_copy();
    let report = fixture_report(&results);
    let page = html::render(&report);
    // One small inline script (the filter); nothing loaded from anywhere.
    assert_eq!(page.matches("<script").count(), 1);
    assert!(!page.contains("<script src"));
    assert!(
        !page.contains("http://")
            || page.matches("http://").count()
                == page.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(),
        "no network references besides the SVG namespace"
    );
    // Every group's cost tables sit in one foldable block, open by default.
    let groups = report.sysbench.as_ref().map_or(0, |s| s.groups.len());
    assert!(groups > 0);
    assert_eq!(
        page.matches("<details class=\"cost\" open><summary>Cost per query: cpupq")
            .count(),
        groups,
        "one open cost block per group"
    );
    let index = dir.path().join("index.html");
    std::fs::write(&index, &page).unwrap();
    let probe = probe_page(&page, dir.path(), "probe", 1280, 1000, PROBE);

    // One bar chart per sysbench group; each drawn, with one bar per test
    // and compared target.
    let groups = &report.sysbench.as_ref().unwrap().groups;
    let charts = probe["charts"].as_array().unwrap();
    assert_eq!(charts.len(), groups.len(), "{probe}");
    for (chart, g) in charts.iter().zip(groups) {
        let (w, h, marks) = (
            chart[0].as_u64().unwrap(),
            chart[1].as_u64().unwrap(),
            chart[2].as_u64().unwrap(),
        );
        assert!(w >= 300 && h >= 250, "chart {} is {w}×{h}", g.title);
        assert_eq!(
            marks as usize,
            g.tests.len() * 2,
            "bars drawn in {}",
            g.title
        );
    }
    let height = probe["height"].as_u64().unwrap();
    assert!(height > 2500, "the page is laid out in full: {height} px");
    assert!(
        probe["width"].as_u64().unwrap() <= 1280,
        "no horizontal overflow: {probe}"
    );

    // A screenshot of the whole page, kept for a human to look at.
    let height = u32::try_from(height).unwrap();
    let shot = screenshot(&index, dir.path(), "report-fixture.png", 1280, height);
    let png = std::fs::read(shot).unwrap();
    assert!(
        png.len() > 50_000,
        "a page of tables and charts, not a blank one"
    );
}

#[test]
fn report_verb_writes_the_files_and_refuses_bad_input() {
    let (dir, results) = fixture_copy();
    let r = results.to_str().unwrap();
    let out = dir.path().join("out");
    let o = run_tidemark(&[
        "report",
        "--results",
        r,
        "1",
        "2:pg1518.base",
        "--base",
        "pg1518.base.r2#2",
        "--label",
        "pg1518.base.r1=pg15-default",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("base pg1518.base.r2#2"),
        "{}",
        stdout(&o)
    );
    for f in ["index.html", "report.md", "report.json", "report.csv"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Relative to: pg1518.base.r2#2"), "{md}");
    assert!(md.contains("col-1 : pg15-default"), "{md}");
    let csv = std::fs::read_to_string(out.join("report.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        1 + 6 * 3,
        "header + 6 tests × 3 targets"
    );
    // Writing again into the report's own directory is fine.
    let again = run_tidemark(&["report", "--results", r, "-o", out.to_str().unwrap()]);
    assert!(again.status.success(), "{}", stderr(&again));

    // Default: the latest run, into RESULTS/reports/run-<id>.
    let o = run_tidemark(&["report", "--results", r]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(results.join("reports/run-2/index.html").is_file());

    let foreign = dir.path().join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();

    let newer = dir.path().join("newer");
    std::fs::create_dir_all(&newer).unwrap();
    std::fs::copy(results.join("results.db"), newer.join("results.db")).unwrap();
    rusqlite::Connection::open(newer.join("results.db"))
        .unwrap()
        .execute(
            "UPDATE meta SET value = '999' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();

    let f = foreign.to_str().unwrap();
    let n = newer.to_str().unwrap();
    let cases: [(&[&str], &str); 8] = [
        (&["report", "--results", r, "42"], "no run 42"),
        (&["report", "--results", r, "--base", "pg99"], "--base pg99"),
        (
            &["report", "--results", r, "pg1518.base"],
            "is in runs 1, 2",
        ),
        (
            &["report", "--results", r, "2:pg17"],
            "run 2 has no target labelled",
        ),
        (
            &["report", "--results", r, "--label", "nope=x"],
            "no selected target",
        ),
        (
            &["report", "--results", r, "--bands", "1.03,0.97"],
            "--bands",
        ),
        (&["report", "--results", r, "-o", f], "did not write"),
        (&["report", "--results", n], "newer tidemark"),
    ];
    for (args, want) in cases {
        let o = run_tidemark(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: one line: {err}"
        );
        assert!(
            err.starts_with("tidemark: ") && err.contains(want),
            "{args:?}: {err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(foreign.join("notes.txt")).unwrap(),
        "mine"
    );
    let store = Store::open_existing(&results).unwrap();
    assert_eq!(store.run_ids().unwrap(), [1, 2], "nothing stored was lost");
}
