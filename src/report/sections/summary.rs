//! The first screen (`## Summary`, `<section id="summary">`) as a
//! document, built once from [`crate::report::overview`]: the verdict
//! counts per suite and group with the smallest change each could see,
//! then the largest real changes and the costs that moved with them (or,
//! with none, the largest unverified changes or the largest within
//! noise); for one target its headline numbers and the commands that
//! compare it with something.

use crate::report::document::{Block, Cell, Column, Row, Span, Table};
use crate::report::format::amount;
use crate::report::model::{Band, Report};
use crate::report::overview::{Headline, Overview, RealChange, build, sees};

/// The summary section of `r`.
pub fn section(r: &Report) -> Block {
    let ov = build(r);
    let blocks = match &ov.headline {
        Some(h) => headline(r, h),
        None => {
            let mut blocks = verdicts(r, &ov);
            blocks.extend(changes(&min_effect(r), &ov));
            blocks
        }
    };
    Block::section("summary", "Summary", blocks)
}

/// The smallest change a verdict needs, in percent (`3`).
fn min_effect(r: &Report) -> String {
    amount(r.min_effect * 100.0)
        .trim_end_matches(".00")
        .to_string()
}

/// Each group's verdict counts per target, and the legend saying what
/// the words mean.
fn verdicts(r: &Report, ov: &Overview) -> Vec<Block> {
    let mut columns = vec![Column::text("suite: group"), Column::num("tests")];
    columns.extend(
        r.targets[1..]
            .iter()
            .map(|t| Column::text(&t.column).aside(&t.label)),
    );
    let rows = ov.groups.iter().map(|g| {
        let mut cells = vec![
            Cell::spans(vec![Span::link(
                format!("{}: {}", g.suite, g.title),
                &g.anchor,
            )]),
            Cell::count(g.tests),
        ];
        cells.extend(g.counts.iter().zip(&g.detectable).map(|(c, d)| {
            let mut spans = vec![Span::Verdicts(*c)];
            if let Some(s) = sees(*d) {
                spans.extend([Span::text(" "), Span::Aside(s)]);
            }
            Cell::spans(spans)
        }));
        Row::new(cells)
    });
    let legend = vec![
        Span::text("Versus base "),
        Span::Lead(r.base.clone()),
        Span::text(format!(
            ": slower/faster = the 95 % interval of rQPS lies wholly below/above 1 and the \
             change is at least {}%; same = no difference; sees ±x% = the median half-width \
             of the group's intervals, the smallest change this run could call real there; \
             unknown = no interval (too few seconds or repetitions); not verified = one \
             measurement per side, whose interval cannot see drift between servers or over \
             time (repeat with ",
            min_effect(r)
        )),
        Span::Code("--repeat 3".into()),
        Span::text(")."),
    ];
    vec![
        Block::Table(Table::new("verdicts", columns, rows.collect())),
        Block::Rich {
            legend: true,
            spans: legend,
        },
    ]
}

/// The largest real changes; without any, the largest unverified ones or
/// the largest within noise.
fn changes(min: &str, ov: &Overview) -> Vec<Block> {
    let repeat = || Span::Code("--repeat 3".into());
    if !ov.changes.is_empty() {
        let mut blocks = vec![Block::Table(
            table(&ov.changes).captioned("Largest real changes"),
        )];
        if ov
            .changes
            .iter()
            .any(|c| c.moved.iter().any(|m| m.starts_with('~')))
        {
            blocks.push(Block::Rich {
                legend: true,
                spans: vec![
                    Span::text(
                        "~: the cost's point estimate; a cost gets an interval only from \
                         repetitions (",
                    ),
                    repeat(),
                    Span::text(")."),
                ],
            });
        }
        if ov.more_changes > 0 {
            blocks.push(Block::Legend(format!(
                "{} more in the tables below.",
                ov.more_changes
            )));
        }
        return blocks;
    }
    if !ov.unverified.is_empty() {
        let text = format!(
            " no interval lies wholly beyond ±{min}%. The largest changes below have no \
             verdict (one measurement per side, or too few seconds); measure again with "
        );
        let spans = vec![
            Span::Lead("No real change yet:".into()),
            Span::text(text),
            repeat(),
            Span::text(" before believing them (~: a cost's point estimate, no interval)."),
        ];
        return vec![
            Block::Rich {
                legend: false,
                spans,
            },
            Block::Table(table(&ov.unverified)),
        ];
    }
    let mut text = format!(" no test's interval lies wholly beyond ±{min}%.");
    if !ov.within_noise.is_empty() {
        let list: Vec<String> = ov
            .within_noise
            .iter()
            .map(|c| format!("{} {} {}", c.column, c.test, c.rqps()))
            .collect();
        text.push_str(&format!(" Largest, within noise: {}.", list.join("; ")));
    }
    vec![Block::Rich {
        legend: false,
        spans: vec![Span::Lead("No real change:".into()), Span::text(text)],
    }]
}

