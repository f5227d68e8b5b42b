//! The sysbench section as a document, one part per group so each pastes
//! into a post alone: the group's verdict summary, the seeds' legend and
//! `col-1 col-2 … test` table of relative QPS (Markdown; a bar chart with
//! interval whiskers on the page), QPS, a workload file's transactions
//! and statement latencies, the seeds' per-operation cost table and the
//! latency percentiles.

use std::fmt::Write as _;

use crate::report::document::{
    Block, Cell, Chart, Column, Row, Shade, Table, html_only, markdown_only,
};
use crate::report::format::{amount, rel};
use crate::report::model::Report;
use crate::report::overview::group_anchor;
use crate::report::render::svg::{BarSeries, color, esc};
use crate::report::sysbench::{GroupSection, SysbenchSection};

/// The section (`## Sysbench`, `<section id="sysbench">`): [`intro`]
/// and every [`group`].
pub fn section(r: &Report, s: &SysbenchSection) -> Block {
    let mut blocks = intro(r);
    for g in &s.groups {
        blocks.extend(group(r, s, g));
    }
    Block::section("sysbench", "Sysbench", blocks)
}

/// What the relative numbers mean (with two or more targets).
pub fn intro(r: &Report) -> Vec<Block> {
    if r.targets.len() < 2 {
        return Vec::new();
    }
    let m = amount(r.min_effect * 100.0);
    let m = m.trim_end_matches(".00");
    let mut md = format!(
        "Relative QPS (rQPS) is QPS(target) / QPS(base): above 1 the target is faster; \
         ± is half its 95 % interval. **Bold**: faster, _italic_: slower — the whole \
         interval past 1 and the change at least {m}%; plain: no difference (within \
         noise or under {m}%). One basis point is a change of 0.01 in rQPS.\n\n"
    );
    if let Some(i) = &r.interval_method {
        let _ = write!(md, "Intervals: {i}.\n\n");
    }
    vec![
        Block::Markdown(md),
        Block::Html(format!(
            "<p class=\"legend\">Relative QPS (rQPS) = QPS(target) / QPS(base {}); ± is half its \
             95 % interval (whiskers on the charts; hover a cell for its ends and method). \
             Green: faster, red: slower — the whole interval past 1 and the change at least {m}%; \
             grey: no difference. One basis point is a change of 0.01 in rQPS. \
             Charts start at {:.2}.{}</p>\n",
            esc(&r.base),
            r.chart_floor,
            r.interval_method
                .as_ref()
                .map(|m| format!(" Intervals: {}.", esc(m)))
                .unwrap_or_default()
        )),
    ]
}

/// One group's part.
pub fn group(r: &Report, s: &SysbenchSection, g: &GroupSection) -> Vec<Block> {
    let mut b = vec![
        Block::Markdown(format!("### {}\n\n", g.title)),
        Block::Html(format!(
            "<div class=\"grp\" data-group=\"{}\"><h3 id=\"{}\">{}</h3>\n",
            g.group,
            group_anchor(g.group),
            esc(g.title)
        )),
    ];
    if !g.summaries.is_empty() {
        let mut md = String::new();
        let mut html = String::from("<ul class=\"summary\">");
        for sum in &g.summaries {
            let _ = writeln!(md, "- {} ({}): {}", sum.column, sum.target, sum.text);
            let _ = write!(
                html,
                "<li><b>{} ({})</b>: {}</li>",
                esc(&sum.column),
                esc(&sum.target),
                esc(&sum.text)
            );
        }
        md.push('\n');
        md.push_str(&legend(r));
        b.push(Block::Markdown(md));
        b.push(Block::Html(html + "</ul>\n"));
        b.push(markdown_only(&[Block::Table(relative_table(r, g))]));
        b.push(Block::Markdown(seeds_block(r, g)));
        b.push(Block::Chart(bars(r, g)));
    }
    b.push(markdown_only(&absolute_qps(r, g)));
    b.push(html_only(&[Block::Table(qps_table(r, g))]));
    b.extend(workload_counts(r, g));
    b.extend(statement_latencies(r, g));
    b.push(Block::Markdown(writes_block(r, g)));
    b.extend(super::sysbench_cost::blocks(r, s, g));
    b.push(markdown_only(&[
        Block::Para("Latency per event (µs):".into()),
        Block::Table(latency_long(r, g)),
    ]));
    b.push(Block::Html(
        "<details class=\"lat\"><summary>Latency per test (µs): p50, p95, p99, max</summary>"
            .into(),
    ));
    b.push(html_only(&[Block::Table(latency_wide(r, g))]));
    b.push(Block::Html("</details>\n</div>\n".into()));
    b
}

