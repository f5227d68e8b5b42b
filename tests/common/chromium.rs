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

/// Loads `page` (with a probe script that writes `PROBE{json}END` into the
/// DOM) in headless Chromium and returns the probe's JSON.
pub fn probe(profile: &Path, page: &Path) -> serde_json::Value {
    let o = chromium_cmd(profile)
        .arg("--window-size=1280,1000")
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&o.stdout);
    let json = dom
        .rsplit_once("PROBE")
        .and_then(|(_, rest)| rest.split_once("END"))
        .map(|(j, _)| j)
        .unwrap_or_else(|| {
            panic!(
                "chromium rendered no probe: {}",
                String::from_utf8_lossy(&o.stderr)
            )
        });
    serde_json::from_str(json).expect("probe JSON")
}
