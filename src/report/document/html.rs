//! A [`Block`] list as HTML: `<section>`s, `<h3>`s, tables whose cells are
//! shaded by their verdict and carry it as hover text.

use std::fmt::Write as _;

use super::{Block, Cell, Chart, Span, Table, Value};
use crate::report::query_plans::{PlanRow, word_diff};
use crate::report::render::svg::{self, esc};

/// Appends `blocks` to `o`.
pub fn write(o: &mut String, blocks: &[Block]) {
    for b in blocks {
        match b {
            Block::Section { id, title, blocks } => {
                let _ = writeln!(o, "<section id=\"{id}\"><h2>{}</h2>", esc(title));
                write(o, blocks);
                o.push_str("</section>\n");
            }
            Block::Heading(t) => _ = writeln!(o, "<h3>{}</h3>", esc(t)),
            Block::Para(t) => _ = writeln!(o, "<p>{}</p>", esc(t)),
            Block::Legend(t) => _ = writeln!(o, "<p class=\"legend\">{}</p>", esc(t)),
            Block::Rich { legend, spans: s } => {
                let class = if *legend { " class=\"legend\"" } else { "" };
                let _ = writeln!(o, "<p{class}>{}</p>", spans(s));
            }
            Block::Commands(lines) => {
                o.push_str("<pre>");
                for l in lines {
                    let _ = writeln!(o, "{}", esc(l));
                }
                o.push_str("</pre>\n");
            }
            Block::List(items) => {
                o.push_str("<ul class=\"summary\">");
                for i in items {
                    let _ = write!(o, "<li>{}</li>", esc(i));
                }
                o.push_str("</ul>\n");
            }
            Block::Notes(items) if !items.is_empty() => {
                o.push_str("<div class=\"notes\"><b>Read first:</b><ul>");
                for i in items {
                    let _ = write!(o, "<li>{}</li>", esc(i));
                }
                o.push_str("</ul></div>\n");
            }
            Block::Notes(_) => {}
            Block::Table(t) => table(o, t),
            Block::Diff { titles, rows } => diff(o, titles, rows),
            Block::Chart(c) => {
                o.push_str(&chart(c));
                o.push('\n');
            }
            Block::Html(text) => o.push_str(text),
            Block::Markdown(_) => {}
        }
    }
}

/// The blocks as one HTML string.
pub fn render(blocks: &[Block]) -> String {
    let mut o = String::new();
    write(&mut o, blocks);
    o
}

/// Spans as HTML: lead-in words bold, code in `<code>`, asides small,
/// terms as links or with their note as hover text, each verdict count
/// coloured (a change in bold).
pub fn spans(s: &[Span]) -> String {
    s.iter().map(span).collect()
}

fn span(s: &Span) -> String {
    match s {
        Span::Text(t) => esc(t),
        Span::Lead(t) => format!("<b>{}</b>", esc(t)),
        Span::Code(t) => format!("<code>{}</code>", esc(t)),
        Span::Aside(t) => format!("<small>{}</small>", esc(t)),
        Span::Term { text, note, href } => {
            let title = note
                .as_ref()
                .map(|n| format!(" title=\"{}\"", esc(n)))
                .unwrap_or_default();
            match href {
                Some(h) => format!("<a href=\"#{}\"{title}>{}</a>", esc(h), esc(text)),
                None => format!("<span{title}>{}</span>", esc(text)),
            }
        }
        Span::Verdicts(c) => verdicts(c),
    }
}

