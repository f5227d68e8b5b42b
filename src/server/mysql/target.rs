//! MySQL and MariaDB as a [`TargetServer`](crate::server::TargetServer)
//! ([`MysqlTarget`]): a managed server tidemark started, or an external one
//! reached by a `mysql://` / `mariadb://` URL. The parts both kinds share
//! are in [`crate::server::managed`].

use anyhow::Context as _;

use super::{Flavor, MyFamily, describe_connection, non_default_variables};
use crate::db::mysql::{MyConn, MyConnectOptions};
use crate::server::TargetInfo;
use crate::server::managed::ServerTarget;

/// `(major, minor)` of a version number, `(0, 0)` parts when they do not
/// parse.
fn major_minor(number: &str) -> (u32, u32) {
    let mut it = number.split('.').map(|p| p.parse().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// A MySQL or MariaDB target.
pub type MysqlTarget = ServerTarget<MyFamily>;

impl MysqlTarget {
    /// Connects to an external server and records what it is; `label_for`
    /// makes the label from the family and the version number.
    pub fn external(
        opts: MyConnectOptions,
        label_for: impl Fn(Flavor, &str) -> String,
    ) -> anyhow::Result<Self> {
        let mut conn = MyConn::connect(&opts)
            .with_context(|| format!("cannot connect to {}", opts.display_url()))?;
        let flavor = if conn.is_mariadb() {
            Flavor::MariaDb
        } else {
            Flavor::Mysql
        };
        let number: String = conn
            .server_version()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        // performance_schema may be off on a MySQL server we do not own:
        // then the variables are not recorded rather than failing the run.
        let (settings, note) =
            match non_default_variables(&mut conn, flavor, major_minor(&number), None) {
                Ok(s) => (s, None),
                Err(e) => (
                    Vec::new(),
                    Some(format!("non-default variables unknown: {e}")),
                ),
            };
        let mut extra = describe_connection(&mut conn)?;
        let version = extra["version"].as_str().unwrap_or_default().to_string();
        extra["flavor"] = serde_json::json!(flavor);
        extra["url"] = serde_json::json!(opts.display_url());
        if let Some(n) = note {
            extra["note"] = serde_json::json!(n);
        }
        // The rest as for any server tidemark did not start: no config.
        let info = TargetInfo {
            spec: opts.display_url(),
            label: label_for(flavor, &number),
            dbms: flavor.as_str().to_string(),
            version,
            version_number: number,
            settings,
            extra,
            ..TargetInfo::default()
        };
        Ok(MysqlTarget::reached(opts, info))
    }
}
