//! Per target kind: what is checked before any server starts, and how the
//! server is provided (started, or reached) as a [`TargetServer`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use crate::db::Conn as _;
use crate::db::mysql::{MyConn, MyConnectOptions};
use crate::db::postgres::{PgConn, PgConnectOptions};
use crate::plan::target::BinSource;
use crate::plan::{Plan, TargetPlan, TargetSpec};
use crate::server::TargetServer;
use crate::server::mysql::{ManagedMyOptions, ManagedMysql, MyBinaries, find_binaries};
use crate::server::mysql_target::MysqlTarget;
use crate::server::pg_target::PostgresTarget;
use crate::server::postgres::{ManagedPgOptions, ManagedPostgres, PgBinaries, find_bindir};
use crate::server::sqlite_target::{self, SqliteTarget};
use crate::workload::sysbench::load;

/// A target after validation: what is needed to provide its server.
pub enum Provider {
    ManagedPostgres(PgBinaries),
    ExternalPostgres(PgConnectOptions),
    ManagedMysql(MyBinaries),
    ExternalMysql(MyConnectOptions),
    /// A SQLite file with its config name, config text and PRAGMAs.
    Sqlite {
        path: PathBuf,
        config: String,
        text: String,
        pragmas: Vec<(String, String)>,
    },
}

/// Checks everything that can be checked before a server starts: binaries,
/// the port, external servers' reachability and their existing tables.
pub fn validate(plan: &Plan) -> anyhow::Result<Vec<Provider>> {
    if let Some(port) = plan.port
        && std::net::TcpListener::bind(("127.0.0.1", port)).is_err()
    {
        anyhow::bail!(
            "port {port} on 127.0.0.1 is already in use: pass another --port, or omit it to pick a free one"
        );
    }
    let mut out = Vec::new();
    for t in &plan.targets {
        match &t.spec {
            TargetSpec::ManagedPostgres { source, .. } => {
                let dir = match source {
                    BinSource::Dir(d) => Some(d.as_path()),
                    BinSource::System => plan.pg_bindir.as_deref(),
                };
                out.push(Provider::ManagedPostgres(find_bindir(dir)?));
            }
            TargetSpec::ExternalPostgres { url } => {
                let opts = PgConnectOptions::from_url(url).map_err(anyhow::Error::msg)?;
                let mut conn = PgConn::connect(&opts).map_err(|e| {
                    anyhow::anyhow!(
                        "cannot connect to {}: {e}: check the URL and that the server is running",
                        opts.display_url()
                    )
                })?;
                if plan.existing == load::ExistingTables::Refuse {
                    load::refuse_foreign_tables(&mut conn)?;
                }
                out.push(Provider::ExternalPostgres(opts));
            }
            TargetSpec::ManagedMysql { flavor, source, .. } => {
                let dir = match source {
                    BinSource::Dir(d) => Some(d.as_path()),
                    BinSource::System => plan.mysql_basedir.as_deref(),
                };
                let bins = find_binaries(dir, Some(*flavor))?;
                let config = match &t.spec {
                    TargetSpec::ManagedMysql {
                        config: Some(c), ..
                    } => c.as_str(),
                    _ => "base",
                };
                crate::server::mysql::check_settings(
                    &bins,
                    plan.profile.as_str(),
                    config,
                    &t.settings,
                )?;
                out.push(Provider::ManagedMysql(bins));
            }
            TargetSpec::ExternalMysql { url } => {
                out.push(Provider::ExternalMysql(validate_external_mysql(plan, url)?));
            }
            TargetSpec::Sqlite { path, config } => {
                out.push(validate_sqlite(plan, t, path, config.as_deref())?);
            }
        }
    }
    Ok(out)
}

/// Parses the URL, reaches the server, and refuses foreign sbtest tables.
fn validate_external_mysql(plan: &Plan, url: &str) -> anyhow::Result<MyConnectOptions> {
    let mut opts = MyConnectOptions::from_url(url).map_err(anyhow::Error::msg)?;
    if !url.contains("charset=") {
        opts.charset = plan.mysql_charset.clone();
    }
    if opts.dbname.is_empty() {
        anyhow::bail!(
            "{} names no database: add one, e.g. {}tidemark",
            opts.display_url(),
            opts.display_url()
        );
    }
    let mut conn = MyConn::connect_timeout(&opts, Duration::from_secs(10)).map_err(|e| {
        let hint = if e.code == "1045" {
            "check the user and password in the URL"
        } else {
            "check the URL and that the server is running"
        };
        anyhow::anyhow!("cannot connect to {}: {e}: {hint}", opts.display_url())
    })?;
    if plan.existing == load::ExistingTables::Refuse {
        load::refuse_foreign_tables(&mut conn)?;
    }
    Ok(opts)
}

