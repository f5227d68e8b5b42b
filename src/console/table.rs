//! A document [`Table`] on the terminal: fixed-width columns two spaces
//! in, one space apart, a title cut to its column's width (keeping its
//! start and end), each cell's text with its mark (`!`, `*`). The one
//! function every terminal table goes through; the widths are the
//! caller's, so a table keeps its columns when a run has long labels.

use std::fmt::Write as _;

use super::terminal::truncate;
use crate::report::document::Table;

/// Appends `t` with column `i` `widths[i]` characters wide.
pub fn write(out: &mut String, t: &Table, widths: &[usize]) {
    let titles: Vec<String> = t
        .columns
        .iter()
        .zip(widths)
        .map(|(c, w)| truncate(&c.title, *w).into_owned())
        .collect();
    line(out, t, widths, &titles);
    for row in &t.rows {
        let cells: Vec<String> = row
            .cells
            .iter()
            .map(|c| format!("{}{}", c.plain_text(), c.mark))
            .collect();
        line(out, t, widths, &cells);
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