/// Each non-zero verdict count, shaded as the verdict's cells are: a
/// change in bold.
fn verdicts(c: &crate::stats::VerdictCounts) -> String {
    use crate::stats::Verdict;
    let parts: Vec<String> = c
        .nonzero_for_rate()
        .map(|(v, n)| {
            let (tag, class) = match v {
                Verdict::Lower => ("b", "vs"),
                Verdict::Higher => ("b", "vf"),
                Verdict::NoDifference => ("span", "vn"),
                Verdict::Unknown | Verdict::Unverified => ("span", "vu"),
            };
            format!(
                "<{tag} class=\"{class}\">{n} {}</{tag}>",
                super::count_word(v)
            )
        })
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

/// A cell's class (`l` for words, else its shade) and its markup.
pub fn cell(c: &Cell) -> (&'static str, String) {
    let class = if c.is_text() { "l" } else { c.shade.class() };
    let text = esc(&c.plain_text());
    let html = match (&c.value, &c.hover) {
        (Value::Code(_), Some(h)) => format!("<code title=\"{}\">{text}</code>", esc(h)),
        (Value::Code(_), None) => format!("<code>{text}</code>"),
        (Value::Ratio(..), Some(h)) => format!("<span title=\"{}\">{text}</span>", esc(h)),
        (Value::Spans(s), _) => spans(s),
        _ => text,
    };
    match &c.detail {
        Some(d) => (class, format!("{html} <small>{}</small>", esc(d))),
        None => (class, html),
    }
}

/// A table, after its caption (`<h3>`): a header aligned like its
/// column's first cell, rows tagged with their test.
pub fn table(o: &mut String, t: &Table) {
    if let Some(c) = &t.caption {
        let _ = writeln!(o, "<h3>{}</h3>", esc(c));
    }
    let _ = write!(o, "<table class=\"{}\"><thead><tr>", t.class);
    for (i, h) in t.columns.iter().enumerate() {
        let left = i == 0
            || t.rows
                .first()
                .and_then(|r| r.cells.get(i))
                .is_some_and(Cell::is_text);
        let aside = h
            .aside
            .as_ref()
            .map(|a| format!(" <small>{}</small>", esc(a)))
            .unwrap_or_default();
        let _ = write!(
            o,
            "<th{}>{}{aside}</th>",
            if left { " class=\"l\"" } else { "" },
            esc(&h.title)
        );
    }
    o.push_str("</tr></thead><tbody>");
    for row in &t.rows {
        match &row.tag {
            Some(tag) => _ = write!(o, "<tr data-test=\"{}\">", esc(tag)),
            None => o.push_str("<tr>"),
        }
        for c in &row.cells {
            match cell(c) {
                ("", text) => _ = write!(o, "<td>{text}</td>"),
                (class, text) => _ = write!(o, "<td class=\"{class}\">{text}</td>"),
            }
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table>\n");
}

/// A chart as inline SVG.
pub fn chart(c: &Chart) -> String {
    match c {
        Chart::Bars {
            title,
            categories,
            series,
            floor,
            bands,
        } => svg::relative_bars(title, categories, series, *floor, *bands),
        Chart::Lines {
            title,
            x,
            y,
            series,
        } => svg::lines(title, x, y, series),
    }
}

/// Two versions side by side: changed lines shaded, the changed words in
/// `<mark>`.
fn diff(o: &mut String, titles: &[String; 2], rows: &[PlanRow]) {
    let _ = write!(
        o,
        "<table class=\"plan\"><thead><tr><th>{}</th><th>{}</th></tr></thead><tbody>",
        esc(&titles[0]),
        esc(&titles[1])
    );
    for row in rows {
        let (a, b) = match (&row.base, &row.target, row.changed) {
            (Some(a), Some(b), true) => {
                let (da, db) = word_diff(a, b);
                (marked(&da), marked(&db))
            }
            (a, b, _) => (
                a.as_deref().map(esc).unwrap_or_default(),
                b.as_deref().map(esc).unwrap_or_default(),
            ),
        };
        let class = if row.changed { " class=\"chg\"" } else { "" };
        let _ = write!(o, "<tr{class}><td>{a}</td><td>{b}</td></tr>");
    }
    o.push_str("</tbody></table>\n");
}

/// Words with `true` wrapped in `<mark>`.
fn marked(tokens: &[(String, bool)]) -> String {
    tokens
        .iter()
        .map(|(t, m)| match m {
            true => format!("<mark>{}</mark>", esc(t)),
            false => esc(t),
        })
        .collect()
}
