//! The PostgreSQL source tree `.ci/setup` unpacks into the shared test
//! cache, and tidemark run with that cache (builds through ccache when it
//! is installed): shared by the source-build tests (pg_build, ci_recipe).

use std::path::PathBuf;
use std::process::Command;

use super::tidemark;

/// The install cache every test shares.
pub const CACHE: &str = "/tmp/tidemark-test-cache";

/// tidemark with the shared cache; builds go through ccache when it is
/// installed, so the patched build (one comment apart) and a fresh
/// machine's second build cost little.
pub fn tm() -> Command {
    let mut cmd = tidemark();
    cmd.env("TIDEMARK_CACHE", CACHE);
    let ccache = Command::new("ccache").arg("--version").output();
    if ccache.is_ok_and(|o| o.status.success()) {
        cmd.env("CC", "ccache gcc")
            .env("CCACHE_DIR", PathBuf::from(CACHE).join("ccache"));
    }
    cmd
}

/// The source tree to build: `TIDEMARK_PG_SRC`, else the newest
/// `postgresql-*` tree `.ci/run` unpacked.
pub fn source_tree() -> PathBuf {
    if let Some(dir) = std::env::var_os("TIDEMARK_PG_SRC") {
        return dir.into();
    }
    let root = PathBuf::from(CACHE).join("src");
    let mut trees: Vec<PathBuf> = std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("postgresql-"))
                && p.join("configure").is_file()
        })
        .collect();
    trees.sort();
    trees.pop().unwrap_or_else(|| {
        panic!(
            "no PostgreSQL source tree in {}: run .ci/run (it unpacks `apt-get source \
             postgresql-15` there) or set TIDEMARK_PG_SRC",
            root.display()
        )
    })
}

pub fn source_version(src: &std::path::Path) -> String {
    let text = std::fs::read_to_string(src.join("configure")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("PACKAGE_VERSION='"))
        .and_then(|v| v.strip_suffix('\''))
        .expect("configure names its version")
        .to_string()
}