/// The seeds' legend: the base and what each `col-N` is.
fn legend(r: &Report) -> String {
    let mut o = format!("Relative to: {}  \n", r.base);
    for t in &r.targets[1..] {
        let _ = writeln!(o, "{} : {}  ", t.column, t.label);
    }
    o.push('\n');
    o
}

/// A test's relative QPS on target `i` with its interval and verdict;
/// `-` without one.
fn ratio(c: Option<&crate::report::sysbench::Cell>) -> Cell {
    match c.and_then(|c| Some((c.relative?, c))) {
        Some((x, c)) => Cell::ratio(x, c.interval, c.verdict, c.band),
        None => Cell::num("-"),
    }
}

/// The seeds' table: `col-1 col-2 … <group>`, one row per test, the test
/// last.
fn relative_table(r: &Report, g: &GroupSection) -> Table {
    let mut columns: Vec<Column> = r.targets[1..]
        .iter()
        .map(|t| Column::num(&t.column))
        .collect();
    columns.push(Column::text(g.title));
    let rows = g
        .tests
        .iter()
        .map(|t| {
            let mut v: Vec<Cell> = t.cells[1..]
                .iter()
                .map(|c| match c.as_ref().filter(|c| c.band.is_some()) {
                    Some(c) => ratio(Some(c)),
                    None => Cell::num("-"),
                })
                .collect();
            v.push(Cell::text(&t.label));
            Row::new(v)
        })
        .collect();
    Table::new("rqps", columns, rows)
}

/// The group's rQPS as the seeds' posts print it: a plain-text block,
/// columns 8 wide, `col-1   col-2   <group>` then one line per test with
/// the test last.
fn seeds_block(r: &Report, g: &GroupSection) -> String {
    let mut o = String::from("As the seeds print it:\n\n```text\n");
    for t in &r.targets[1..] {
        let _ = write!(o, "{:<8}", t.column);
    }
    let _ = writeln!(o, "{}", g.title);
    for t in &g.tests {
        for c in &t.cells[1..] {
            let v = c.as_ref().and_then(|c| c.relative).map_or("-".into(), rel);
            let _ = write!(o, "{v:<8}");
        }
        let _ = writeln!(o, "{}", t.label);
    }
    o.push_str("```\n\n");
    o
}

/// The relative-QPS bar chart with interval whiskers.
fn bars(r: &Report, g: &GroupSection) -> Chart {
    let series = r.targets[1..]
        .iter()
        .enumerate()
        .map(|(i, t)| BarSeries {
            name: format!("{} {}", t.column, t.label),
            color: color(i),
            values: g
                .tests
                .iter()
                .map(|x| x.cells[i + 1].as_ref().and_then(|c| c.relative))
                .collect(),
            intervals: g
                .tests
                .iter()
                .map(|x| {
                    let iv = x.cells[i + 1].as_ref()?.interval?;
                    Some((iv.lo, iv.hi))
                })
                .collect(),
        })
        .collect();
    Chart::Bars {
        title: format!("{}: relative QPS", g.title),
        categories: g.tests.iter().map(|t| t.label.clone()).collect(),
        series,
        floor: r.chart_floor,
        bands: r.bands,
    }
}

