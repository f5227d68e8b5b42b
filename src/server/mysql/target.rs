//! MySQL and MariaDB as a [`TargetServer`]: a managed server tidemark
//! started, or an external one reached by a `mysql://` / `mariadb://` URL.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;

use super::{Flavor, ManagedMysql, describe_connection, non_default_variables};
use crate::db::mysql::{MyConn, MyConnectOptions, MyConnector};
use crate::db::{Connector, Dialect};
use crate::server::lifecycle::stop_and_clean;
use crate::server::{TargetInfo, TargetServer};

/// A MySQL or MariaDB target.
pub struct MysqlTarget {
    managed: Option<ManagedMysql>,
    opts: MyConnectOptions,
    info: TargetInfo,
}

impl MysqlTarget {
    /// Wraps a started managed server.
    pub fn managed(server: ManagedMysql, spec: &str, label: &str) -> anyhow::Result<Self> {
        let info = server.info(spec, label)?;
        Ok(MysqlTarget {
            opts: server.connect_options(),
            managed: Some(server),
            info,
        })
    }

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
        let (settings, note) = match non_default_variables(&mut conn, flavor) {
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
        let info = TargetInfo {
            spec: opts.display_url(),
            label: label_for(flavor, &number),
            dbms: flavor.as_str().to_string(),
            version,
            version_number: number,
            config_name: None,
            config_text: String::new(),
            settings,
            managed: false,
            extra,
        };
        Ok(MysqlTarget {
            managed: None,
            opts,
            info,
        })
    }
}

impl TargetServer for MysqlTarget {
    fn info(&self) -> &TargetInfo {
        &self.info
    }

    fn dialect(&self) -> Dialect {
        Dialect::Mysql
    }

    fn connector(&self) -> Arc<dyn Connector> {
        Arc::new(MyConnector(self.opts.clone()))
    }

    fn server_pid(&self) -> Option<u32> {
        self.managed.as_ref().map(ManagedMysql::pid)
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
