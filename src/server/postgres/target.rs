//! PostgreSQL as a [`TargetServer`](crate::server::TargetServer)
//! ([`PostgresTarget`]): a managed server tidemark started, or an external
//! one reached by URL. The parts both kinds share are in
//! [`crate::server::managed`].

use anyhow::Context as _;

use super::{NON_DEFAULT_SETTINGS, PgFamily};
use crate::db::postgres::{PgConn, PgConnectOptions};
use crate::db::{Conn, name_value_pairs};
use crate::server::TargetInfo;
use crate::server::managed::ServerTarget;

/// A PostgreSQL target.
pub type PostgresTarget = ServerTarget<PgFamily>;

impl PostgresTarget {
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
        // The rest as for any server tidemark did not start: no config.
        let info = TargetInfo {
            spec: opts.display_url(),
            label: label_for(&number),
            dbms: "postgres".into(),
            version,
            version_number: number,
            settings,
            extra: serde_json::json!({ "url": opts.display_url() }),
            ..TargetInfo::default()
        };
        Ok(PostgresTarget::reached(opts, info))
    }
}

fn first_value(conn: &mut dyn Conn, sql: &str) -> anyhow::Result<String> {
    Ok(crate::db::first_value(conn.query_text(sql)?).unwrap_or_default())
}