/// Absolute QPS, a column per target (Markdown), with a note when a step
/// had errors.
fn absolute_qps(r: &Report, g: &GroupSection) -> Vec<Block> {
    let mut columns = vec![Column::text("test")];
    columns.extend(r.targets.iter().map(|t| Column::num(&t.label)));
    let mut flagged = false;
    let rows = g
        .tests
        .iter()
        .map(|t| {
            let mut v = vec![Cell::text(&t.label)];
            v.extend(t.cells.iter().map(|c| match c {
                Some(c) if c.flagged() => {
                    flagged = true;
                    Cell::num(format!("{} !", amount(c.qps)))
                }
                Some(c) => Cell::amount(c.qps),
                None => Cell::num("-"),
            }));
            Row::new(v)
        })
        .collect();
    let mut out = vec![
        Block::Para("Absolute QPS:".into()),
        Block::Table(Table::new("qps", columns, rows)),
    ];
    if flagged {
        out.push(Block::Para(
            "! = the step had errors or did not run to its end.".into(),
        ));
    }
    out
}

/// QPS of the base, then per target its QPS and rQPS (the page).
fn qps_table(r: &Report, g: &GroupSection) -> Table {
    let mut columns = vec![Column::text("test"), Column::num(format!("{} QPS", r.base))];
    for t in &r.targets[1..] {
        columns.push(Column::num(format!("{} QPS", t.label)));
        columns.push(Column::num(format!("{} rQPS", t.column)));
    }
    let rows = g
        .tests
        .iter()
        .map(|t| {
            let mut v = vec![Cell::text(&t.label)];
            for (i, c) in t.cells.iter().enumerate() {
                v.push(match c {
                    Some(c) if c.flagged() => Cell::num(format!("{} !", amount(c.qps)))
                        .shaded(Shade::Flag)
                        .detailed(c.status),
                    Some(c) => Cell::amount(c.qps),
                    None => Cell::num("-"),
                });
                if i > 0 {
                    v.push(ratio(c.as_ref()));
                }
            }
            Row::tagged(&t.label, v)
        })
        .collect();
    Table::new("qps", columns, rows)
}

/// A workload file's transactions, retries and failures per target
/// (measured interval, summed over repetitions); nothing for sysbench.
fn workload_counts(r: &Report, g: &GroupSection) -> Vec<Block> {
    let rows: Vec<Row> = g
        .tests
        .iter()
        .flat_map(|t| {
            t.cells.iter().zip(&r.targets).filter_map(|(c, target)| {
                let counts = c.as_ref()?.workload.as_ref()?;
                Some(Row::tagged(
                    &t.label,
                    vec![
                        Cell::text(&t.label),
                        Cell::text(&target.label),
                        Cell::text(crate::report::workload_file::summary(counts)),
                    ],
                ))
            })
        })
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    vec![
        Block::Para(
            "Transactions (measured interval; retries and failures by error class):".into(),
        ),
        Block::Table(Table::new(
            "wl",
            ["workload", "target", "transactions"]
                .map(Column::text)
                .to_vec(),
            rows,
        )),
    ]
}

/// A workload file's statements and each target's mean latency per
/// execution (pgbench -r's per-statement report); nothing for sysbench.
fn statement_latencies(r: &Report, g: &GroupSection) -> Vec<Block> {
    let mut rows = Vec::new();
    for t in &g.tests {
        for s in crate::report::workload_file::statement_rows(&t.workload_counts()) {
            let sql = crate::report::workload_file::sql_excerpt(&s.sql, 60);
            let mut v = vec![
                Cell::text(&t.label),
                Cell::text(&s.key),
                Cell {
                    hover: Some(s.sql.clone()),
                    ..Cell::code(sql)
                },
            ];
            v.extend(s.mean_ms.iter().map(|m| Cell::opt_amount(*m)));
            rows.push(Row::tagged(&t.label, v));
        }
    }
    if rows.is_empty() {
        return Vec::new();
    }
    let mut columns = ["workload", "statement", "SQL"].map(Column::text).to_vec();
    columns.extend(r.targets.iter().map(|t| Column::num(&t.label)));
    vec![
        Block::Para("Statement latencies (mean ms per execution, measured interval):".into()),
        Block::Table(Table::new("stmt", columns, rows)),
    ]
}

