//! The sysbench group's cost per query as a document: the seeds' wide
//! per-operation table (host CPU, context switches, reads and KB per query,
//! server and client CPU) with each value relative to the base; one row
//! per test and target in Markdown, a two-level header on the page.

use std::fmt::Write as _;

use crate::report::cost::{seed_column_name, seed_columns};
use crate::report::document::{Block, Cell, Column, Row, Shade, Table, html_only, markdown_only};
use crate::report::format::{amount, opt_amount, rel};
use crate::report::model::Report;
use crate::report::render::svg::esc;
use crate::report::sysbench::{GroupSection, SysbenchSection};

/// The seeds' wide per-operation cost table and the columns no run
/// stored: Markdown one row per test and target; the page the same rows
/// under a two-level header ([`cost_html`]).
pub fn blocks(r: &Report, s: &SysbenchSection, g: &GroupSection) -> Vec<Block> {
    let (shown, absent) = s.cost_split();
    let mut out = Vec::new();
    if !shown.is_empty() {
        out.push(markdown_only(&[
            Block::Para("Cost per query (cpu/o: host CPU µs, client included; cs/o: context switches; r/o: storage reads; rKB/o, wKB/o: KB read, written; o/s: queries per second; srv/o, cli/o: server and client CPU µs; rel: target / base):".into()),
            Block::Table(cost_long(r, s, g)),
        ]));
        out.push(Block::Html(cost_html(r, s, g, &shown)));
        if host_wide_unverified(s, g) {
            out.push(Block::Legend(HOST_WIDE_NOTE.into()));
        }
    }
    if !absent.is_empty() {
        let text = format!("Not stored for these runs (n/a): {}.", absent.join(", "));
        out.push(markdown_only(&[Block::Para(text.clone())]));
        out.push(html_only(&[Block::Legend(text)]));
    }
    out
}

/// Said below a cost table some of whose host-wide ratios got no verdict.
const HOST_WIDE_NOTE: &str = "The servers were up together (--interleave steps): the host-wide costs (cpu/o, cs/o, r/o, rKB/o, wKB/o) of one include the others' background work, so their ratios are shown but not verified; srv/o and cli/o count only the server's and the client's own processes.";

/// Whether a host-wide cost ratio of group `g` is not verified because
/// its servers were up together.
fn host_wide_unverified(s: &SysbenchSection, g: &GroupSection) -> bool {
    g.tests
        .iter()
        .flat_map(|t| t.cells.iter().flatten())
        .any(|c| {
            (0..s.cost_columns.len()).any(|k| {
                s.cost_columns[k].host_wide
                    && c.cost_verdict.get(k).copied().flatten() == Some(crate::stats::NOT_VERIFIED)
            })
        })
}

/// The cost table in Markdown: test, target, the absolute columns, then
/// each relative to the base.
fn cost_long(r: &Report, s: &SysbenchSection, g: &GroupSection) -> Table {
    let order = seed_columns(&s.cost_columns, &s.cost_present);
    let name = |c: &Option<usize>| seed_column_name(&s.cost_columns, *c);
    let compared = r.targets.len() > 1;
    let mut columns = vec![Column::text("test"), Column::text("target")];
    columns.extend(order.iter().map(|c| Column::num(name(c))));
    if compared {
        columns.extend(
            order
                .iter()
                .map(|c| Column::num(format!("{} rel", name(c)))),
        );
    }
    let mut rows = Vec::new();
    for t in &g.tests {
        for (i, c) in t.cells.iter().enumerate() {
            let mut v = vec![Cell::text(&t.label), Cell::text(&r.targets[i].label)];
            let Some(c) = c else {
                v.extend(columns[2..].iter().map(|_| Cell::num("-")));
                rows.push(Row::new(v));
                continue;
            };
            v.extend(order.iter().map(|k| match k {
                Some(k) => Cell::opt_amount(c.cost[*k]),
                None => Cell::amount(c.qps),
            }));
            if compared {
                v.extend(order.iter().map(|k| {
                    Cell::num(match (i, k) {
                        (0, _) => String::new(),
                        (_, Some(k)) => c.cost_relative[*k].map_or("n/a".into(), rel),
                        (_, None) => c.relative.map_or("-".into(), rel),
                    })
                }));
            }
            rows.push(Row::new(v));
        }
    }
    Table::new("cost", columns, rows)
}

