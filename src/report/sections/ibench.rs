//! The Insert Benchmark section as a document: the reference's three
//! summary tables (throughput, relative, background insert rate against
//! its target; an SLA failure marked † in Markdown and greyed on the
//! page), then per step its metrics, fairness, response times and (on the
//! page) its per-second charts.

use crate::report::document::{
    Block, Cell, Chart, Column, Row, Shade, Table, html_only, markdown_only,
};
use crate::report::ibench::{
    FairnessTable, IbenchSection, METRIC_COLUMNS, MetricsTable, ResponseTable, SeriesLine,
};
use crate::report::model::Report;
use crate::report::render::svg::esc;

/// The section (`## Insert Benchmark`, `<section id="ibench">`).
pub fn section(r: &Report, s: &IbenchSection) -> Block {
    let mut blocks = vec![
        Block::Markdown(format!(
            "Throughput is inserts/s for l.i0, l.i1, l.i2, indexed rows/s for l.x and queries/s for the \
             qr/qp steps. † = the step missed its background insert rate (below 95% of the target): \
             an SLA failure. Relative: **bold** ≥ {:.2}, _italic_ ≤ {:.2}.\n\n",
            r.ibench_bands.high, r.ibench_bands.low
        )),
        Block::Html(format!(
            "<p class=\"legend\">Throughput: inserts/s (l.i0, l.i1, l.i2), indexed rows/s (l.x), queries/s (qr*, qp*). \
             Grey cells: the step missed its background insert rate (below 95% of the target, an SLA failure). \
             Relative: red ≤ {:.2}, green ≥ {:.2}.</p>\n",
            r.ibench_bands.low, r.ibench_bands.high
        )),
    ];
    blocks.extend(summary_tables(s).into_iter().map(Block::Table));
    // Markdown lists each kind of table over all steps; the page groups
    // each step's tables and charts.
    for m in &s.metrics {
        let per = match m.per.as_str() {
            "" => String::new(),
            per => format!(" ({per})"),
        };
        blocks.push(Block::Markdown(format!("Metrics of {}{per}:\n\n", m.step)));
        blocks.push(markdown_only(&[Block::Table(metrics_table(m))]));
    }
    for f in &s.fairness {
        blocks.push(Block::Markdown(format!(
            "Fairness of {} (seconds until each client finished; pct = diff / min_time × 100):\n\n",
            f.step
        )));
        blocks.push(markdown_only(&[Block::Table(fairness_table(f, "dbms"))]));
    }
    for t in &s.response_times {
        blocks.push(Block::Markdown(format!(
            "Response times of {} (µs; buckets in % of operations):\n\n",
            t.step
        )));
        blocks.push(markdown_only(&[Block::Table(response_table(
            s,
            t,
            ["dbms", "", ""],
        ))]));
    }
    for m in &s.metrics {
        let per = match m.per.as_str() {
            "" => String::new(),
            per => format!(" <small>({})</small>", esc(per)),
        };
        blocks.push(Block::Html(format!("<h3>{}{per}</h3>\n", esc(&m.step))));
        blocks.push(html_only(&[Block::Table(metrics_table(m))]));
        if let Some(f) = s.fairness.iter().find(|f| f.step == m.step) {
            blocks.push(html_only(&[Block::Table(fairness_table(f, "fairness"))]));
        }
        if let Some(t) = s.response_times.iter().find(|t| t.step == m.step) {
            let t = response_table(s, t, ["response time", " µs", " %"]);
            blocks.push(html_only(&[Block::Table(t)]));
        }
        if let Some(series) = s.series.iter().find(|x| x.step == m.step) {
            blocks.push(Block::Html("<div class=\"charts\">".into()));
            blocks.extend(charts(&m.step, &series.lines).into_iter().map(Block::Chart));
            blocks.push(Block::Html("</div>\n".into()));
        }
    }
    Block::section("ibench", "Insert Benchmark", blocks)
}

/// The columns `first`, then one per step.
fn step_columns(first: Column, steps: &[String]) -> Vec<Column> {
    let mut v = vec![first];
    v.extend(steps.iter().map(Column::num));
    v
}

