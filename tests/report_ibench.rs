//! The Insert Benchmark section of the report on a real stored run
//! (tests/fixtures/report-ibench, see its README): a Markdown snapshot of
//! the seeds' `| dbms | l.i0 | l.x | …` tables, and the reference's
//! per-second charts (inserts/s, deletes/s, queries/s and the max insert,
//! delete and query response time) drawn in headless Chromium.

mod common;

use std::path::Path;

use common::chromium::probe_page;
use tidemark::report::select::select;
use tidemark::report::{Report, ReportOptions, html, markdown, model};
use tidemark::store::Store;

fn fixture_report() -> (tempfile::TempDir, Report) {
    let dir = tempfile::tempdir().expect("temp dir");
    let results = dir.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-ibench/results.db");
    std::fs::copy(&src, results.join("results.db")).expect("fixture results.db");
    let store = Store::open_existing(&results).expect("fixture opens");
    let sel = select(&store, &[], &[]).expect("selection");
    let opts = ReportOptions {
        generated_at: "2026-01-01T00:00:00Z".into(),
        ..ReportOptions::default()
    };
    let r = model::build(&sel, &opts).expect("report builds");
    (dir, r)
}

#[test]
fn markdown_reproduces_the_seeds_insert_benchmark_tables() {
    let (_dir, r) = fixture_report();
    let sections = markdown::sections(&r);
    let (_, ib) = sections
        .iter()
        .find(|(s, _)| s == "ibench")
        .expect("ibench section");
    assert!(ib.contains("| dbms | l.i0 | l.x | l.i1 | l.i2 |"), "{ib}");
    let (_, summary) = &sections[0];
    assert!(summary.contains("ibench: Insert Benchmark"), "{summary}");
    insta::assert_snapshot!("ibench_section", ib);
}

/// For each per-second chart: its title and how many lines have points.
const CHARTS: &str = r#"<script>
const charts = [...document.querySelectorAll('svg.chart')].map(s => {
  const t = s.querySelector('text');
  const lines = [...s.querySelectorAll('polyline.line')]
    .filter(e => { const b = e.getBBox(); return b.width > 0; }).length;
  return [t ? t.textContent : '', lines, Math.round(s.getBoundingClientRect().width)];
});
const out = document.createElement('pre');
out.textContent = 'PROBE' + JSON.stringify({charts}) + 'END';
document.body.appendChild(out);
</script>"#;

#[test]
fn the_per_second_charts_draw_inserts_deletes_queries_and_max_response_times() {
    let (dir, r) = fixture_report();
    let page = html::render(&r);
    let p = probe_page(&page, dir.path(), "ibench", 1400, 900, CHARTS);
    let charts = p["charts"].as_array().unwrap();
    let drawn = |title: &str| {
        charts
            .iter()
            .find(|c| c[0].as_str().is_some_and(|t| t.starts_with(title)))
            .unwrap_or_else(|| panic!("no chart {title}: {p}"))
    };
    // l.i1 inserts and deletes; qr100 also queries: every chart has one
    // line per target, and two charts fit side by side at 1400 px.
    for title in [
        "l.i1: inserts/s",
        "l.i1: deletes/s",
        "l.i1: max insert response time",
        "l.i1: max delete response time",
        "qr100: queries/s",
        "qr100: max query response time",
        "qr100: deletes/s",
    ] {
        let c = drawn(title);
        assert_eq!(c[1], 2, "{title}: {p}");
        assert!(
            c[2].as_u64().unwrap() <= 700,
            "{title} is half the page wide: {p}"
        );
    }
}
