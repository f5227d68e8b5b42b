//! Hand-written SVG charts for the HTML report: grouped bars of relative QPS
//! and per-second lines.
//!
//! Written by hand rather than with a plotting crate so the output is
//! deterministic (snapshot-friendly), needs no fonts or JavaScript, and is a
//! few kilobytes of plain markup inside the one HTML file.

use std::fmt::Write as _;

use crate::report::model::Bands;

/// Colours of the targets' series, in column order (cycled).
pub const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#9c755f", "#edc948",
];

/// The colour of series `i`.
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Text safe inside SVG/HTML markup.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// One series of a bar chart: a value (or none) per category.
#[derive(Clone, Debug, PartialEq)]
pub struct BarSeries {
    pub name: String,
    pub color: &'static str,
    pub values: Vec<Option<f64>>,
    /// Each value's 95 % interval (lo, hi), drawn as a whisker; empty or
    /// `None` where there is none.
    pub intervals: Vec<Option<(f64, f64)>>,
}

/// One series of a line chart: (x, y) points.
#[derive(Clone, Debug, PartialEq)]
pub struct LineSeries {
    pub name: String,
    pub color: &'static str,
    pub points: Vec<[f64; 2]>,
}

const PLOT_TOP: f64 = 40.0;
/// Every chart's plot height, pixels.
pub(super) const PLOT_HEIGHT: f64 = 220.0;
const LEFT: f64 = 52.0;

/// A step of 0.05, 0.1, 0.2, 0.5, 1, 2, 5… giving at most `max_ticks`
/// ticks over `span`.
pub(super) fn tick_step(span: f64, max_ticks: f64) -> f64 {
    let raw = (span / max_ticks).max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * mag >= raw {
            return m * mag;
        }
    }
    10.0 * mag
}

/// A number for an axis label, without trailing zeros.
fn tick_label(x: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    format!("{x:.decimals$}")
}

/// Opens a chart (`class`: `bars`, `lines`, `sweep`) of `width` ×
/// `height` with its title at `left`.
pub(super) fn open_chart(
    o: &mut String,
    class: &str,
    width: f64,
    height: f64,
    left: f64,
    title: &str,
) {
    let _ = write!(
        o,
        r#"<svg class="chart {class}" xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="{t}"><title>{t}</title><text x="{left}" y="16" class="ctitle">{t}</text>"#,
        t = esc(title)
    );
}

/// Horizontal grid lines from `left` to `right` at `from`, `from + step`,
/// … up to `top`, each labelled at the left with `label` of its value;
/// `y` places a value.
pub(super) fn y_grid(
    o: &mut String,
    left: f64,
    right: f64,
    (from, top, step): (f64, f64, f64),
    y: impl Fn(f64) -> f64,
    label: impl Fn(f64) -> String,
) {
    let mut t = from;
    while t <= top + 1e-9 {
        let _ = write!(
            o,
            r##"<line x1="{left}" x2="{right:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#dddddd"/><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"##,
            left - 4.0,
            y(t) + 4.0,
            label(t),
            yy = y(t)
        );
        t += step;
    }
}

/// The axes' names: `x_label` centred under a plot from `left` to `right`
/// whose top is `top`, `y_label` up the chart's left edge.
pub(super) fn axis_labels(
    o: &mut String,
    (left, right): (f64, f64),
    top: f64,
    x_label: &str,
    y_label: &str,
) {
    let _ = write!(
        o,
        r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text><text x="12" y="{:.1}" class="tick" transform="rotate(-90 12 {:.1})" text-anchor="middle">{}</text>"#,
        (left + right) / 2.0,
        top + PLOT_HEIGHT + 32.0,
        esc(x_label),
        top + PLOT_HEIGHT / 2.0,
        top + PLOT_HEIGHT / 2.0,
        esc(y_label)
    );
}

