//! The first screen of the HTML report: the verdict counts per suite and
//! group, the largest real changes with the costs that moved with them,
//! or (one target) the headline numbers and the command to compare next.
//! Built from [`crate::report::overview`]; placed right under the title so
//! it is visible without scrolling.

use std::fmt::Write as _;

use super::svg::esc;
use crate::report::format::{amount, interval_text};
use crate::report::model::Report;
use crate::report::overview::{Overview, build, count_word};
use crate::stats::{Verdict, VerdictCounts};

/// Renders the summary section (`id="summary"`).
pub(super) fn section(o: &mut String, r: &Report) {
    let ov = build(r);
    o.push_str("<section id=\"summary\"><h2>Summary</h2>\n");
    if ov.headline.is_some() {
        headline(o, r, &ov);
    } else {
        verdicts(o, r, &ov);
        changes(o, r, &ov);
    }
    o.push_str("</section>\n");
}

fn counts_cell(c: &VerdictCounts) -> String {
    let parts: Vec<String> = c
        .nonzero_for_rate()
        .map(|(v, n)| {
            // A change in bold, shaded as the verdict's cells are.
            let (tag, class) = match v {
                Verdict::Lower => ("b", "vs"),
                Verdict::Higher => ("b", "vf"),
                Verdict::NoDifference => ("span", "vn"),
                Verdict::Unknown | Verdict::Unverified => ("span", "vu"),
            };
            format!("<{tag} class=\"{class}\">{n} {}</{tag}>", count_word(v))
        })
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

fn verdicts(o: &mut String, r: &Report, ov: &Overview) {
    let _ = write!(
        o,
        "<table class=\"verdicts\"><thead><tr><th class=\"l\">suite: group</th><th>tests</th>"
    );
    for t in &r.targets[1..] {
        let _ = write!(
            o,
            "<th class=\"l\">{} <small>{}</small></th>",
            esc(&t.column),
            esc(&t.label)
        );
    }
    o.push_str("</tr></thead><tbody>");
    for g in &ov.groups {
        let _ = write!(
            o,
            "<tr><td class=\"l\"><a href=\"#{}\">{}: {}</a></td><td>{}</td>",
            esc(&g.anchor),
            g.suite,
            esc(&g.title),
            g.tests
        );
        for (c, d) in g.counts.iter().zip(&g.detectable) {
            let sees = crate::report::overview::sees(*d)
                .map(|s| format!(" <small>{s}</small>"))
                .unwrap_or_default();
            let _ = write!(o, "<td class=\"l\">{}{sees}</td>", counts_cell(c));
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table>\n");
    let _ = writeln!(
        o,
        "<p class=\"legend\">vs base <b>{}</b>: slower/faster = the 95 % interval of rQPS lies wholly below/above 1 and the change is at least {}%; same = no difference; sees ±x% = the median half-width of the group's intervals, the smallest change this run could call real there; unknown = too few seconds or repetitions for an interval; not verified = one measurement per side, whose interval cannot see drift between servers or over time (repeat with <code>--repeat 3</code>).</p>",
        esc(&r.base),
        amount(r.min_effect * 100.0).trim_end_matches(".00")
    );
}

fn changes(o: &mut String, r: &Report, ov: &Overview) {
    let min = amount(r.min_effect * 100.0)
        .trim_end_matches(".00")
        .to_string();
    let list = if !ov.changes.is_empty() {
        o.push_str("<h3>Largest real changes</h3>\n");
        &ov.changes
    } else if !ov.unverified.is_empty() {
        let _ = writeln!(
            o,
            "<p><b>No real change yet:</b> no interval lies wholly beyond ±{min}%. The largest changes \
             below have no verdict (one measurement per side, or too few seconds): measure again with \
             <code>--repeat 3</code> before believing them (~: a cost's point estimate, no interval).</p>"
        );
        &ov.unverified
    } else {
        let _ = write!(
            o,
            "<p><b>No real change:</b> no test's interval lies wholly beyond ±{min}%."
        );
        if !ov.within_noise.is_empty() {
            let list: Vec<String> = ov
                .within_noise
                .iter()
                .map(|c| format!("{} {} {}", esc(&c.column), esc(&c.test), esc(&c.rqps())))
                .collect();
            let _ = write!(o, " Largest, within noise: {}.", list.join("; "));
        }
        o.push_str("</p>\n");
        return;
    };
    o.push_str("<table class=\"changes\"><thead><tr><th class=\"l\">target</th><th class=\"l\">test</th><th>rQPS ± 95 %</th><th class=\"l\">cost per query that moved with it</th></tr></thead><tbody>");
    for c in list {
        let class = match c.verdict {
            "faster" => "faster",
            "slower" => "slower",
            _ => "similar",
        };
        let title = c.interval.as_ref().map(interval_text).unwrap_or_default();
        let _ = write!(
            o,
            "<tr><td class=\"l nw\" title=\"{}\">{}</td><td class=\"l nw\"><a href=\"#{}\" title=\"{}\">{}</a></td><td class=\"nw {class}\" title=\"{}\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&c.target),
            esc(&c.column),
            esc(&c.anchor),
            esc(&c.title),
            esc(&c.test),
            esc(&title),
            esc(&c.rqps()),
            if c.moved.is_empty() {
                "<span class=\"vu\">no cost metric changed beyond its interval</span>".into()
            } else {
                esc(&c.moved.join(", "))
            }
        );
    }
    o.push_str("</tbody></table>\n");
    if list
        .iter()
        .any(|c| c.moved.iter().any(|m| m.starts_with('~')))
    {
        o.push_str("<p class=\"legend\">~: the cost's point estimate; a cost gets an interval only from repetitions (<code>--repeat 3</code>).</p>\n");
    }
    if ov.more_changes > 0 {
        let _ = writeln!(
            o,
            "<p class=\"legend\">{} more real change{} in the tables below.</p>",
            ov.more_changes,
            if ov.more_changes == 1 { "" } else { "s" }
        );
    }
}

fn headline(o: &mut String, r: &Report, ov: &Overview) {
    let Some(h) = &ov.headline else { return };
    let _ = writeln!(
        o,
        "<p>One target, <b>{}</b>: nothing to compare yet. Its numbers, median over each group's tests:</p>",
        esc(&r.base)
    );
    o.push_str("<table class=\"headline\"><thead><tr><th class=\"l\">group</th><th>tests</th><th>median QPS</th><th>median p99 µs</th><th>median host CPU µs/query</th></tr></thead><tbody>");
    let cell = |x: Option<f64>| x.map_or("-".into(), amount);
    for row in &h.rows {
        let _ = write!(
            o,
            "<tr><td class=\"l\"><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&row.anchor),
            esc(&row.title),
            row.tests,
            cell(row.median_qps),
            cell(row.median_p99_us),
            cell(row.median_cpu_us)
        );
    }
    o.push_str("</tbody></table>\n<p>Compare next (OTHER: another target spec; RUN: another stored run):</p><pre>");
    for c in &h.next {
        let _ = writeln!(o, "{}", esc(c));
    }
    o.push_str("</pre>\n");
}
