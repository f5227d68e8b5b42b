//! SQLite as a target: no server, a database file ([`SqliteTarget`]) and the
//! PRAGMAs every connection runs, composed from the shipped files in
//! `config/sqlite/` (base, the profile's cache sizes, the named journal
//! config) and `-c name=value` overrides.

mod target;

use std::path::Path;

use anyhow::bail;

pub use self::target::SqliteTarget;
use super::size_file;

/// Named configs (`sqlite:PATH+NAME`); `wal` is the default.
pub const CONFIGS: &[&str] = &["wal", "wal-full", "delete"];
/// The config a bare `sqlite:PATH` gets.
pub const DEFAULT_CONFIG: &str = "wal";

const BASE: &str = include_str!("../../../config/sqlite/base.conf");
const QUICK: &str = include_str!("../../../config/sqlite/quick.conf");
const SMALL: &str = include_str!("../../../config/sqlite/small.conf");
const LARGE: &str = include_str!("../../../config/sqlite/large.conf");
const WAL: &str = include_str!("../../../config/sqlite/wal.conf");
const WAL_FULL: &str = include_str!("../../../config/sqlite/wal-full.conf");
const DELETE: &str = include_str!("../../../config/sqlite/delete.conf");

/// The shipped PRAGMA text for `profile` and `config` (`None` if unknown).
pub fn config_text(profile: &str, config: &str) -> Option<String> {
    let sizes = size_file(profile, [QUICK, SMALL, LARGE])?;
    let named = match config {
        "wal" => WAL,
        "wal-full" => WAL_FULL,
        "delete" => DELETE,
        _ => return None,
    };
    Some(format!(
        "{}\n\n{}\n\n{}\n",
        BASE.trim_end(),
        sizes.trim_end(),
        named.trim_end()
    ))
}

/// The `name = value` lines of a config text followed by the overrides;
/// a later line for the same name replaces the earlier one in place.
pub fn pragmas(text: &str, overrides: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()));
    for (name, value) in lines.chain(overrides.iter().cloned()) {
        match out.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(&name)) {
            Some(slot) => slot.1 = value,
            None => out.push((name, value)),
        }
    }
    out
}

/// Checks what can be checked before anything is written: the directory
/// exists, override names are PRAGMAs this SQLite knows and their values
/// are plain words or numbers.
pub fn check(path: &Path, overrides: &[(String, String)]) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "SQLite database {}: directory {} does not exist: create it, or name a file in an \
             existing directory",
            path.display(),
            dir.display()
        );
    }
    if path.is_dir() {
        bail!(
            "SQLite database {} is a directory: name a file, e.g. sqlite:{}/bench.db",
            path.display(),
            path.display()
        );
    }
    let conn = rusqlite::Connection::open_in_memory()?;
    let mut stmt = conn.prepare("SELECT name FROM pragma_pragma_list")?;
    let known: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<_, _>>()?;
    for (name, value) in overrides {
        if !known.iter().any(|k| k.eq_ignore_ascii_case(name)) {
            bail!(
                "unknown SQLite PRAGMA '{name}' (from -c {name}={value}): see `PRAGMA \
                 pragma_list` for the names this SQLite {} knows",
                rusqlite::version()
            );
        }
        let plain = !value.is_empty()
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !plain {
            bail!(
                "-c {name}={value}: a SQLite PRAGMA value must be a word or a number (e.g. -c \
                 cache_size=-262144)"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_compose_and_overrides_replace() {
        let t = config_text("quick", "wal").unwrap();
        let p = pragmas(&t, &[("synchronous".into(), "OFF".into())]);
        let get = |n: &str| p.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("journal_mode"), Some("WAL"));
        assert_eq!(get("synchronous"), Some("OFF"));
        assert_eq!(get("cache_size"), Some("-262144"));
        assert_eq!(p.iter().filter(|(k, _)| k == "synchronous").count(), 1);
        let d = pragmas(&config_text("large", "delete").unwrap(), &[]);
        assert!(d.contains(&("journal_mode".into(), "DELETE".into())));
        assert!(config_text("quick", "nope").is_none());
        for c in CONFIGS {
            assert!(config_text("small", c).is_some());
        }
    }

    #[test]
    fn checks_before_anything_is_written() {
        let e = check(Path::new("/no/such/dir/x.db"), &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("directory /no/such/dir does not exist"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.db");
        assert!(check(&db, &[("cache_size".into(), "-1000".into())]).is_ok());
        let e = check(&db, &[("cache_sise".into(), "1".into())]).unwrap_err();
        assert!(
            e.to_string().contains("unknown SQLite PRAGMA 'cache_sise'"),
            "{e}"
        );
        assert!(check(&db, &[("cache_size".into(), "1; DROP".into())]).is_err());
        assert!(check(dir.path(), &[]).is_err());
        assert!(!db.exists(), "checking creates nothing");
    }
}