/// The seeds' config-comparison block (the 2024 fsync/binlog post):
/// absolute QPS of insert, update-index and update-nonindex, one line per
/// target, the target last. Only for a group that has all three.
fn writes_block(r: &Report, g: &GroupSection) -> String {
    let cols = [
        ("insert", "ins"),
        ("update-index", "upd-ix"),
        ("update-nonindex", "upd-nix"),
    ];
    let rows: Option<Vec<_>> = cols
        .iter()
        .map(|(name, _)| g.tests.iter().find(|t| t.label == *name))
        .collect();
    let Some(rows) = rows else {
        return String::new();
    };
    let mut o = String::from(
        "Absolute QPS of the three write tests, one line per target, as the seeds print it:\n\n```text\n",
    );
    for (_, short) in &cols {
        let _ = write!(o, "{short:<8}");
    }
    o.push_str("dbms\n");
    for (i, t) in r.targets.iter().enumerate() {
        for row in &rows {
            let v = row.cells[i]
                .as_ref()
                .map_or("-".into(), |c| format!("{:.0}", c.qps));
            let _ = write!(o, "{v:>6}  ");
        }
        let _ = writeln!(o, "{}", t.label);
    }
    o.push_str("```\n\n");
    o
}

/// The four percentiles of a test on a target, µs (`-` when not run).
fn percentiles(c: Option<&crate::report::sysbench::Cell>) -> [Cell; 4] {
    match c {
        Some(c) => [c.p50_us, c.p95_us, c.p99_us, c.max_us].map(Cell::count),
        None => std::array::from_fn(|_| Cell::num("-")),
    }
}

/// Event latency, one row per test and target (Markdown).
fn latency_long(r: &Report, g: &GroupSection) -> Table {
    let mut columns = vec![Column::text("test"), Column::text("target")];
    columns.extend(["p50", "p95", "p99", "max"].map(Column::num));
    let mut rows = Vec::new();
    for t in &g.tests {
        for (i, c) in t.cells.iter().enumerate() {
            let mut v = vec![Cell::text(&t.label), Cell::text(&r.targets[i].label)];
            v.extend(percentiles(c.as_ref()));
            rows.push(Row::new(v));
        }
    }
    Table::new("lat", columns, rows)
}

/// Event latency, one row per test, the four percentiles per target (the
/// page).
fn latency_wide(r: &Report, g: &GroupSection) -> Table {
    let mut columns = vec![Column::text("test")];
    for t in &r.targets {
        columns
            .extend(["p50", "p95", "p99", "max"].map(|p| Column::num(format!("{} {p}", t.column))));
    }
    let rows = g
        .tests
        .iter()
        .map(|t| {
            let mut v = vec![Cell::text(&t.label)];
            for c in &t.cells {
                v.extend(percentiles(c.as_ref()));
            }
            Row::tagged(&t.label, v)
        })
        .collect();
    Table::new("lat", columns, rows)
}

/// The end-of-run table `tidemark run` prints for a group: each test's
/// QPS on each target (`!` after a step with errors), against the base
/// its rQPS with its interval and the verdict, and the last target's p99.
pub fn verdict_table(r: &Report, g: &GroupSection) -> Table {
    let mut columns = vec![Column::text("test")];
    for (i, t) in r.targets.iter().enumerate() {
        columns.push(Column::num(&t.label));
        if i > 0 {
            columns.extend([Column::num("rel ±95%"), Column::text("verdict")]);
        }
    }
    columns.push(Column::num("p99 µs"));
    let rows = g
        .tests
        .iter()
        .map(|t| {
            let mut v = vec![Cell::text(&t.name)];
            let mut p99 = 0;
            for (i, c) in t.cells.iter().enumerate() {
                match c {
                    Some(c) => {
                        let mark = if c.flagged() { "!" } else { " " };
                        v.push(Cell::num(format!("{:.0}", c.qps)).marked(mark));
                        if i > 0 {
                            v.extend([ratio(Some(c)), Cell::text(c.verdict.unwrap_or("-"))]);
                        }
                        p99 = c.p99_us;
                    }
                    None => {
                        v.push(Cell::num("-"));
                        if i > 0 {
                            v.extend([Cell::num("-"), Cell::text("")]);
                        }
                    }
                }
            }
            v.push(Cell::count(p99));
            Row::new(v)
        })
        .collect();
    Table::new("verdicts", columns, rows)
}