/// Checks the file's directory, the `-c` PRAGMAs, and an existing file's
/// tables, without creating anything.
fn validate_sqlite(
    plan: &Plan,
    t: &TargetPlan,
    path: &Path,
    config: Option<&str>,
) -> anyhow::Result<Provider> {
    sqlite_target::check(path, &t.settings)?;
    let config = config.unwrap_or(sqlite_target::DEFAULT_CONFIG).to_string();
    let text = sqlite_target::config_text(plan.profile.as_str(), &config)
        .context("no shipped SQLite config for this profile")?;
    let pragmas = sqlite_target::pragmas(&text, &t.settings);
    if path.exists() {
        let opts = crate::db::sqlite::SqliteOptions {
            path: path.to_path_buf(),
            pragmas: Vec::new(),
            busy_timeout: crate::db::sqlite::DEFAULT_BUSY_TIMEOUT,
        };
        let mut conn = crate::db::sqlite::SqliteConn::open(&opts, Default::default())?;
        conn.query_text("SELECT count(*) FROM sqlite_master")
            .map_err(|e| anyhow::anyhow!("{} is not a SQLite database: {e}", path.display()))?;
        if plan.existing == load::ExistingTables::Refuse {
            load::refuse_foreign_tables(&mut conn)?;
        }
    }
    Ok(Provider::Sqlite {
        path: path.to_path_buf(),
        config,
        text,
        pragmas,
    })
}

/// Label in the seeds' style: DBMS + version digits + config (`pg1518.base`).
pub fn label_for(prefix: &str, version_number: &str, config: &str) -> String {
    let digits: String = version_number
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .next()
        .unwrap_or("")
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    format!("{prefix}{digits}.{config}")
}

/// Where a managed server's files go: under the results dir, one folder per
/// run and target; the data dir is removed after the run, logs stay.
fn server_dir(results: &Path, run_id: i64, pos: u32, name: &str) -> PathBuf {
    let abs = std::path::absolute(results).unwrap_or_else(|_| results.to_path_buf());
    abs.join("servers")
        .join(format!("run{run_id}-t{pos}-{name}"))
}

/// Starts (or reaches) the target's server.
pub fn provide(
    plan: &Plan,
    run_id: i64,
    pos: u32,
    target: &TargetPlan,
    provider: Provider,
) -> anyhow::Result<Box<dyn TargetServer>> {
    match provider {
        Provider::ManagedPostgres(bins) => {
            let config = match &target.spec {
                TargetSpec::ManagedPostgres { config, .. } => config.clone(),
                _ => None,
            }
            .unwrap_or_else(|| "base".to_string());
            let base_config = crate::server::postgres::base_config(plan.profile.as_str())
                .context("no shipped PostgreSQL config for this profile")?;
            let dir = server_dir(
                &plan.results_dir,
                run_id,
                pos,
                &format!("pg{}", bins.version),
            );
            let server = ManagedPostgres::start(ManagedPgOptions {
                bindir: bins.clone(),
                datadir: dir.join("data"),
                port: plan.port,
                config_name: config.clone(),
                base_config,
                overrides: target.settings.clone(),
                dbname: "tidemark".to_string(),
                start_timeout: Duration::from_secs(120),
            })?;
            let label = label_for("pg", &bins.version, &config);
            Ok(Box::new(PostgresTarget::managed(
                server,
                &target.spec_text,
                &label,
            )?))
        }
        Provider::ExternalPostgres(opts) => Ok(Box::new(PostgresTarget::external(opts, |v| {
            label_for("pg", v, "external")
        })?)),
        Provider::ManagedMysql(bins) => {
            let config = match &target.spec {
                TargetSpec::ManagedMysql { config, .. } => config.clone(),
                _ => None,
            }
            .unwrap_or_else(|| "base".to_string());
            let prefix = bins.flavor.label_prefix();
            let dir = server_dir(
                &plan.results_dir,
                run_id,
                pos,
                &format!("{prefix}{}", bins.version),
            );
            let mut opts = ManagedMyOptions::for_profile(
                bins.clone(),
                dir.join("data"),
                plan.profile.as_str(),
                &config,
            )?;
            opts.port = plan.port;
            opts.overrides = target.settings.clone();
            opts.charset = plan.mysql_charset.clone();
            let server = ManagedMysql::start(opts)?;
            let label = label_for(prefix, &bins.version, &config);
            Ok(Box::new(MysqlTarget::managed(
                server,
                &target.spec_text,
                &label,
            )?))
        }
        Provider::ExternalMysql(opts) => Ok(Box::new(MysqlTarget::external(opts, |f, v| {
            label_for(f.label_prefix(), v, "external")
        })?)),
        Provider::Sqlite {
            path,
            config,
            text,
            pragmas,
        } => Ok(Box::new(SqliteTarget::open(
            &path,
            &target.spec_text,
            |v| label_for("sqlite", v, &config),
            &config,
            text,
            pragmas,
        )?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_follow_the_seeds_style() {
        assert_eq!(label_for("pg", "15.18", "base"), "pg1518.base");
        assert_eq!(label_for("pg", "18beta1", "cx10b"), "pg18.cx10b");
        assert_eq!(label_for("pg", "17.10 (Debian 17.10-1)", "x"), "pg1710.x");
    }
}
