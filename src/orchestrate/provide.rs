//! Per target kind: what is checked before any server starts, and how the
//! server is provided (started, or reached) as a [`TargetServer`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use crate::db::postgres::{PgConn, PgConnectOptions};
use crate::plan::target::BinSource;
use crate::plan::{Plan, TargetPlan, TargetSpec};
use crate::server::TargetServer;
use crate::server::pg_target::PostgresTarget;
use crate::server::postgres::{ManagedPgOptions, ManagedPostgres, PgBinaries, find_bindir};
use crate::workload::sysbench::load;

/// A target after validation: what is needed to provide its server.
pub enum Provider {
    ManagedPostgres(PgBinaries),
    ExternalPostgres(PgConnectOptions),
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
                    if plan.suite.runs_sysbench() {
                        load::refuse_foreign_tables(&mut conn)?;
                    }
                    if plan.suite.runs_ibench() {
                        crate::workload::ibench::schema::refuse_foreign_tables(&mut conn)?;
                    }
                }
                out.push(Provider::ExternalPostgres(opts));
            }
        }
    }
    Ok(out)
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
                TargetSpec::ExternalPostgres { .. } => None,
            }
            .unwrap_or_else(|| "base".to_string());
            let base_config = crate::server::postgres::base_config(plan.profile.server_size())
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
