//! The version chain (`tidemark report --chain`) as a document: each
//! target against the one before it, test by test, as the seeds' "each
//! release against the previous" tables, for the sysbench tests and the
//! Insert Benchmark's steps; the comparison with the base stays in the
//! group tables.

use crate::report::document::{Block, Cell, Column, Row, Table};
use crate::report::format::rel_pm;
use crate::report::ibench::IbenchCell;
use crate::report::model::Report;
use crate::report::sysbench::{Cell as TestCell, Comparison, TestRow};
use crate::stats::Interval;

/// Per test or step: its name and each link's cell.
type Rows = Vec<(String, Vec<String>)>;

/// The section (`## Each target against the one before it`,
/// `<section id="chain">`); `None` without `--chain`.
pub fn section(r: &Report) -> Option<Block> {
    if !r.chain || r.targets.len() < 2 {
        return None;
    }
    let mut columns = vec![Column::text("test")];
    columns.extend(
        r.targets
            .windows(2)
            .map(|w| Column::num(format!("{} vs {}", w[1].label, w[0].label))),
    );
    let mut blocks = vec![Block::Para(
        "Each ratio with its 95 % interval and verdict.".into(),
    )];
    let tables = [
        ("sysbench: relative QPS", sysbench_rows(r)),
        (
            "Insert Benchmark: relative throughput (rows/s for the load steps, queries/s for qr*, qp*)",
            ibench_rows(r),
        ),
    ];
    for (caption, rows) in tables {
        let Some(rows) = rows else { continue };
        blocks.push(Block::Para(caption.into()));
        let rows = rows.into_iter().map(|(name, cells)| {
            let mut v = vec![Cell::text(name)];
            v.extend(cells.into_iter().map(Cell::num));
            Row::new(v)
        });
        let table = Table::new("chain", columns.clone(), rows.collect());
        blocks.push(Block::Table(table));
    }
    (blocks.len() > 1)
        .then(|| Block::section("chain", "Each target against the one before it", blocks))
}

/// Link `i`'s cell: the comparison with the base for the first link
/// (`base`: ratio, interval, verdict), `vs_previous` for the others; `-`
/// where the cell has none.
fn link_text(
    i: usize,
    base: Option<(f64, Option<&Interval>, &str)>,
    previous: Option<&Comparison>,
) -> String {
    let found = if i == 1 {
        base
    } else {
        previous.map(|p| (p.relative, p.interval.as_ref(), p.verdict))
    };
    match found {
        Some((v, iv, verdict)) => format!("{} {verdict}", rel_pm(v, iv)),
        None => "-".into(),
    }
}

/// The sysbench rows: per test, each link's relative QPS and verdict (the
/// first link is the comparison with the base, the others `vs_previous`).
fn sysbench_rows(r: &Report) -> Option<Rows> {
    let s = r.sysbench.as_ref()?;
    let link = |c: Option<&TestCell>, i: usize| {
        let base = c.and_then(|c| Some((c.relative?, c.interval.as_ref(), c.verdict?)));
        link_text(i, base, c.and_then(|c| c.vs_previous.as_ref()))
    };
    let row = |t: &TestRow| {
        let cells = (1..r.targets.len())
            .map(|i| link(t.cells.get(i).and_then(Option::as_ref), i))
            .collect();
        (t.name.clone(), cells)
    };
    Some(
        s.groups
            .iter()
            .flat_map(|g| g.tests.iter().map(row))
            .collect(),
    )
}

/// The Insert Benchmark rows: per step, each link's relative throughput
/// (inserts/s for load steps, queries/s for query steps) and verdict.
fn ibench_rows(r: &Report) -> Option<Rows> {
    let s = r.ibench.as_ref()?;
    let link = |c: Option<&IbenchCell>, i: usize| {
        let base = c.and_then(|c| Some((c.relative?, c.interval.as_ref(), c.verdict?)));
        link_text(i, base, c.and_then(|c| c.vs_previous.as_ref()))
    };
    Some(
        s.steps
            .iter()
            .enumerate()
            .map(|(k, step)| {
                let cells = (1..r.targets.len())
                    .map(|i| link(s.throughput.get(i).and_then(|row| row.cells.get(k)), i))
                    .collect();
                (step.clone(), cells)
            })
            .collect(),
    )
}
