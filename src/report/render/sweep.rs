//! The concurrency sweep section in Markdown and HTML: per test a table of
//! QPS, p99 and relative QPS against client connections, and in HTML two
//! charts with a log-scale connections axis (QPS and p99), one line per
//! target.

use std::fmt::Write as _;

use super::svg::{color, esc};
use crate::report::format::{amount, rel};
use crate::report::model::Report;
use crate::report::sweep::{SweepSection, SweepTest};

/// The table's header and rows: connections, then per target QPS and p99
/// (and for the others QPS relative to the base at the same count).
fn rows(t: &SweepTest) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["connections".to_string()];
    for (i, l) in t.lines.iter().enumerate() {
        header.push(format!("{} QPS", l.target));
        header.push(format!("{} p99 µs", l.target));
        if i > 0 {
            header.push(format!("{} rel", l.target));
        }
    }
    let rows = t
        .counts
        .iter()
        .enumerate()
        .map(|(k, n)| {
            let mut row = vec![n.to_string()];
            for (i, l) in t.lines.iter().enumerate() {
                let p = l.points[k].as_ref();
                row.push(p.map_or("n/a".into(), |p| amount(p.qps)));
                row.push(p.map_or("n/a".into(), |p| p.p99_us.to_string()));
                if i > 0 {
                    row.push(p.and_then(|p| p.relative).map_or("n/a".into(), rel));
                }
            }
            row
        })
        .collect();
    (header, rows)
}

/// The section in Markdown.
pub fn markdown(o: &mut String, s: &SweepSection) {
    o.push_str("## Concurrency sweep\n\n");
    for line in &s.summary {
        let _ = writeln!(o, "- {line}");
    }
    o.push('\n');
    for t in &s.tests {
        let _ = writeln!(o, "### {} against connections\n", t.name);
        let (header, rows) = rows(t);
        let _ = writeln!(o, "| {} |", header.join(" | "));
        let _ = writeln!(o, "|---|{}", "---:|".repeat(header.len().saturating_sub(1)));
        for r in rows {
            let _ = writeln!(o, "| {} |", r.join(" | "));
        }
        o.push('\n');
    }
}

/// The section in HTML: summary, then per test the QPS and p99 charts and
/// the table.
pub fn html(o: &mut String, _r: &Report, s: &SweepSection) {
    o.push_str("<section id=\"sweep\"><h2>Concurrency sweep</h2>\n<ul class=\"summary\">");
    for line in &s.summary {
        let _ = write!(o, "<li>{}</li>", esc(line));
    }
    o.push_str("</ul>\n");
    for t in &s.tests {
        let _ = writeln!(o, "<h3>{} against connections</h3>", esc(&t.name));
        let series = |f: &dyn Fn(&crate::report::sweep::SweepPoint) -> f64| -> Vec<Series> {
            t.lines
                .iter()
                .enumerate()
                .map(|(i, l)| Series {
                    name: l.target.clone(),
                    color: color(i),
                    values: l.points.iter().map(|p| p.as_ref().map(f)).collect(),
                })
                .collect()
        };
        o.push_str("<div class=\"charts\" style=\"display:flex;flex-wrap:wrap;gap:8px\">");
        o.push_str(&log_x_chart(
            &format!("{}: QPS", t.name),
            "QPS",
            &t.counts,
            &series(&|p| p.qps),
        ));
        o.push_str(&log_x_chart(
            &format!("{}: p99 latency", t.name),
            "p99 µs",
            &t.counts,
            &series(&|p| p.p99_us as f64),
        ));
        o.push_str("</div>\n");
        let (header, rows) = rows(t);
        let header: Vec<String> = header.iter().map(|h| esc(h)).collect();
        let rows: Vec<Vec<(String, String)>> = rows
            .into_iter()
            .map(|r| r.into_iter().map(|c| (String::new(), esc(&c))).collect())
            .collect();
        super::html::table(o, "sweep", &header, &rows);
    }
    o.push_str("</section>\n");
}

/// One target's values at each count (`None`: not measured there).
pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub values: Vec<Option<f64>>,
}

const WIDTH: f64 = 560.0;
const LEFT: f64 = 64.0;
const TOP: f64 = 44.0;
const PLOT_HEIGHT: f64 = 220.0;