/// Throughput, throughput relative to the first row and (with query
/// steps) the background insert rate against its target.
pub fn summary_tables(s: &IbenchSection) -> Vec<Table> {
    let sla = |failed: bool| if failed { " †" } else { "" };
    let abs = s
        .throughput
        .iter()
        .map(|row| {
            let mut v = vec![Cell::text(&row.target)];
            v.extend(row.cells.iter().map(|c| {
                let shade = match (c.sla_failed, c.shade) {
                    (true, _) => Shade::Sla,
                    (_, Some(crate::report::ibench::Shade::Low)) => Shade::Low,
                    (_, Some(crate::report::ibench::Shade::High)) => Shade::High,
                    _ => Shade::None,
                };
                match c.value {
                    Some(x) => Cell::amount(x).marked(sla(c.sla_failed)),
                    None => Cell::num("-"),
                }
                .shaded(shade)
            }));
            Row::new(v)
        })
        .collect();
    let relative = s
        .throughput
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mut v = vec![Cell::text(&row.target)];
            v.extend(row.cells.iter().map(|c| {
                let cell = match (i, c.value, c.relative) {
                    (0, Some(_), _) => Cell::num("1.00"),
                    (_, _, Some(x)) => {
                        let cell = Cell::ratio(x, c.interval, c.verdict, c.band);
                        if c.interval.is_some() {
                            cell
                        } else {
                            cell.plain()
                        }
                    }
                    _ => Cell::num("-"),
                };
                let shade = if c.sla_failed {
                    Shade::Sla
                } else {
                    Shade::of(c.band)
                };
                cell.shaded(shade).marked(sla(c.sla_failed))
            }));
            Row::new(v)
        })
        .collect();
    let columns = || step_columns(Column::text("dbms"), &s.steps);
    let mut out = vec![
        Table::new("ib", columns(), abs).captioned("Throughput"),
        Table::new("ib", columns(), relative).captioned("Throughput relative to the first row"),
    ];
    if !s.query_steps.is_empty() {
        let mut rows: Vec<Row> = s
            .background
            .iter()
            .map(|row| {
                let mut v = vec![Cell::text(&row.target)];
                v.extend(row.cells.iter().map(|c| {
                    let cell = Cell::opt_amount(c.achieved);
                    match (c.sla_failed, c.achieved) {
                        (true, Some(_)) => cell.marked(" †").shaded(Shade::Slower),
                        (true, None) => cell.shaded(Shade::Slower),
                        _ => cell,
                    }
                }));
                Row::new(v)
            })
            .collect();
        let mut last = vec![Cell::text("target")];
        last.extend(s.background_targets.iter().map(|t| Cell::opt_amount(*t)));
        rows.push(Row::new(last));
        let columns = step_columns(Column::num("dbms"), &s.query_steps);
        out.push(
            Table::new("ib", columns, rows)
                .captioned("Background insert rate (inserts/s) against its target"),
        );
    }
    out
}

/// A step's metrics row per target.
pub fn metrics_table(m: &MetricsTable) -> Table {
    let mut columns = vec![Column::text("dbms")];
    columns.extend(METRIC_COLUMNS.iter().map(|c| Column::num(*c)));
    let rows = m
        .rows
        .iter()
        .map(|(t, vals)| {
            let mut v = vec![Cell::text(t)];
            v.extend(vals.iter().map(|x| Cell::opt_amount(*x)));
            Row::new(v)
        })
        .collect();
    Table::new("metrics", columns, rows)
}

/// A step's fairness: seconds until each client finished; the first
/// column is titled `first`.
pub fn fairness_table(f: &FairnessTable, first: &str) -> Table {
    let mut columns = vec![Column::text(first)];
    columns.extend(["clients", "min_time", "max_time", "diff", "pct"].map(Column::num));
    let rows = f
        .rows
        .iter()
        .map(|(t, x)| {
            Row::new(vec![
                Cell::text(t),
                Cell::count(x.clients),
                Cell::amount(x.min_time),
                Cell::amount(x.max_time),
                Cell::amount(x.diff),
                Cell::num(format!("{:.1}", x.pct)),
            ])
        })
        .collect();
    Table::new("fair", columns, rows)
}

