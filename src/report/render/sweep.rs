//! The concurrency sweep's charts on the page: a line chart against
//! client connections on a log-scale axis (the section itself is
//! [`crate::report::sections::sweep`]).

use std::fmt::Write as _;

use super::svg::{PLOT_HEIGHT, axis_labels, esc, legend, open_chart, tick_step, y_grid};
use crate::report::format::amount;

/// One target's values at each count (`None`: not measured there).
pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub values: Vec<Option<f64>>,
}

const WIDTH: f64 = 560.0;
const LEFT: f64 = 64.0;
const TOP: f64 = 44.0;

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
    let step = tick_step(if max_y > 0.0 { max_y } else { 1.0 }, 5.0);
    let top = ((max_y / step).ceil() * step).max(step);
    let py = |v: f64| TOP + PLOT_HEIGHT * (1.0 - v / top);
    let mut o = String::new();
    open_chart(&mut o, "sweep", WIDTH, height, LEFT, title);
    legend(
        &mut o,
        series.iter().map(|s| (s.name.as_str(), s.color)),
        LEFT,
        32.0,
    );
    y_grid(&mut o, LEFT, right, (0.0, top, step), py, amount);
    for &n in counts {
        let _ = write!(
            o,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{:.1}" stroke="#eeeeee"/><text x="{x:.1}" y="{:.1}" class="tick" text-anchor="middle">{n}</text>"##,
            TOP + PLOT_HEIGHT,
            TOP + PLOT_HEIGHT + 14.0,
            x = px(n)
        );
    }
    let x_label = "client connections (log scale)";
    axis_labels(&mut o, (LEFT, right), TOP, x_label, y_label);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::render::svg::color;

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
}
