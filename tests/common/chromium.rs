//! Headless Chromium for the tests that check an HTML report as a browser
//! lays it out (probes of the DOM, screenshots).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Headless Chromium, as CI installs it (Debian's `chromium`).
pub fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "headless Chromium is needed to check the HTML report: apt-get install chromium (.ci/run installs it)"
    );
}

pub fn chromium_cmd(profile: &Path) -> Command {
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}