/// A step's response times per target and role: percentiles and the
/// share of operations per latency bucket. `titles`: the first column's
/// title and the suffixes of the percentile and bucket columns.
pub fn response_table(s: &IbenchSection, t: &ResponseTable, titles: [&str; 3]) -> Table {
    let [first, unit, pct] = titles;
    let mut columns = vec![Column::text(first), Column::text("role")];
    columns.extend(["p50", "p99", "p99.9", "max"].map(|p| Column::num(format!("{p}{unit}"))));
    columns.extend(
        s.latency_buckets
            .iter()
            .map(|b| Column::num(format!("{b}{pct}"))),
    );
    let rows = t
        .rows
        .iter()
        .map(|x| {
            let mut v = vec![Cell::text(&x.target), Cell::text(&x.role)];
            v.extend([x.p50_us, x.p99_us, x.p999_us, x.max_us].map(Cell::count));
            match &x.buckets_pct {
                Some(b) => v.extend(b.iter().map(|p| Cell::num(format!("{p:.1}")))),
                None => v.extend(s.latency_buckets.iter().map(|_| Cell::num("n/a"))),
            }
            Row::new(v)
        })
        .collect();
    Table::new("rt", columns, rows)
}

/// The reference's per-second charts of a step: inserts/s, max insert
/// response time, deletes/s, max delete response time, queries/s, max
/// query response time; steps without roles (l.x, older runs) keep one
/// max response time chart.
fn charts(step: &str, lines: &[SeriesLine]) -> Vec<Chart> {
    type Pick = fn(&SeriesLine) -> &Vec<[f64; 2]>;
    let by_role = lines.iter().any(|l| {
        !(l.max_insert_ms.is_empty() && l.max_delete_ms.is_empty() && l.max_query_ms.is_empty())
    });
    let picks: [(&str, Pick); 7] = [
        ("inserts/s", |l| &l.ips),
        ("max insert response time, ms", |l| &l.max_insert_ms),
        ("deletes/s", |l| &l.dps),
        ("max delete response time, ms", |l| &l.max_delete_ms),
        ("queries/s", |l| &l.qps),
        ("max query response time, ms", |l| &l.max_query_ms),
        ("max response time, ms", |l| &l.max_rt_ms),
    ];
    picks
        .into_iter()
        .filter(|(what, _)| !(by_role && *what == "max response time, ms"))
        .filter_map(|(what, pick)| {
            let series: Vec<_> = lines
                .iter()
                .map(|l| (l.target.clone(), pick(l).clone()))
                .collect();
            let title = format!("{step}: {what}, second by second");
            let drawn = series.iter().any(|(_, p)| !p.is_empty());
            drawn.then(|| Chart::lines(title, "second", what, series))
        })
        .collect()
}

/// The end-of-run throughput table `tidemark run` prints: per step each
/// target's rate (`!` after a step not ok, `*` after an SLA failure),
/// against the first target the ratio with its interval and the verdict.
pub fn verdict_table(s: &IbenchSection) -> Table {
    let mut columns = vec![Column::text("step")];
    for (i, row) in s.throughput.iter().enumerate() {
        columns.push(Column::num(&row.target));
        if i > 0 {
            columns.extend([Column::num("rel ±95%"), Column::text("verdict")]);
        }
    }
    let rows = s
        .steps
        .iter()
        .enumerate()
        .map(|(k, step)| {
            let mut v = vec![Cell::text(step)];
            for (i, row) in s.throughput.iter().enumerate() {
                let cell = row.cells.get(k);
                v.push(match cell.and_then(|c| Some((c, c.value?))) {
                    Some((c, x)) => {
                        let mark = match (c.status, c.sla_failed) {
                            (Some(_), _) => "!",
                            (None, true) => "*",
                            _ => " ",
                        };
                        Cell::num(format!("{x:.0}")).marked(mark)
                    }
                    None => Cell::num("-"),
                });
                if i > 0 {
                    v.push(match cell.and_then(|c| Some((c.relative?, c))) {
                        Some((x, c)) => Cell::ratio(x, c.interval, c.verdict, c.band),
                        None => Cell::num("-"),
                    });
                    v.push(Cell::text(cell.and_then(|c| c.verdict).unwrap_or("-")));
                }
            }
            Row::new(v)
        })
        .collect();
    Table::new("verdicts", columns, rows)
}
