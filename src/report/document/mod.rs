//! The report as a format-neutral document: sections hold headings, prose,
//! bullet lists and tables whose cells are typed (text, code, a count, an
//! amount, a ratio with its interval and verdict), and each format only
//! draws that document: [`markdown`] and [`html`] here, the terminal in
//! [`crate::console::table`]. A table is defined once, in the report
//! section that owns it, and appears in every format.
//!
//! Adding a table: build a [`Table`] (columns, then one [`Row`] per line,
//! cells from the constructors on [`Cell`]) in the section's `blocks`
//! function and push it as [`Block::Table`]. Adding a column: one more
//! [`Column`] and one more cell per row in that function. No renderer
//! changes.

pub mod html;
pub mod markdown;

use crate::report::format::{amount, opt_amount, rel, rel_pm};
use crate::report::model::{Band, Bands};
use crate::report::query_plans::PlanRow;
use crate::report::render::svg::{BarSeries, LineSeries};
use crate::stats::{Interval, VerdictCounts};

/// One piece of a report, in reading order.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A section: `## title` in Markdown, `<section id><h2>` in HTML.
    Section {
        id: String,
        title: String,
        blocks: Vec<Block>,
    },
    /// A sub-heading (`###`, `<h3>`).
    Heading(String),
    /// A paragraph of plain text.
    Para(String),
    /// A paragraph explaining the numbers (`<p class="legend">`).
    Legend(String),
    /// A paragraph of [`Span`]s (a legend when `legend`): lead-in words,
    /// code, links and asides, each written the way its format does.
    Rich { legend: bool, spans: Vec<Span> },
    /// Shell commands to paste: a `sh` code block in Markdown, `<pre>` on
    /// the page.
    Commands(Vec<String>),
    /// A bullet list of plain text.
    List(Vec<String>),
    /// What to read before the numbers ("Read first:" and a list, boxed on
    /// the page); nothing when empty.
    Notes(Vec<String>),
    /// A table.
    Table(Table),
    /// Two versions of a text line by line (a query plan): a `diff` block
    /// in Markdown, side by side with the changed words marked on the page.
    Diff {
        /// The two columns' titles on the page.
        titles: [String; 2],
        rows: Vec<PlanRow>,
    },
    /// A chart, drawn on the HTML page only.
    Chart(Chart),
    /// Text only the Markdown renderer writes, as it is.
    Markdown(String),
    /// Markup only the HTML renderer writes, as it is (charts, folds).
    Html(String),
}

impl Block {
    /// A section with HTML id `id`.
    pub fn section(id: &str, title: &str, blocks: Vec<Block>) -> Block {
        Block::Section {
            id: id.into(),
            title: title.into(),
            blocks,
        }
    }
}

/// A piece of a [`Block::Rich`] paragraph or of a [`Value::Spans`] cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Span {
    /// Words.
    Text(String),
    /// Lead-in words: bold on the page, plain in Markdown (which is pasted
    /// into posts that set their own emphasis).
    Lead(String),
    /// Code: backticks in Markdown, `<code>` on the page.
    Code(String),
    /// An aside: `(…)` in Markdown, `<small>` on the page.
    Aside(String),
    /// Words that point somewhere on the page: a link to `#href` when it
    /// has one, `note` as its hover text; in Markdown the words, then
    /// `(note)`.
    Term {
        text: String,
        note: Option<String>,
        href: Option<String>,
    },
    /// How many of a group's cells got each verdict (`2 slower, 29 same`;
    /// on the page each count coloured as its verdict).
    Verdicts(VerdictCounts),
}

impl Span {
    /// Words.
    pub fn text(s: impl Into<String>) -> Span {
        Span::Text(s.into())
    }

    /// A link to `#href` on the page, plain words in Markdown.
    pub fn link(text: impl Into<String>, href: impl Into<String>) -> Span {
        Span::Term {
            text: text.into(),
            note: None,
            href: Some(href.into()),
        }
    }

    /// The span's words without markup (the terminal's text).
    pub fn plain(&self) -> String {
        match self {
            Span::Text(s) | Span::Lead(s) | Span::Code(s) => s.clone(),
            Span::Aside(s) => format!("({s})"),
            Span::Term { text, note, .. } => match note {
                Some(n) => format!("{text} ({n})"),
                None => text.clone(),
            },
            Span::Verdicts(c) => verdict_counts(c).join(", "),
        }
    }
}

/// The spans' words without markup.
pub fn plain(spans: &[Span]) -> String {
    spans.iter().map(Span::plain).collect()
}

/// Each non-zero verdict count as words (`2 slower`, `29 same`), or `-`
/// when there are none.
fn verdict_counts(c: &VerdictCounts) -> Vec<String> {
    let v: Vec<String> = c
        .nonzero_for_rate()
        .map(|(v, n)| format!("{n} {}", count_word(v)))
        .collect();
    if v.is_empty() { vec!["-".into()] } else { v }
}

