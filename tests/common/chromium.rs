//! Headless Chromium for the HTML report's tests: finding it, a command
//! with a private profile, and measuring a page with an appended probe.

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

/// A headless Chromium command with its own profile directory.
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

/// Loads `page` (a file) at `width`×`height` with `probe` (a `<script>`
/// that writes `PROBE<json>END` into the page) appended before
/// `</body>`, and returns the JSON the probe wrote.
pub fn probe_page(
    page: &str,
    dir: &Path,
    name: &str,
    width: u32,
    height: u32,
    probe: &str,
) -> serde_json::Value {
    let file = dir.join(format!("{name}.html"));
    std::fs::write(&file, page.replace("</body>", &format!("{probe}</body>"))).unwrap();
    let o = chromium_cmd(&dir.join(format!("profile-{name}")))
        .arg(format!("--window-size={width},{height}"))
        .arg("--dump-dom")
        .arg(format!("file://{}", file.display()))
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

/// A `width`×`height` screenshot of `page` (a file), kept under the
/// target directory as `name` for a human to look at; returns its path.
pub fn screenshot(page: &Path, dir: &Path, name: &str, width: u32, height: u32) -> PathBuf {
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_file(&shot);
    let o = chromium_cmd(&dir.join(format!("profile-shot-{name}")))
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    let png = std::fs::read(&shot)
        .unwrap_or_else(|_| panic!("no screenshot: {}", String::from_utf8_lossy(&o.stderr)));
    assert_eq!(&png[1..4], b"PNG");
    let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((w, h), (width, height));
    shot
}
