//! A document [`Table`] on the terminal: fixed-width columns two spaces
//! in, one space apart, a title cut to its column's width (keeping its
//! start and end), each cell's text with its mark (`!`, `*`). The one
//! function every terminal table goes through; the widths are the
//! caller's, so a table keeps its columns when a run has long labels. A
//! column past the widths the caller gives is as wide as its widest title
//! or cell, so a column a report section adds shows on the terminal
//! before any caller names its width.

use std::fmt::Write as _;

use super::terminal::truncate;
use crate::report::document::Table;

/// Appends `t` with column `i` `widths[i]` characters wide (its content's
/// width past the end of `widths`).
pub fn write(out: &mut String, t: &Table, widths: &[usize]) {
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|row| {
            row.cells
                .iter()
                .map(|c| format!("{}{}", c.plain_text(), c.mark))
                .collect()
        })
        .collect();
    let widths: Vec<usize> = (0..t.columns.len())
        .map(|i| {
            widths.get(i).copied().unwrap_or_else(|| {
                let cells = rows.iter().filter_map(|r| r.get(i));
                cells
                    .map(|text| text.chars().count())
                    .chain([t.columns[i].plain_title().chars().count()])
                    .max()
                    .unwrap_or(0)
            })
        })
        .collect();
    let titles: Vec<String> = t
        .columns
        .iter()
        .zip(&widths)
        .map(|(c, w)| truncate(&c.plain_title(), *w).into_owned())
        .collect();
    line(out, t, &widths, &titles);
    for cells in &rows {
        line(out, t, &widths, cells);
    }
}

fn line(out: &mut String, t: &Table, widths: &[usize], cells: &[String]) {
    out.push_str("  ");
    for (i, ((c, w), text)) in t.columns.iter().zip(widths).zip(cells).enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let _ = if c.right {
            write!(out, "{text:>w$}")
        } else {
            write!(out, "{text:<w$}")
        };
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::document::{Cell, Column, Row, Shade, html, markdown};
    use crate::report::model::Band;
    use crate::stats::{Interval, Method};

    /// One table, defined once: its typed cells come out in each format's
    /// own way (a faster ratio bold in Markdown, shaded with its verdict and
    /// interval as hover text on the page, plain on the terminal).
    #[test]
    fn one_table_in_markdown_html_and_the_terminal() {
        let iv = Interval {
            estimate: 1.25,
            lo: 1.2,
            hi: 1.3,
            n: 3,
            method: Method::PairedT,
        };
        let t = Table::new(
            "demo",
            vec![
                Column::text("test"),
                Column::num("qps"),
                Column::num("rQPS"),
            ],
            vec![
                Row::tagged(
                    "point-query",
                    vec![
                        Cell::text("point-query"),
                        Cell::amount(1234.0).marked("!").shaded(Shade::Flag),
                        Cell::ratio(1.25, Some(iv), Some("faster"), Some(Band::Faster)),
                    ],
                ),
                Row::new(vec![Cell::text("a|b"), Cell::num("-"), Cell::num("-")]),
            ],
        );
        let md = markdown::render(&[crate::report::document::Block::Table(t.clone())]);
        assert_eq!(
            md,
            "| test | qps | rQPS |\n|---|---:|---:|\n| point-query | 1234! | **1.25 ±0.05** |\n| a\\|b | - | - |\n\n"
        );
        let mut page = String::new();
        html::table(&mut page, &t);
        assert!(
            page.starts_with(
                "<table class=\"demo\"><thead><tr><th class=\"l\">test</th><th>qps</th>"
            ),
            "{page}"
        );
        assert!(page.contains("<tr data-test=\"point-query\"><td class=\"l\">point-query</td><td class=\"flag\">1234</td>"), "{page}");
        assert!(
            page.contains("<td class=\"faster\"><span title=\"faster: 1.20–1.30 (95 %, n=3,"),
            "{page}"
        );
        let mut term = String::new();
        write(&mut term, &t, &[12, 6, 12]);
        assert_eq!(
            term,
            "  test            qps         rQPS\n  point-query   1234!   1.25 ±0.05\n  a|b               -            -\n"
        );
        // Columns past the widths given are as wide as their content: a
        // column a section adds is never dropped.
        let mut term = String::new();
        write(&mut term, &t, &[12]);
        assert_eq!(
            term,
            "  test           qps       rQPS\n  point-query  1234! 1.25 ±0.05\n  a|b              -          -\n"
        );
    }
}