/// A verdict's word in a count of verdicts (`2 slower, 29 same`): `same`
/// for no difference, short in a narrow cell.
pub fn count_word(v: crate::stats::Verdict) -> &'static str {
    match v {
        crate::stats::Verdict::NoDifference => "same",
        v => v.for_rate(),
    }
}

/// `blocks` written in Markdown only (a table or prose the page shows
/// otherwise).
pub fn markdown_only(blocks: &[Block]) -> Block {
    Block::Markdown(markdown::render(blocks))
}

/// `blocks` written on the HTML page only.
pub fn html_only(blocks: &[Block]) -> Block {
    Block::Html(html::render(blocks))
}

/// A chart's data; the HTML page draws it as inline SVG
/// ([`crate::report::render::svg`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Chart {
    /// Relative values as bars with their intervals' whiskers, from `floor`.
    Bars {
        title: String,
        categories: Vec<String>,
        series: Vec<BarSeries>,
        floor: f64,
        bands: Bands,
    },
    /// Series of (x, y) points as lines.
    Lines {
        title: String,
        x: String,
        y: String,
        series: Vec<LineSeries>,
    },
}

impl Chart {
    /// A line chart of named series of (x, y) points, coloured in turn.
    pub fn lines(title: String, x: &str, y: &str, series: Vec<(String, Vec<[f64; 2]>)>) -> Chart {
        let series = series
            .into_iter()
            .enumerate()
            .map(|(i, (name, points))| LineSeries {
                name,
                color: crate::report::render::svg::color(i),
                points,
            })
            .collect();
        Chart::Lines {
            title,
            x: x.into(),
            y: y.into(),
            series,
        }
    }
}

/// A table: its columns and rows; `class` names it for the HTML page's
/// style and filter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// HTML class of the table.
    pub class: &'static str,
    /// A line introducing it: `caption:` in Markdown, `<h3>` in HTML.
    pub caption: Option<String>,
    /// Its columns, left to right.
    pub columns: Vec<Column>,
    /// Its rows, one cell per column each.
    pub rows: Vec<Row>,
}

impl Table {
    /// A table of HTML class `class` without a caption.
    pub fn new(class: &'static str, columns: Vec<Column>, rows: Vec<Row>) -> Table {
        Table {
            class,
            caption: None,
            columns,
            rows,
        }
    }

    /// This table under `caption`.
    pub fn captioned(self, caption: &str) -> Table {
        Table {
            caption: Some(caption.to_string()),
            ..self
        }
    }
}

/// A column: its title, an aside to it and whether its cells align right.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// The header.
    pub title: String,
    /// Said after the title: `(…)` in Markdown, `<small>` on the page.
    pub aside: Option<String>,
    /// Whether its cells align right (Markdown, terminal).
    pub right: bool,
}

impl Column {
    /// A column of text (left-aligned).
    pub fn text(title: impl Into<String>) -> Column {
        Column {
            title: title.into(),
            aside: None,
            right: false,
        }
    }

    /// A column of numbers (right-aligned).
    pub fn num(title: impl Into<String>) -> Column {
        Column {
            title: title.into(),
            aside: None,
            right: true,
        }
    }

    /// This column with `aside` after its title.
    pub fn aside(self, aside: impl Into<String>) -> Column {
        Column {
            aside: Some(aside.into()),
            ..self
        }
    }

    /// The title with its aside, without markup (Markdown, terminal).
    pub fn plain_title(&self) -> String {
        match &self.aside {
            Some(a) => format!("{} ({a})", self.title),
            None => self.title.clone(),
        }
    }
}

/// One row; `tag` is the test it belongs to (the HTML filter's hook).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// The test the row belongs to.
    pub tag: Option<String>,
    /// Its cells, one per column.
    pub cells: Vec<Cell>,
}

impl Row {
    /// A row of `cells`.
    pub fn new(cells: Vec<Cell>) -> Row {
        Row { tag: None, cells }
    }

    /// A row of `cells` belonging to test `tag`.
    pub fn tagged(tag: &str, cells: Vec<Cell>) -> Row {
        Row {
            tag: Some(tag.to_string()),
            cells,
        }
    }
}

/// What a cell holds; each format writes it its own way.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Words (left-aligned).
    Text(String),
    /// Code or SQL: backticks in Markdown, `<code>` in HTML.
    Code(String),
    /// A number already formatted (counts, amounts, seconds).
    Num(String),
    /// A ratio with its 95 % interval where it has one (`0.94 ±0.03`)
    /// and its band (Markdown: bold when faster, italic when slower).
    Ratio(f64, Option<Interval>, Option<Band>),
    /// Words with links, asides and verdict counts (left-aligned).
    Spans(Vec<Span>),
}