/// A line chart of `series` against `counts` on a log-scale x axis (one
/// tick per count), y from 0; a marker on each measured point.
pub fn log_x_chart(title: &str, y_label: &str, counts: &[u32], series: &[Series]) -> String {
    let height = TOP + PLOT_HEIGHT + 40.0;
    let right = WIDTH - 16.0;
    let lo = f64::from(counts.first().copied().unwrap_or(1).max(1)).log2();
    let hi = f64::from(counts.last().copied().unwrap_or(1).max(1)).log2();
    let span = if hi > lo { hi - lo } else { 1.0 };
    let px = |n: u32| LEFT + (right - LEFT) * (f64::from(n.max(1)).log2() - lo) / span;
    let max_y = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .fold(0.0f64, |a, &b| a.max(b));
    let step = nice_step(if max_y > 0.0 { max_y } else { 1.0 } / 5.0);
    let top = ((max_y / step).ceil() * step).max(step);
    let py = |v: f64| TOP + PLOT_HEIGHT * (1.0 - v / top);
    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg class="chart sweep" xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{height:.0}" viewBox="0 0 {WIDTH:.0} {height:.0}" role="img" aria-label="{t}"><title>{t}</title><text x="{LEFT}" y="16" class="ctitle">{t}</text>"#,
        t = esc(title)
    );
    let mut x = LEFT;
    for s in series {
        let _ = write!(
            o,
            r#"<rect x="{x:.1}" y="23" width="10" height="10" fill="{}"/><text x="{:.1}" y="32" class="leg">{}</text>"#,
            s.color,
            x + 14.0,
            esc(&s.name)
        );
        x += 24.0 + s.name.chars().count() as f64 * 6.5;
    }
    let mut v = 0.0;
    while v <= top + 1e-9 {
        let _ = write!(
            o,
            r##"<line x1="{LEFT}" x2="{right:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#dddddd"/><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"##,
            LEFT - 4.0,
            py(v) + 4.0,
            amount(v),
            y = py(v)
        );
        v += step;
    }
    for &n in counts {
        let _ = write!(
            o,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{:.1}" stroke="#eeeeee"/><text x="{x:.1}" y="{:.1}" class="tick" text-anchor="middle">{n}</text>"##,
            TOP + PLOT_HEIGHT,
            TOP + PLOT_HEIGHT + 14.0,
            x = px(n)
        );
    }
    let _ = write!(
        o,
        r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">client connections (log scale)</text><text x="12" y="{:.1}" class="tick" transform="rotate(-90 12 {:.1})" text-anchor="middle">{}</text>"#,
        (LEFT + right) / 2.0,
        TOP + PLOT_HEIGHT + 32.0,
        TOP + PLOT_HEIGHT / 2.0,
        TOP + PLOT_HEIGHT / 2.0,
        esc(y_label)
    );
    for s in series {
        let pts: Vec<(f64, f64, u32, f64)> = counts
            .iter()
            .zip(&s.values)
            .filter_map(|(&n, v)| v.map(|v| (px(n), py(v), n, v)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let line: Vec<String> = pts
            .iter()
            .map(|(x, y, ..)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = write!(
            o,
            r#"<polyline class="line" fill="none" stroke="{}" stroke-width="2" points="{}"><title>{}</title></polyline>"#,
            s.color,
            line.join(" "),
            esc(&s.name)
        );
        for (x, y, n, v) in &pts {
            let _ = write!(
                o,
                r#"<circle class="point" cx="{x:.1}" cy="{y:.1}" r="3" fill="{}"><title>{}: {} at {n} connections</title></circle>"#,
                s.color,
                esc(&s.name),
                amount(*v)
            );
        }
    }
    let _ = write!(
        o,
        r##"<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{b:.1}" stroke="#333333"/><line x1="{LEFT}" x2="{right:.1}" y1="{b:.1}" y2="{b:.1}" stroke="#333333"/></svg>"##,
        b = TOP + PLOT_HEIGHT
    );
    o
}

/// A round tick step near `raw`: 1, 2 or 5 times a power of ten.
fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    mag * if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_sit_on_a_log_axis_one_marker_per_measured_point() {
        let s = log_x_chart(
            "point-select: QPS",
            "QPS",
            &[1, 4, 64],
            &[
                Series {
                    name: "pg15".into(),
                    color: color(0),
                    values: vec![Some(10.0), Some(30.0), Some(25.0)],
                },
                Series {
                    name: "maria<11>".into(),
                    color: color(1),
                    values: vec![Some(8.0), None, Some(20.0)],
                },
            ],
        );
        assert_eq!(s.matches("<polyline").count(), 2);
        assert_eq!(s.matches("<circle").count(), 5);
        assert!(s.contains("maria&lt;11&gt;") && !s.contains("maria<11>"));
        // 1 → 4 is two doublings, 4 → 64 four: x distances 1 : 2.
        let x = |n: u32| {
            let tick = format!(r#"class="tick" text-anchor="middle">{n}</text>"#);
            let at = s.find(&tick).unwrap();
            let head = &s[..at];
            let xs = head.rfind("x=\"").unwrap();
            head[xs + 3..]
                .split('"')
                .next()
                .unwrap()
                .parse::<f64>()
                .unwrap()
        };
        let (a, b, c) = (x(1), x(4), x(64));
        assert!(((c - b) / (b - a) - 2.0).abs() < 0.01, "{a} {b} {c}");
    }

    #[test]
    fn tick_steps_are_round() {
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(1800.0), 2000.0);
        assert_eq!(nice_step(0.7), 1.0);
    }
}
