//! SQLite as a [`TargetServer`]: no server, a database file opened with
//! the PRAGMAs [`super::pragmas`] composed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;

use crate::db::sqlite::{DEFAULT_BUSY_TIMEOUT, SqliteConn, SqliteConnector, SqliteOptions};
use crate::db::{Conn, Connector, Dialect};
use crate::server::{TargetInfo, TargetServer};

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