/// The cost table on the page: rows = tests, one sub-row per target,
/// absolute and relative columns under a two-level header, folded open.
fn cost_html(r: &Report, s: &SysbenchSection, g: &GroupSection, shown: &[usize]) -> String {
    let mut o = String::new();
    let keys: Vec<&str> = shown.iter().map(|&k| s.cost_columns[k].key).collect();
    let _ = writeln!(
        o,
        "<details class=\"cost\" open><summary>Cost per query: {}</summary>",
        keys.join(", ")
    );
    let order = seed_columns(&s.cost_columns, &s.cost_present);
    let names: Vec<&str> = order
        .iter()
        .map(|c| seed_column_name(&s.cost_columns, *c))
        .collect();
    let _ = write!(
        o,
        "<table class=\"cost\"><thead><tr><th class=\"l\" rowspan=\"2\">test</th><th class=\"l\" rowspan=\"2\">target</th><th colspan=\"{w}\">absolute</th>",
        w = names.len()
    );
    let reps = if r.targets.len() > 1 { 2 } else { 1 };
    if reps == 2 {
        let _ = write!(
            o,
            "<th colspan=\"{}\">relative to {}</th>",
            names.len(),
            esc(&r.base)
        );
    }
    o.push_str("</tr><tr>");
    for _ in 0..reps {
        for name in &names {
            let _ = write!(o, "<th>{}</th>", esc(name));
        }
    }
    o.push_str("</tr></thead>");
    for t in &g.tests {
        let _ = write!(o, "<tbody class=\"t\" data-test=\"{}\">", esc(&t.label));
        for (i, c) in t.cells.iter().enumerate() {
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td>",
                if i == 0 { esc(&t.label) } else { String::new() },
                esc(&r.targets[i].label)
            );
            let Some(c) = c else {
                let _ = write!(
                    o,
                    "<td colspan=\"{}\">not run</td></tr>",
                    names.len() * reps
                );
                continue;
            };
            for k in &order {
                let v = k.map_or_else(|| amount(c.qps), |k| opt_amount(c.cost[k]));
                let _ = write!(o, "<td>{v}</td>");
            }
            if reps == 2 {
                for k in &order {
                    o.push_str(&relative_cost_cell(i, c, *k));
                }
            }
            o.push_str("</tr>");
        }
        o.push_str("</tbody>");
    }
    o.push_str("</table>\n<p class=\"legend\">cpu/o: host CPU µs per query (vmstat us+sy, client included); cs/o: context switches per query; r/o: storage reads per query; rKB/o, wKB/o: KB read, written per query; o/s: queries per second; srv/o, cli/o: server and client CPU µs per query. Relative cells: red = the cost is higher than the base's beyond its interval, green = lower.</p>\n</details>\n");
    o
}

/// A relative cell of the page's cost table: `k` a cost column (red/green
/// when its interval says higher/lower) or `None` for the rate; empty for
/// the base (`i == 0`).
fn relative_cost_cell(i: usize, c: &crate::report::sysbench::Cell, k: Option<usize>) -> String {
    if i == 0 {
        return "<td></td>".into();
    }
    let Some(k) = k else {
        let text = c.relative.map_or("-".into(), rel);
        return format!("<td class=\"{}\">{text}</td>", Shade::of(c.band).class());
    };
    let cls = match c.cost_verdict[k] {
        Some("higher") => " class=\"slower\"",
        Some("lower") => " class=\"faster\"",
        _ => "",
    };
    let text = c.cost_relative[k].map_or("n/a".into(), rel);
    match (&c.cost_interval[k], c.cost_verdict[k]) {
        (Some(iv), Some(v)) => format!(
            "<td{cls} title=\"{v}: {}\">{text}</td>",
            esc(&crate::report::format::interval_text(iv))
        ),
        _ => format!("<td{cls}>{text}</td>"),
    }
}