/// The changes: target, test, rQPS (shaded by its verdict) and the costs
/// that moved with it.
fn table(list: &[RealChange]) -> Table {
    let rows = list
        .iter()
        .map(|c| {
            let band = match c.verdict {
                "faster" => Band::Faster,
                "slower" => Band::Slower,
                _ => Band::Similar,
            };
            let target = Span::Term {
                text: c.column.clone(),
                note: Some(c.target.clone()),
                href: None,
            };
            let test = Span::Term {
                text: c.test.clone(),
                note: Some(c.title.clone()),
                href: Some(c.anchor.clone()),
            };
            Row::new(vec![
                Cell::spans(vec![target]),
                Cell::spans(vec![test]),
                Cell::ratio(c.relative, c.interval, Some(c.verdict), Some(band)),
                Cell::text(match c.moved.is_empty() {
                    true => "-".into(),
                    false => c.moved.join(", "),
                }),
            ])
        })
        .collect();
    let columns = vec![
        Column::text("target"),
        Column::text("test"),
        Column::num("rQPS"),
        Column::text("moved with it"),
    ];
    Table::new("changes", columns, rows)
}

/// One target: its numbers per group and the commands to compare next.
fn headline(r: &Report, h: &Headline) -> Vec<Block> {
    let lead = vec![
        Span::text("One target, "),
        Span::Lead(r.base.clone()),
        Span::text(": nothing to compare yet. Its numbers, median over each group's tests:"),
    ];
    let cell = |x: Option<f64>| x.map_or_else(|| Cell::num("-"), Cell::amount);
    let rows = h.rows.iter().map(|x| {
        Row::new(vec![
            Cell::spans(vec![Span::link(&x.title, &x.anchor)]),
            Cell::count(x.tests),
            cell(x.median_qps),
            cell(x.median_p99_us),
            cell(x.median_cpu_us),
        ])
    });
    let mut columns = vec![Column::text("group")];
    columns.extend(
        [
            "tests",
            "median QPS",
            "median p99 µs",
            "median host CPU µs/query",
        ]
        .map(Column::num),
    );
    vec![
        Block::Rich {
            legend: false,
            spans: lead,
        },
        Block::Table(Table::new("headline", columns, rows.collect())),
        Block::Para("Compare next (OTHER: another target spec; RUN: another stored run):".into()),
        Block::Commands(h.next.clone()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::document::{html, markdown};
    use crate::stats::{Interval, Method};

    /// A real change comes out in Markdown as the seeds' posts write it
    /// (bold when faster) and on the page shaded, linked to its group and
    /// with its verdict and interval as hover text.
    #[test]
    fn a_real_change_in_markdown_and_html() {
        let change = RealChange {
            column: "col-1".into(),
            target: "pg b".into(),
            title: "point queries".into(),
            anchor: "g-point".into(),
            test: "point-query".into(),
            relative: 1.25,
            interval: Some(Interval {
                estimate: 1.25,
                lo: 1.2,
                hi: 1.3,
                n: 3,
                method: Method::PairedT,
            }),
            verdict: "faster",
            moved: vec!["+2.1 µs host CPU per query".into()],
        };
        let ov = Overview {
            groups: Vec::new(),
            changes: vec![change],
            more_changes: 1,
            unverified: Vec::new(),
            within_noise: Vec::new(),
            headline: None,
        };
        let blocks = changes("3", &ov);
        assert_eq!(
            markdown::render(&blocks),
            "Largest real changes:\n\n| target | test | rQPS | moved with it |\n\
             |---|---|---:|---|\n| col-1 (pg b) | point-query (point queries) | \
             **1.25 ±0.05** | +2.1 µs host CPU per query |\n\n1 more in the tables below.\n\n"
        );
        let page = html::render(&blocks);
        assert!(page.starts_with("<h3>Largest real changes</h3>\n<table class=\"changes\">"));
        assert!(page.contains("<td class=\"l\"><span title=\"pg b\">col-1</span></td>"));
        assert!(page.contains("<a href=\"#g-point\" title=\"point queries\">point-query</a>"));
        assert!(
            page.contains("<td class=\"faster\"><span title=\"faster: 1.20–1.30"),
            "{page}"
        );
    }
}
