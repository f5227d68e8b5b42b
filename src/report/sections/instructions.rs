//! The instruction-count section (`run --instructions`) as a document: per
//! test each target's instructions per query, its ratio to the base with
//! interval and verdict, and the background processes' instructions per
//! query; then per target the functions whose instructions per query
//! changed most. Everything it shows comes from `report::instructions`.

use crate::report::document::{Block, Cell, Column, Row, Shade, Table};
use crate::report::instructions::{EXPLANATION, InstructionSection, ir_change, ir_text};
use crate::report::model::{Band, Report};

/// The section (`## Instructions per query (Valgrind)`,
/// `<section id="instructions">`); `None` when the report has none.
pub fn section(r: &Report) -> Option<Block> {
    let s = r.instructions.as_ref()?;
    let mut blocks = vec![Block::Para(EXPLANATION.to_string())];
    if !s.summaries.is_empty() {
        blocks.push(Block::List(
            s.summaries
                .iter()
                .map(|sum| format!("{}: {}", sum.label, sum.text))
                .collect(),
        ));
    }
    blocks.push(Block::Table(per_test(r, s)));
    if let Some(note) = &s.uncounted_note {
        blocks.push(Block::Legend(format!("Missing counts: {note}.")));
    }
    if !s.functions.is_empty() {
        blocks.push(Block::Heading(
            "Functions whose instructions per query changed most".into(),
        ));
        if let Some(note) = &s.symbols_note {
            blocks.push(Block::Para(format!("Note: {note}.")));
        }
        for f in &s.functions {
            let rows = f
                .rows
                .iter()
                .map(|row| {
                    Row::new(vec![
                        Cell::code(&row.name),
                        Cell::num(ir_text(row.base_self)),
                        Cell::num(ir_text(row.self_)),
                        Cell::num(ir_change(row.self_change())),
                        Cell::num(ir_text(row.base_incl)),
                        Cell::num(ir_text(row.incl)),
                        Cell::num(ir_change(row.incl_change())),
                    ])
                })
                .collect();
            let mut columns = vec![Column::text("function")];
            columns.extend(
                [
                    "base self/q",
                    "self/q",
                    "Δ self",
                    "base incl/q",
                    "incl/q",
                    "Δ incl",
                ]
                .map(Column::num),
            );
            let caption = format!(
                "{}: {} vs base ({} Ir/q)",
                f.test,
                f.label,
                ir_change(f.change_per_query)
            );
            blocks.push(Block::Table(
                Table::new("functions", columns, rows).captioned(&caption),
            ));
        }
    }
    Some(Block::section(
        "instructions",
        "Instructions per query (Valgrind)",
        blocks,
    ))
}

/// Per test: each target's Ir per query, ratio (four decimals: a 0.3 %
/// change must show) and verdict (targets after the base) and background
/// Ir per query. The terminal's summary draws this same table.
pub fn per_test(r: &Report, s: &InstructionSection) -> Table {
    let mut columns = vec![Column::text("test")];
    for (i, t) in r.targets.iter().enumerate() {
        columns.push(Column::num(format!("{} Ir/q", t.label)));
        if i > 0 {
            columns.push(Column::num("ratio"));
            columns.push(Column::text("verdict"));
        }
        columns.push(Column::num("bg/q"));
    }
    let rows = s
        .tests
        .iter()
        .map(|t| {
            let mut v = vec![Cell::text(&t.name)];
            for (i, c) in t.cells.iter().enumerate() {
                match c {
                    Some(c) => {
                        v.push(Cell::num(ir_text(c.per_query)));
                        if i > 0 {
                            let band = match c.verdict {
                                Some("slower") => Some(Band::Slower),
                                Some("faster") => Some(Band::Faster),
                                _ => None,
                            };
                            let mut ratio = Cell::num(c.ratio_text()).shaded(Shade::of(band));
                            if let Some(m) = &c.method {
                                ratio = ratio.detailed(m.clone());
                            }
                            v.push(ratio);
                            v.push(Cell::text(c.verdict.unwrap_or("")));
                        }
                        v.push(Cell::num(ir_text(c.background_per_query)));
                    }
                    None => {
                        let width = if i > 0 { 4 } else { 2 };
                        v.extend(std::iter::repeat_n(Cell::num("n/a"), width));
                    }
                }
            }
            Row::new(v)
        })
        .collect();
    Table::new("instructions", columns, rows)
}
