//! `tidemark history` as a Markdown table (one row per change point, and
//! one per series without any) and as one HTML page with a small SVG chart
//! per series, change points marked.

use std::fmt::Write as _;

use super::history::{Change, Series};
use super::render::svg::esc;

/// A change as text: `-31.2 % [-35.0, -27.1]`.
fn change_text(c: &Change) -> String {
    let pct = |r: f64| (r - 1.0) * 100.0;
    format!(
        "{:+.1} % [{:+.1}, {:+.1}]",
        pct(c.ratio),
        pct(c.interval.lo),
        pct(c.interval.hi)
    )
}

/// Where a point is: `15.18 (run 4, label)`.
fn point_text(p: &super::history::Point) -> String {
    format!("{} (run {}, {})", p.version, p.run, p.label)
}

/// The history as Markdown.
pub fn markdown(series: &[Series]) -> String {
    let mut o = String::from("# Test history\n\n");
    if series.is_empty() {
        o.push_str("No stored measurements match.\n");
        return o;
    }
    o.push_str(
        "Change points by E-divisive means (permutation test); the change is the mean \
         after over the mean before, with its 95 % interval.\n\n",
    );
    o.push_str("| family | test | points | change | before | after | p |\n");
    o.push_str("|---|---|---:|---|---|---|---:|\n");
    for s in series {
        if s.changes.is_empty() {
            let _ = writeln!(
                o,
                "| {} | {} | {} | none | | | |",
                s.family,
                s.test,
                s.points.len()
            );
        }
        for c in &s.changes {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {:.3} |",
                s.family,
                s.test,
                s.points.len(),
                change_text(c),
                point_text(&c.before),
                point_text(&c.after),
                c.p_value
            );
        }
    }
    o
}

/// The history as one self-contained HTML page.
pub fn html(series: &[Series]) -> String {
    let mut o = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>tidemark history</title>\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
         td,th{border:1px solid #ccc;padding:2px 6px}.tick{font-size:10px}\
         section{display:inline-block;margin:0 1em 1em 0;vertical-align:top}</style>\
         </head><body><h1>Test history</h1>",
    );
    if series.is_empty() {
        o.push_str("<p>No stored measurements match.</p>");
    }
    for s in series {
        let _ = write!(
            o,
            "<section><h3>{} — {}</h3>{}",
            esc(&s.family),
            esc(&s.test),
            chart(s)
        );
        if s.changes.is_empty() {
            o.push_str("<p>No change point.</p>");
        }
        for c in &s.changes {
            let _ = write!(
                o,
                "<p>Change {} from {} to {} (p = {:.3})</p>",
                esc(&change_text(c)),
                esc(&point_text(&c.before)),
                esc(&point_text(&c.after)),
                c.p_value
            );
        }
        o.push_str("</section>");
    }
    o.push_str("</body></html>\n");
    o
}

/// A small line chart of a series' values, a red dashed line at each
/// change point; hovering a point shows its run and version.
fn chart(s: &Series) -> String {
    let (w, h, left, top, bottom) = (360.0, 160.0, 48.0, 10.0, 20.0);
    let n = s.points.len().max(2) as f64;
    let max = s.points.iter().map(|p| p.value).fold(0.0f64, f64::max);
    let max = if max > 0.0 { max * 1.1 } else { 1.0 };
    let x = |i: f64| left + (w - left - 10.0) * i / (n - 1.0);
    let y = |v: f64| top + (h - top - bottom) * (1.0 - v / max);
    let mut o = String::new();
    let _ = write!(
        o,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img"><line x1="{left}" x2="{left}" y1="{top}" y2="{b:.1}" stroke="#999"/><line x1="{left}" x2="{r:.1}" y1="{b:.1}" y2="{b:.1}" stroke="#999"/><text x="{tx:.1}" y="{ty:.1}" class="tick" text-anchor="end">{max:.0}</text><text x="{tx:.1}" y="{b:.1}" class="tick" text-anchor="end">0 {unit}</text>"##,
        b = h - bottom,
        r = w - 10.0,
        tx = left - 4.0,
        ty = top + 8.0,
        unit = esc(&s.unit),
    );
    for c in &s.changes {
        let cx = x(c.index as f64 - 0.5);
        let _ = write!(
            o,
            r##"<line class="change" x1="{cx:.1}" x2="{cx:.1}" y1="{top}" y2="{b:.1}" stroke="#e15759" stroke-dasharray="4 3"/>"##,
            b = h - bottom
        );
    }
    let pts: Vec<String> = s
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{:.1},{:.1}", x(i as f64), y(p.value)))
        .collect();
    let _ = write!(
        o,
        r##"<polyline fill="none" stroke="#4e79a7" stroke-width="1.5" points="{}"/>"##,
        pts.join(" ")
    );
    for (i, p) in s.points.iter().enumerate() {
        let _ = write!(
            o,
            r##"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="#4e79a7"><title>run {} {} {}: {:.0}</title></circle>"##,
            x(i as f64),
            y(p.value),
            p.run,
            esc(&p.label),
            esc(&p.version),
            p.value
        );
    }
    o.push_str("</svg>");
    o
}
