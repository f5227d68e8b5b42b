//! The Insert Benchmark's throughput table `tidemark run` prints at its
//! end, drawn from the report model like the sysbench summary: per step,
//! each target's rate (medians over repetitions; rows/s for the load
//! steps, queries/s for the query steps), and against the first target
//! the ratio with its 95 % interval and the verdict, so no relative number
//! reaches the terminal without its noise.

use std::fmt::Write as _;

use super::terminal::label_width;
use super::verdicts::intervals_line;
use crate::report::Report;
use crate::report::sections::ibench::verdict_table;
use crate::report::sysbench::majority_method;

/// The throughput table of `report`'s Insert Benchmark section; empty when
/// it has none.
pub fn throughput_summary(report: &Report) -> String {
    let mut out = String::new();
    let Some(s) = &report.ibench else {
        return out;
    };
    if s.steps.is_empty() {
        return out;
    }
    let labels: Vec<&str> = s.throughput.iter().map(|r| r.target.as_str()).collect();
    let col = label_width(labels.iter().copied());
    let repeats = s
        .throughput
        .iter()
        .flat_map(|r| &r.cells)
        .map(|c| c.n)
        .max()
        .unwrap_or(1);
    let _ = writeln!(
        out,
        "\nInsert Benchmark: inserts/s (l.*, l.x: rows indexed/s) and queries/s (q*); * = SLA failure, ! = step not ok"
    );
    if repeats > 1 {
        let _ = writeln!(out, "median over {repeats} repetitions");
    }
    let mut widths = vec![8, col];
    widths.extend((1..labels.len()).flat_map(|_| [col, 17, 13]));
    super::table::write(&mut out, &verdict_table(s), &widths);
    let method = majority_method(
        s.throughput
            .iter()
            .flat_map(|r| &r.cells)
            .filter_map(|c| c.interval.map(|i| i.method)),
    );
    if let Some(m) = method {
        let _ = writeln!(out, "{}", intervals_line(m.describe(), report.min_effect));
    }
    out
}