/// Grouped bars of relative values per category, from `floor` up, with the
/// 1.0 line and the similar band shaded. Values below the floor are drawn
/// as a stub with their value; values above the top are clipped likewise.
pub fn relative_bars(
    title: &str,
    categories: &[String],
    series: &[BarSeries],
    floor: f64,
    bands: Bands,
) -> String {
    let n_series = series.len().max(1) as f64;
    let bar_w = 16.0;
    let n_cats = categories.len().max(1) as f64;
    // At least 360 px of plot, shared out among the categories.
    let slot = (n_series * bar_w + 20.0).max(360.0 / n_cats);
    let plot_w = slot * n_cats;
    let plot_right = LEFT + 20.0 + plot_w;
    let longest = categories
        .iter()
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(0) as f64;
    // Category labels run down and to the right at 30°, from under their
    // bars: room below for their height and on the right for the last one.
    let label_len = longest * 7.0;
    let legend_w: f64 = series
        .iter()
        .map(|s| 24.0 + s.name.chars().count() as f64 * 6.5)
        .sum();
    let width = (plot_right + 10.0)
        .max(LEFT + 10.0 + plot_w - slot / 2.0 + label_len * 0.87)
        .max(LEFT + legend_w + 10.0)
        .max(LEFT + title.chars().count() as f64 * 7.5 + 10.0);
    let bottom_room = 24.0 + label_len * 0.5;
    let height = PLOT_TOP + PLOT_HEIGHT + bottom_room;
    let maxv = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .fold(1.0f64, |a, &b| a.max(b));
    let top = ((maxv.min(3.0) + 0.05) * 10.0).ceil() / 10.0;
    let top = top.max(1.1).max(floor + 0.3);
    let y = |v: f64| PLOT_TOP + PLOT_HEIGHT * (1.0 - (v - floor) / (top - floor));

    let mut o = String::new();
    open_chart(&mut o, "bars", width, height, LEFT, title);
    legend(
        &mut o,
        series.iter().map(|s| (s.name.as_str(), s.color)),
        LEFT,
        30.0,
    );
    // The band of "similar" values and the 1.0 line.
    let (blo, bhi) = (bands.low.max(floor), bands.high.min(top));
    if bhi > blo {
        let _ = write!(
            o,
            r##"<rect class="band" x="{LEFT}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#eeeeee"/>"##,
            y(bhi),
            plot_right - LEFT,
            y(blo) - y(bhi)
        );
    }
    let step = tick_step(top - floor, 6.0);
    let from = (floor / step).ceil() * step;
    y_grid(&mut o, LEFT, plot_right, (from, top, step), y, |t| {
        tick_label(t, step)
    });
    let _ = write!(
        o,
        r##"<line class="one" x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#333333" stroke-dasharray="4 3"/>"##,
        plot_right,
        yy = y(1.0)
    );
    for (ci, cat) in categories.iter().enumerate() {
        // Bars centred in their slot.
        let x0 = LEFT + 10.0 + slot * ci as f64 + (slot - n_series * bar_w) / 2.0;
        for (si, s) in series.iter().enumerate() {
            let Some(v) = s.values.get(ci).copied().flatten() else {
                continue;
            };
            let x = x0 + bar_w * si as f64;
            let shown = v.clamp(floor + 0.005 * (top - floor), top);
            let _ = write!(
                o,
                r#"<rect class="bar" x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {} = {v:.2}</title></rect>"#,
                y(shown),
                bar_w - 2.0,
                y(floor) - y(shown),
                s.color,
                esc(cat),
                esc(&s.name)
            );
            if let Some((lo, hi)) = s.intervals.get(ci).copied().flatten() {
                let (ylo, yhi) = (y(lo.clamp(floor, top)), y(hi.clamp(floor, top)));
                let cx = x + (bar_w - 2.0) / 2.0;
                let _ = write!(
                    o,
                    r##"<path class="whisker" d="M{cx:.1} {ylo:.1}V{yhi:.1}M{:.1} {ylo:.1}H{:.1}M{:.1} {yhi:.1}H{:.1}" stroke="#222222" fill="none"><title>{}: {} 95 % interval {lo:.2}–{hi:.2}</title></path>"##,
                    cx - 3.0,
                    cx + 3.0,
                    cx - 3.0,
                    cx + 3.0,
                    esc(cat),
                    esc(&s.name)
                );
            }
            if v < floor || v > top {
                let (ly, mark) = if v < floor {
                    (y(floor) - 4.0, "▼")
                } else {
                    (y(top) + 10.0, "▲")
                };
                let _ = write!(
                    o,
                    r#"<text class="clip" x="{:.1}" y="{ly:.1}" text-anchor="middle">{mark}{v:.2}</text>"#,
                    x + bar_w / 2.0
                );
            }
        }
        let lx = x0 + n_series * bar_w / 2.0;
        let ly = PLOT_TOP + PLOT_HEIGHT + 14.0;
        let _ = write!(
            o,
            r#"<text class="cat" x="{lx:.1}" y="{ly:.1}" transform="rotate(30 {lx:.1} {ly:.1})" text-anchor="start">{}</text>"#,
            esc(cat)
        );
    }
    let _ = write!(
        o,
        r##"<line x1="{LEFT}" x2="{LEFT}" y1="{PLOT_TOP}" y2="{:.1}" stroke="#333333"/></svg>"##,
        PLOT_TOP + PLOT_HEIGHT
    );
    o
}

/// A colour square and name per series, in a row from (`x0`, `y0`).
pub(super) fn legend<'a>(
    o: &mut String,
    items: impl Iterator<Item = (&'a str, &'a str)>,
    x0: f64,
    y0: f64,
) {
    let mut x = x0;
    for (name, color) in items {
        let _ = write!(
            o,
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{color}"/><text x="{:.1}" y="{y0:.1}" class="leg">{}</text>"#,
            y0 - 9.0,
            x + 14.0,
            esc(name)
        );
        x += 24.0 + name.chars().count() as f64 * 6.5;
    }
}

