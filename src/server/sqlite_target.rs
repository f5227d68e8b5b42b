//! SQLite as a [`TargetServer`]: no server, a database file and the PRAGMAs
//! every connection runs, composed from the shipped files in
//! `config/sqlite/` (base, the profile's cache sizes, the named journal
//! config) and `-c name=value` overrides.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};

use super::{TargetInfo, TargetServer};
use crate::db::sqlite::{DEFAULT_BUSY_TIMEOUT, SqliteConn, SqliteConnector, SqliteOptions};
use crate::db::{Conn, Connector, Dialect};

/// Named configs (`sqlite:PATH+NAME`); `wal` is the default.
pub const CONFIGS: &[&str] = &["wal", "wal-full", "delete"];
/// The config a bare `sqlite:PATH` gets.
pub const DEFAULT_CONFIG: &str = "wal";

const BASE: &str = include_str!("../../config/sqlite/base.conf");
const QUICK: &str = include_str!("../../config/sqlite/quick.conf");
const SMALL: &str = include_str!("../../config/sqlite/small.conf");
const LARGE: &str = include_str!("../../config/sqlite/large.conf");
const WAL: &str = include_str!("../../config/sqlite/wal.conf");
const WAL_FULL: &str = include_str!("../../config/sqlite/wal-full.conf");
const DELETE: &str = include_str!("../../config/sqlite/delete.conf");

/// The shipped PRAGMA text for `profile` and `config` (`None` if unknown).
pub fn config_text(profile: &str, config: &str) -> Option<String> {
    let sizes = match profile {
        "quick" => QUICK,
        "small" => SMALL,
        "large" => LARGE,
        _ => return None,
    };
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

/// A SQLite database file as a benchmark target.
pub struct SqliteTarget {
    connector: SqliteConnector,
    info: TargetInfo,
    /// Whether tidemark created the file (then it removes it after the run).
    created: bool,
}

impl SqliteTarget {
    /// Opens (creating if needed) the database with `pragmas` and records
    /// what it is. `config_text` is stored as the target's configuration.
    pub fn open(
        path: &Path,
        spec: &str,
        label_for: impl Fn(&str) -> String,
        config_name: &str,
        config_text: String,
        pragmas: Vec<(String, String)>,
    ) -> anyhow::Result<Self> {
        let created = !path.exists();
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let connector = SqliteConnector::new(SqliteOptions {
            path: path.clone(),
            pragmas: pragmas.clone(),
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
        });
        let mut conn = SqliteConn::open(&connector.opts, connector.busy.clone())
            .with_context(|| format!("SQLite database {}", path.display()))?;
        let mut settings = Vec::new();
        for (name, _) in &pragmas {
            let value = conn
                .query_text(&format!("PRAGMA {name}"))?
                .into_iter()
                .next()
                .and_then(|r| r.into_iter().next().flatten())
                .unwrap_or_default();
            settings.push((name.to_ascii_lowercase(), value));
        }
        let version = SqliteConn::library_version().to_string();
        let info = TargetInfo {
            spec: spec.to_string(),
            label: label_for(&version),
            dbms: "sqlite".to_string(),
            version: format!("SQLite {version}"),
            version_number: version,
            config_name: Some(config_name.to_string()),
            config_text,
            settings,
            managed: true,
            extra: serde_json::json!({
                "path": path,
                "created_by_tidemark": created,
                "busy_timeout_ms": DEFAULT_BUSY_TIMEOUT.as_millis() as u64,
            }),
        };
        Ok(SqliteTarget {
            connector,
            info,
            created,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.connector.path()
    }
}

impl TargetServer for SqliteTarget {
    fn info(&self) -> &TargetInfo {
        &self.info
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn connector(&self) -> Arc<dyn Connector> {
        Arc::new(self.connector.clone())
    }

    fn server_pid(&self) -> Option<u32> {
        None
    }

    fn data_dir(&self) -> Option<PathBuf> {
        self.path().parent().map(Path::to_path_buf)
    }

    fn client_counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("busy_waits", self.connector.busy.waits()),
            ("busy_wait_us", self.connector.busy.wait_us()),
        ]
    }

    /// Removes the database file (and its WAL and shared-memory files) when
    /// tidemark created it and `keep_data` is false; a file that existed
    /// before stays.
    fn stop(&mut self, keep_data: bool) -> anyhow::Result<()> {
        if !self.created || keep_data {
            return Ok(());
        }
        let path = self.path().to_path_buf();
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut name = path.clone().into_os_string();
            name.push(suffix);
            match std::fs::remove_file(&name) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(e).with_context(|| format!("removing {}", path.display()));
                }
            }
        }
        Ok(())
    }
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
