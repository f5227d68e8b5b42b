//! The CPU-profile section: in Markdown per step the table of top
//! functions by CPU µs per operation; on the page also a flamegraph per
//! target and a differential one base → target (drawn by `inferno`, as
//! static SVG without its script, so the page stays script-free).
//!
//! In the differential graph the base's counts are scaled to the target's
//! number of operations first, so a frame's colour says whether it costs
//! more (red) or less (blue) per operation, not per second of sampling.

use std::fmt::Write as _;

use inferno::flamegraph::{self, Options};

use super::server::{missing, top_functions};
use crate::report::cpu_profile::{ProfileSection, ProfileStep, scaled};
use crate::report::document::Block;
use crate::report::format::opt_amount;
use crate::report::model::Report;
use crate::report::render::svg::esc;

/// The section's blocks: [`markdown`]'s for Markdown, [`page`]'s markup
/// for the page.
pub fn blocks(r: &Report, s: &ProfileSection) -> Vec<Block> {
    let mut o = String::new();
    page(&mut o, r, s);
    vec![
        Block::Markdown(crate::report::document::markdown::render(&markdown(r, s))),
        Block::Html(o),
    ]
}

/// The CPU profiles in Markdown: per step the top functions by self CPU
/// µs per operation (the page adds the flamegraphs, [`page`]).
fn markdown(r: &Report, s: &ProfileSection) -> Vec<Block> {
    let mut blocks = vec![
        Block::Markdown("## CPU profiles\n\n".into()),
        Block::Para(
            "The server's processes sampled with `perf record -e cpu-clock -g` during the measured \
             interval; self CPU µs per operation of the top functions (flamegraphs in the HTML \
             report)."
                .into(),
        ),
    ];
    blocks.extend(missing(r, &s.missing, "no profile: "));
    blocks.push(Block::Markdown("\n".into()));
    for step in &s.steps {
        blocks.push(Block::Heading(format!(
            "Top functions of {} ({})",
            step.name, step.per
        )));
        blocks.push(Block::Table(top_functions(r, step, "function")));
    }
    blocks
}

/// Appends the page's section to `o`.
fn page(o: &mut String, r: &Report, s: &ProfileSection) {
    o.push_str("<section id=\"cpu-profiles\"><h2>CPU profiles</h2>\n");
    o.push_str(
        "<p class=\"legend\">The server's processes sampled with <code>perf record -e cpu-clock -g</code> \
         during each step's measured interval. Widths are shares of the sampled CPU; in the \
         differential graphs red frames cost more per operation than in the base, blue ones \
         less. The table lists self time (samples ending in the function), CPU µs per operation.</p>\n",
    );
    for (t, why) in r.targets.iter().zip(&s.missing) {
        if let Some(why) = why {
            let _ = writeln!(
                o,
                "<p class=\"meta\">{}: no profile: {}</p>",
                esc(&t.label),
                esc(why)
            );
        }
    }
    for step in &s.steps {
        let _ = writeln!(
            o,
            "<details open><summary><b>{}</b></summary>",
            esc(&step.name)
        );
        top_table(o, r, step);
        for (i, (t, p)) in r.targets.iter().zip(&step.profiles).enumerate() {
            let Some(p) = p else { continue };
            let title = format!(
                "{}: {} on {} ({} samples, {} µs {})",
                step.name,
                "server CPU",
                t.label,
                p.samples,
                opt_amount(p.us_per_op),
                step.per
            );
            let _ = write!(o, "<div class=\"flame\" data-target=\"{i}\">");
            o.push_str(&flame_svg(&p.folded, &title, false));
            o.push_str("</div>\n");
        }
        differential(o, r, step);
        o.push_str("</details>\n");
    }
    o.push_str("</section>\n");
}

fn top_table(o: &mut String, r: &Report, step: &ProfileStep) {
    let title = format!("function (self CPU µs {})", step.per);
    let table = top_functions(r, step, &title);
    crate::report::document::html::table(o, &table);
}

/// One differential flamegraph per target with a profile, against the
/// base's, when both know their operation counts.
fn differential(o: &mut String, r: &Report, step: &ProfileStep) {
    let Some(Some(base)) = step.profiles.first() else {
        return;
    };
    for (i, p) in step.profiles.iter().enumerate().skip(1) {
        let Some(p) = p else { continue };
        let (Some(base_ops), Some(ops)) = (base.ops, p.ops) else {
            continue;
        };
        let before = scaled(&base.folded, ops / base_ops);
        let mut diff = Vec::new();
        let opts = inferno::differential::Options::default();
        if inferno::differential::from_readers(
            opts,
            before.as_bytes(),
            p.folded.as_bytes(),
            &mut diff,
        )
        .is_err()
        {
            continue;
        }
        let title = format!(
            "{}: {} → {}, per {}",
            step.name,
            r.targets[0].label,
            r.targets[i].label,
            step.per.trim_start_matches("per ")
        );
        let _ = write!(o, "<div class=\"flame diff\" data-target=\"{i}\">");
        o.push_str(&flame_svg(&String::from_utf8_lossy(&diff), &title, true));
        o.push_str("</div>\n");
    }
}

/// A flamegraph of `folded` as an inline `<svg>` (no XML prolog, no
/// script); a note instead when there is nothing to draw.
fn flame_svg(folded: &str, title: &str, differential: bool) -> String {
    let mut opts = Options::default();
    opts.title = title.to_string();
    opts.no_javascript = true;
    opts.deterministic = true;
    opts.image_width = Some(1150);
    opts.min_width = 0.2;
    opts.count_name = "samples".into();
    if differential {
        opts.subtitle = Some("red: more per operation than the base; blue: less".into());
    }
    let mut out = Vec::new();
    if folded.trim().is_empty()
        || flamegraph::from_lines(&mut opts, folded.lines(), &mut out).is_err()
    {
        return format!("<p class=\"meta\">{}: no samples to draw</p>", esc(title));
    }
    let mut text = String::from_utf8_lossy(&out).into_owned();
    // Even without its interactive script inferno declares a few script
    // variables; the report carries no script at all.
    while let Some(start) = text.find("<script") {
        let end = text[start..]
            .find("</script>")
            .map_or(text.len(), |e| start + e + "</script>".len());
        text.replace_range(start..end, "");
    }
    match text.find("<svg") {
        Some(at) => text[at..].replacen("<svg ", "<svg class=\"flamegraph\" ", 1),
        None => String::new(),
    }
}
