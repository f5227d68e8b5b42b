//! Live progress on stderr while a run works: the current test, elapsed and
//! total time, live QPS. A bar on a terminal; on a pipe or in CI, one line
//! per finished step (bars would only fill logs with control codes).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::record::Progress;

/// The progress display of one run.
pub struct ProgressView {
    bar: Option<ProgressBar>,
}

impl ProgressView {
    /// A bar when stderr is a terminal, plain lines otherwise.
    pub fn new() -> ProgressView {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{bar:24.cyan/blue} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b.enable_steady_tick(Duration::from_millis(250));
            b
        });
        ProgressView { bar }
    }

    /// Shows a step's progress (called about once a second by the runner).
    pub fn step(&self, p: &Progress<'_>) {
        if let Some(b) = &self.bar {
            let frac = if p.total > 0.0 {
                p.elapsed / p.total
            } else {
                0.0
            };
            b.set_position((frac.clamp(0.0, 1.0) * 1000.0) as u64);
            let phase = if p.warming_up {
                "warm-up".to_string()
            } else {
                format!("{:.0} qps", p.qps)
            };
            let errs = if p.errors > 0 {
                format!(", {} errors", p.errors)
            } else {
                String::new()
            };
            b.set_message(format!(
                "{} {:.0}/{:.0}s {phase}{errs}",
                p.label, p.elapsed, p.total
            ));
        }
    }

    /// Shows a phase that is not a measured step (loading, housekeeping).
    pub fn phase(&self, text: &str, fraction: f64) {
        if let Some(b) = &self.bar {
            b.set_position((fraction.clamp(0.0, 1.0) * 1000.0) as u64);
            b.set_message(text.to_string());
        }
    }

    /// The bar during a load: `LABEL load DONE/TOTAL rows`, filled by the
    /// share of rows loaded.
    pub fn load_phase(&self, label: &str, done: u64, total: u64) {
        self.phase(
            &format!("{label} load {done}/{total} rows"),
            done as f64 / total.max(1) as f64,
        );
    }

    /// Prints a line above the bar (or alone on a pipe), URL passwords
    /// redacted (a server's error may quote a URL).
    pub fn line(&self, text: &str) {
        let text = crate::util::redact::redact_url_passwords(text);
        match &self.bar {
            Some(b) => b.suspend(|| eprintln!("{text}")),
            None => eprintln!("{text}"),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Default for ProgressView {
    fn default() -> Self {
        Self::new()
    }
}