/// Lines of (x, y) points, one per series, from y = 0 up; `x_label` and
/// `y_label` name the axes.
pub fn lines(title: &str, x_label: &str, y_label: &str, series: &[LineSeries]) -> String {
    let width = 640.0;
    let height = PLOT_TOP + PLOT_HEIGHT + 40.0;
    let right = width - 12.0;
    let all = series.iter().flat_map(|s| s.points.iter());
    let max_x = all.clone().map(|p| p[0]).fold(1.0f64, f64::max);
    let max_y = all.map(|p| p[1]).fold(0.0f64, f64::max);
    let ystep = tick_step(if max_y > 0.0 { max_y } else { 1.0 }, 5.0);
    let top = ((max_y / ystep).ceil() * ystep).max(ystep);
    let px = |x: f64| LEFT + (right - LEFT) * x / max_x;
    let py = |v: f64| PLOT_TOP + PLOT_HEIGHT * (1.0 - v / top);

    let mut o = String::new();
    open_chart(&mut o, "lines", width, height, LEFT, title);
    legend(
        &mut o,
        series.iter().map(|s| (s.name.as_str(), s.color)),
        LEFT,
        30.0,
    );
    y_grid(&mut o, LEFT, right, (0.0, top, ystep), py, |t| {
        tick_label(t, ystep)
    });
    let xstep = tick_step(max_x, 8.0).max(1.0);
    let mut t = 0.0;
    while t <= max_x + 1e-9 {
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#,
            px(t),
            PLOT_TOP + PLOT_HEIGHT + 14.0,
            tick_label(t, xstep)
        );
        t += xstep;
    }
    axis_labels(&mut o, (LEFT, right), PLOT_TOP, x_label, y_label);
    for s in series {
        if s.points.is_empty() {
            continue;
        }
        let pts: Vec<String> = s
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", px(p[0]), py(p[1])))
            .collect();
        let _ = write!(
            o,
            r#"<polyline class="line" fill="none" stroke="{}" stroke-width="1.5" points="{}"><title>{}</title></polyline>"#,
            s.color,
            pts.join(" "),
            esc(&s.name)
        );
    }
    let _ = write!(
        o,
        r##"<line x1="{LEFT}" x2="{LEFT}" y1="{PLOT_TOP}" y2="{:.1}" stroke="#333333"/><line x1="{LEFT}" x2="{right:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#333333"/></svg>"##,
        PLOT_TOP + PLOT_HEIGHT,
        yy = PLOT_TOP + PLOT_HEIGHT
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bars(values: Vec<Option<f64>>) -> String {
        relative_bars(
            "point queries",
            &["a".to_string(), "b<c".to_string()],
            &[BarSeries {
                name: "pg18".into(),
                color: color(0),
                values,
                intervals: vec![Some((0.9, 1.1))],
            }],
            0.8,
            Bands::SYSBENCH,
        )
    }

    #[test]
    fn one_bar_per_value_and_escaped_labels() {
        let s = bars(vec![Some(1.02), Some(0.95)]);
        assert_eq!(s.matches(r#"class="bar""#).count(), 2);
        assert_eq!(
            s.matches(r#"class="whisker""#).count(),
            1,
            "one interval given"
        );
        assert!(s.contains("95 % interval 0.90–1.10"));
        assert!(s.contains("b&lt;c") && !s.contains("b<c"));
        assert_eq!(s, bars(vec![Some(1.02), Some(0.95)]), "deterministic");
    }

    #[test]
    fn values_beyond_the_axis_are_clipped_and_labelled() {
        let s = bars(vec![Some(0.5), Some(4.0)]);
        assert!(s.contains("▼0.50"), "{s}");
        assert!(s.contains("▲4.00"), "{s}");
        assert!(!s.contains("height=\"-"), "no negative heights");
    }

    #[test]
    fn tick_steps_are_round() {
        assert_eq!(tick_step(0.4, 6.0), 0.1);
        assert_eq!(tick_step(2.2, 6.0), 0.5);
        assert_eq!(tick_step(45_000.0, 5.0), 10_000.0);
        assert_eq!(tick_label(0.9, 0.1), "0.9");
        assert_eq!(tick_label(20_000.0, 10_000.0), "20000");
    }

    #[test]
    fn a_line_per_series_with_points() {
        let s = lines(
            "l.i1 inserts/s",
            "second",
            "inserts/s",
            &[LineSeries {
                name: "pg17".into(),
                color: color(1),
                points: vec![[0.0, 10.0], [1.0, 12.0], [2.0, 9.0]],
            }],
        );
        assert_eq!(s.matches("<polyline").count(), 1);
        assert!(s.contains(r#"class="chart lines""#));
    }
}
