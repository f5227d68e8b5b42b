//! PostgreSQL as a [`TargetServer`]: a managed server tidemark started, or
//! an external one reached by URL.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;

use super::{ManagedPostgres, NON_DEFAULT_SETTINGS};
use crate::db::postgres::{PgConn, PgConnectOptions, PgConnector};
use crate::db::{Conn, Connector, Dialect, name_value_pairs};
use crate::server::lifecycle::stop_and_clean;
use crate::server::{TargetInfo, TargetServer};

/// A PostgreSQL target.
pub struct PostgresTarget {
    managed: Option<ManagedPostgres>,
    opts: PgConnectOptions,
    info: TargetInfo,
}

impl PostgresTarget {
    /// Wraps a started managed server.
    pub fn managed(server: ManagedPostgres, spec: &str, label: &str) -> anyhow::Result<Self> {
        let info = server.info(spec, label)?;
        Ok(PostgresTarget {
            opts: server.connect_options(),
            managed: Some(server),
            info,
        })
    }

    /// Connects to an external server and records what it is.
    pub fn external(
        opts: PgConnectOptions,
        label_for: impl Fn(&str) -> String,
    ) -> anyhow::Result<Self> {
        let mut conn = PgConn::connect(&opts)
            .with_context(|| format!("cannot connect to {}", opts.display_url()))?;
        let version = first_value(&mut conn, "SELECT version()")?;
        let number = first_value(&mut conn, "SHOW server_version")?;
        let settings = name_value_pairs(conn.query_text(NON_DEFAULT_SETTINGS)?);
        let info = TargetInfo {
            spec: opts.display_url(),
            label: label_for(&number),
            dbms: "postgres".into(),
            version,
            version_number: number,
            config_name: None,
            config_text: String::new(),
            settings,
            managed: false,
            extra: serde_json::json!({ "url": opts.display_url() }),
        };
        Ok(PostgresTarget {
            managed: None,
            opts,
            info,
        })
    }
}

fn first_value(conn: &mut dyn Conn, sql: &str) -> anyhow::Result<String> {
    Ok(crate::db::first_value(conn.query_text(sql)?).unwrap_or_default())
}

impl TargetServer for PostgresTarget {
    fn info(&self) -> &TargetInfo {
        &self.info
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn connector(&self) -> Arc<dyn Connector> {
        Arc::new(PgConnector(self.opts.clone()))
    }

    fn server_pid(&self) -> Option<u32> {
        self.managed.as_ref().map(ManagedPostgres::pid)
    }

    fn data_dir(&self) -> Option<PathBuf> {
        self.managed.as_ref().map(|m| m.datadir().to_path_buf())
    }

    fn stop(&mut self, keep_data: bool) -> anyhow::Result<()> {
        let Some(mut server) = self.managed.take() else {
            return Ok(());
        };
        stop_and_clean(server.datadir().to_path_buf(), keep_data, || server.stop())
    }
}