/// How a cell is shaded on the HTML page (Markdown marks only a faster
/// or slower ratio: bold, italic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shade {
    #[default]
    None,
    Faster,
    Slower,
    Similar,
    Low,
    High,
    /// A step that missed its SLA.
    Sla,
    /// A step with errors.
    Flag,
}

impl Shade {
    /// The shade of a relative value's band.
    pub fn of(band: Option<Band>) -> Shade {
        match band {
            Some(Band::Faster) => Shade::Faster,
            Some(Band::Slower) => Shade::Slower,
            Some(Band::Similar) => Shade::Similar,
            None => Shade::None,
        }
    }

    /// The HTML class.
    pub fn class(self) -> &'static str {
        match self {
            Shade::None => "",
            Shade::Faster => "faster",
            Shade::Slower => "slower",
            Shade::Similar => "similar",
            Shade::Low => "low",
            Shade::High => "high",
            Shade::Sla => "sla",
            Shade::Flag => "flag",
        }
    }
}

/// One cell: its value, shade, a mark after it in Markdown (`†`), the
/// hover text on the HTML page (a verdict and its interval) and a detail
/// the page shows small after the value (a failed step's status).
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// What it holds.
    pub value: Value,
    /// Its shade on the page.
    pub shade: Shade,
    /// Written after it in Markdown and on the terminal (`†`, `!`, `*`).
    pub mark: &'static str,
    /// Its hover text on the page.
    pub hover: Option<String>,
    /// Shown small after it on the page.
    pub detail: Option<String>,
}

impl Cell {
    fn of(value: Value) -> Cell {
        Cell {
            value,
            shade: Shade::None,
            mark: "",
            hover: None,
            detail: None,
        }
    }

    /// Words.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::of(Value::Text(s.into()))
    }

    /// Words with links, asides and verdict counts.
    pub fn spans(spans: Vec<Span>) -> Cell {
        Cell::of(Value::Spans(spans))
    }

    /// Code.
    pub fn code(s: impl Into<String>) -> Cell {
        Cell::of(Value::Code(s.into()))
    }

    /// A number already formatted, or a placeholder such as `-`.
    pub fn num(s: impl Into<String>) -> Cell {
        Cell::of(Value::Num(s.into()))
    }

    /// A count.
    pub fn count(n: impl ToString) -> Cell {
        Cell::num(n.to_string())
    }

    /// An amount as the report prints it.
    pub fn amount(x: f64) -> Cell {
        Cell::num(amount(x))
    }

    /// An amount or `n/a`.
    pub fn opt_amount(x: Option<f64>) -> Cell {
        Cell::num(opt_amount(x))
    }

    /// A bare ratio (two decimals).
    pub fn rel(x: f64) -> Cell {
        Cell::num(rel(x))
    }

    /// A ratio with its interval, shaded by its band; the hover names the
    /// verdict and the interval's ends and method.
    pub fn ratio(
        x: f64,
        interval: Option<Interval>,
        verdict: Option<&str>,
        band: Option<Band>,
    ) -> Cell {
        let verdict = verdict.unwrap_or("unknown");
        Cell {
            hover: Some(match &interval {
                Some(iv) => format!("{verdict}: {}", crate::report::format::interval_text(iv)),
                None => verdict.to_string(),
            }),
            shade: Shade::of(band),
            ..Cell::of(Value::Ratio(x, interval, band))
        }
    }

    /// This cell with `shade`.
    pub fn shaded(self, shade: Shade) -> Cell {
        Cell { shade, ..self }
    }

    /// This cell with `mark` after it in Markdown.
    pub fn marked(self, mark: &'static str) -> Cell {
        Cell { mark, ..self }
    }

    /// This cell with `detail` after it on the page.
    pub fn detailed(self, detail: impl Into<String>) -> Cell {
        Cell {
            detail: Some(detail.into()),
            ..self
        }
    }

    /// This cell without a hover text.
    pub fn plain(self) -> Cell {
        Cell {
            hover: None,
            ..self
        }
    }

    /// The cell's words without markup (the terminal's and Markdown's text
    /// before emphasis).
    pub fn plain_text(&self) -> String {
        match &self.value {
            Value::Text(s) | Value::Code(s) | Value::Num(s) => s.clone(),
            Value::Ratio(x, iv, _) => rel_pm(*x, iv.as_ref()),
            Value::Spans(s) => plain(s),
        }
    }

    /// Whether the cell is words (left-aligned on the page).
    pub fn is_text(&self) -> bool {
        matches!(
            self.value,
            Value::Text(_) | Value::Code(_) | Value::Spans(_)
        )
    }
}
