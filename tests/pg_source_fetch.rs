//! `servers build pg --version RELEASE` fetches Debian's source package of
//! that release from a newer suite through a private apt, unpacks its
//! upstream tarball once into the cache and notes where it came from (the
//! build record's source); a release no suite has is one line naming the
//! ones that exist. (The build itself is tests/pg_build.rs's; building a
//! second major here would cost CI several minutes.)

mod common;

use common::*;
use tidemark::server::postgres::build::fetch::fetch_source_in;

const CACHE: &str = "/tmp/tidemark-test-cache";

#[test]
fn a_release_source_is_fetched_once_and_says_where_it_came_from() {
    let _serial = serial();
    // The cache is passed to the call: setting it in this process's
    // environment is unsound while other threads may read it. The CLI
    // below gets it in tidemark's environment.
    let cache = std::path::Path::new(CACHE);
    let mut said = Vec::new();
    let dir = fetch_source_in(cache, "18.6", &mut |l| said.push(l.to_string())).unwrap();
    assert!(
        dir.ends_with("src/debian/postgresql-18.6"),
        "{}",
        dir.display()
    );
    let configure = std::fs::read_to_string(dir.join("configure")).unwrap();
    assert!(configure.contains("PACKAGE_VERSION='18.6'"));
    let note = std::fs::read_to_string(dir.join(".tidemark-source")).unwrap();
    assert!(
        note.starts_with("Debian source package postgresql-18 18.6") && note.contains("sha256 "),
        "{note}"
    );
    // Fetched once: the second call finds it and says nothing.
    let mut again = Vec::new();
    let same = fetch_source_in(cache, "18.6", &mut |l| again.push(l.to_string())).unwrap();
    assert_eq!(same, dir);
    assert!(again.is_empty(), "{again:?}");
    // No scratch directory is left beside it.
    let left: Vec<_> = std::fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    let o = tidemark()
        .env("TIDEMARK_CACHE", CACHE)
        .args(["servers", "build", "pg", "--version", "18.5"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("no Debian suite has the source of PostgreSQL 18.5") && err.contains("18.6"),
        "{err}"
    );
}

/// The release the machine's own `postgresql` package installs (its
/// `psql`), e.g. `15.18` on bookworm; `None` without one.
fn machine_release() -> Option<String> {
    let out = std::process::Command::new("psql")
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // "psql (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
    let word = text.split_whitespace().nth(2)?;
    word.chars()
        .all(|c| c.is_ascii_digit() || c == '.')
        .then(|| word.to_string())
}

#[test]
fn the_machines_own_release_comes_from_its_own_suites_sources() {
    let _serial = serial();
    // .ci/setup installs Debian's postgresql; its release is in the
    // machine's own suite, which no newer suite carries.
    let release = machine_release().expect("psql --version names a release (bash .ci/setup)");
    let cache = std::path::Path::new(CACHE);
    let mut said = Vec::new();
    let dir = fetch_source_in(cache, &release, &mut |l| said.push(l.to_string())).unwrap();
    assert!(
        dir.ends_with(format!("src/debian/postgresql-{release}")),
        "{}",
        dir.display()
    );
    let configure = std::fs::read_to_string(dir.join("configure")).unwrap();
    assert!(configure.contains(&format!("PACKAGE_VERSION='{release}'")));
    let note = std::fs::read_to_string(dir.join(".tidemark-source")).unwrap();
    let major = release.split('.').next().unwrap();
    assert!(
        note.starts_with(&format!(
            "Debian source package postgresql-{major} {release}"
        )),
        "{note}"
    );
    // Only the sources of the own suite are listed: its packages are not
    // candidates for installs, which come from the newer suites.
    let sources = std::fs::read_to_string(cache.join("apt/parts/tidemark.sources")).unwrap();
    let own = sources.split("\n\n").nth(1).expect("a second paragraph");
    assert!(own.starts_with("Types: deb-src\n"), "{sources}");
}
