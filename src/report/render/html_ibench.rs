//! The Insert Benchmark section of the HTML report: the reference's three
//! summary tables (throughput, relative, background insert rate with SLA
//! failures greyed), then per step the metrics row, fairness, response
//! times and per-second charts.

use std::fmt::Write as _;

use super::html::{band_class, l, n, table};
use super::svg::{self, LineSeries, color, esc};
use crate::report::format::{amount, interval_text, opt_amount, rel, rel_pm};
use crate::report::ibench::{IbenchSection, METRIC_COLUMNS, SeriesLine, Shade};
use crate::report::model::Report;

/// Renders the Insert Benchmark section.
pub(super) fn section(o: &mut String, r: &Report, s: &IbenchSection) {
    o.push_str("<section id=\"ibench\"><h2>Insert Benchmark</h2>\n");
    let _ = writeln!(
        o,
        "<p class=\"legend\">Throughput: inserts/s (l.i0, l.i1, l.i2), indexed rows/s (l.x), queries/s (qr*, qp*). \
         Grey cells: the step missed its background insert rate (below 95% of the target, an SLA failure). \
         Relative: red ≤ {:.2}, green ≥ {:.2}.</p>",
        r.ibench_bands.low, r.ibench_bands.high
    );
    let mut header = vec!["dbms".to_string()];
    header.extend(s.steps.iter().map(|x| esc(x)));
    let abs: Vec<Vec<(String, String)>> = s
        .throughput
        .iter()
        .map(|row| {
            let mut v = vec![l(&row.target)];
            v.extend(row.cells.iter().map(|c| {
                let class = if c.sla_failed {
                    "sla"
                } else {
                    match c.shade {
                        Some(Shade::Low) => "low",
                        Some(Shade::High) => "high",
                        None => "",
                    }
                };
                (class.into(), c.value.map_or("-".into(), amount))
            }));
            v
        })
        .collect();
    o.push_str("<h3>Throughput</h3>\n");
    table(o, "ib", &header, &abs);
    let rel_rows: Vec<Vec<(String, String)>> = s
        .throughput
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mut v = vec![l(&row.target)];
            v.extend(row.cells.iter().map(|c| {
                let class = if c.sla_failed {
                    "sla"
                } else {
                    band_class(c.band)
                };
                let text = match (i, c.value, c.relative) {
                    (0, Some(_), _) => "1.00".into(),
                    (_, _, Some(x)) => match &c.interval {
                        Some(iv) => format!(
                            "<span title=\"{}: {}\">{}</span>",
                            c.verdict.unwrap_or("unknown"),
                            esc(&interval_text(iv)),
                            esc(&rel_pm(x, Some(iv)))
                        ),
                        None => rel(x),
                    },
                    _ => "-".into(),
                };
                (class.into(), text)
            }));
            v
        })
        .collect();
    o.push_str("<h3>Throughput relative to the first row</h3>\n");
    table(o, "ib", &header, &rel_rows);
    if !s.query_steps.is_empty() {
        let mut header = vec!["dbms".to_string()];
        header.extend(s.query_steps.iter().map(|x| esc(x)));
        let mut rows: Vec<Vec<(String, String)>> = s
            .background
            .iter()
            .map(|row| {
                let mut v = vec![l(&row.target)];
                v.extend(row.cells.iter().map(|c| {
                    (
                        if c.sla_failed { "slower" } else { "" }.into(),
                        opt_amount(c.achieved),
                    )
                }));
                v
            })
            .collect();
        let mut last = vec![l("target")];
        last.extend(s.background_targets.iter().map(|t| n(opt_amount(*t))));
        rows.push(last);
        o.push_str("<h3>Background insert rate against its target</h3>\n");
        table(o, "ib", &header, &rows);
    }
    for m in &s.metrics {
        match m.per.as_str() {
            "" => _ = writeln!(o, "<h3>{}</h3>", esc(&m.step)),
            per => _ = writeln!(o, "<h3>{} <small>({})</small></h3>", esc(&m.step), esc(per)),
        }
        let mut header = vec!["dbms".to_string()];
        header.extend(METRIC_COLUMNS.iter().map(|c| c.to_string()));
        let rows: Vec<Vec<(String, String)>> = m
            .rows
            .iter()
            .map(|(t, vals)| {
                let mut v = vec![l(t)];
                v.extend(vals.iter().map(|x| n(opt_amount(*x))));
                v
            })
            .collect();
        table(o, "metrics", &header, &rows);
        if let Some(f) = s.fairness.iter().find(|f| f.step == m.step) {
            let header: Vec<String> =
                ["fairness", "clients", "min_time", "max_time", "diff", "pct"]
                    .map(String::from)
                    .to_vec();
            let rows: Vec<Vec<(String, String)>> = f
                .rows
                .iter()
                .map(|(t, x)| {
                    vec![
                        l(t),
                        n(x.clients.to_string()),
                        n(amount(x.min_time)),
                        n(amount(x.max_time)),
                        n(amount(x.diff)),
                        n(format!("{:.1}", x.pct)),
                    ]
                })
                .collect();
            table(o, "fair", &header, &rows);
        }
        if let Some(t) = s.response_times.iter().find(|t| t.step == m.step) {
            let mut header: Vec<String> = [
                "response time",
                "role",
                "p50 µs",
                "p99 µs",
                "p99.9 µs",
                "max µs",
            ]
            .map(String::from)
            .to_vec();
            header.extend(s.latency_buckets.iter().map(|b| format!("{} %", esc(b))));
            let rows: Vec<Vec<(String, String)>> = t
                .rows
                .iter()
                .map(|x| {
                    let mut v = vec![
                        l(&x.target),
                        l(&x.role),
                        n(x.p50_us.to_string()),
                        n(x.p99_us.to_string()),
                        n(x.p999_us.to_string()),
                        n(x.max_us.to_string()),
                    ];
                    match &x.buckets_pct {
                        Some(b) => v.extend(b.iter().map(|p| n(format!("{p:.1}")))),
                        None => v.extend(s.latency_buckets.iter().map(|_| n("n/a".into()))),
                    }
                    v
                })
                .collect();
            table(o, "rt", &header, &rows);
        }
        if let Some(series) = s.series.iter().find(|x| x.step == m.step) {
            type Pick = fn(&SeriesLine) -> &Vec<[f64; 2]>;
            // The reference's per-second charts: IPS, max insert time,
            // DPS, max delete time, QPS, max query time.
            // Steps without roles (l.x, older runs) keep one max chart.
            let by_role = series.lines.iter().any(|l| {
                !(l.max_insert_ms.is_empty()
                    && l.max_delete_ms.is_empty()
                    && l.max_query_ms.is_empty())
            });
            let charts: [(&str, Pick); 7] = [
                ("inserts/s", |l| &l.ips),
                ("max insert response time, ms", |l| &l.max_insert_ms),
                ("deletes/s", |l| &l.dps),
                ("max delete response time, ms", |l| &l.max_delete_ms),
                ("queries/s", |l| &l.qps),
                ("max query response time, ms", |l| &l.max_query_ms),
                ("max response time, ms", |l| &l.max_rt_ms),
            ];
            o.push_str("<div class=\"charts\">");
            for (what, pick) in charts {
                if by_role && what == "max response time, ms" {
                    continue;
                }
                let lines: Vec<LineSeries> = series
                    .lines
                    .iter()
                    .enumerate()
                    .map(|(i, line)| LineSeries {
                        name: line.target.clone(),
                        color: color(i),
                        points: pick(line).clone(),
                    })
                    .collect();
                if lines.iter().any(|x| !x.points.is_empty()) {
                    o.push_str(&svg::lines(
                        &format!("{}: {what}, second by second", m.step),
                        "second",
                        what,
                        &lines,
                    ));
                    o.push('\n');
                }
            }
            o.push_str("</div>\n");
        }
    }
    o.push_str("</section>\n");
}
