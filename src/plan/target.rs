//! Target specs: which DBMS, where its binaries come from, and which config.
//!
//! Grammar (more forms arrive with later suites and installers):
//! - `pg`, `pg@system`: a PostgreSQL server tidemark starts from installed binaries;
//! - `pg@/path/to/bin`: the same from a build or install directory;
//! - `mariadb@system`, `mysql@system`: a MariaDB / MySQL server tidemark starts
//!   (`--mysql-basedir`, else `mariadbd`/`mysqld` on PATH or in /usr/sbin);
//! - `mariadb@/path`, `mysql@/path`: the same from a basedir (release or build);
//! - `…+NAME`: the named config (`pg@system+base`, `mariadb@system+binlog`);
//! - `postgres://user[:pass]@host[:port]/db`: an external server, not started by tidemark;
//! - `mysql://user[:pass]@host[:port]/db`, `mariadb://…`: an external MySQL/MariaDB;
//! - `sqlite:PATH[+wal|+wal-full|+delete]`: a SQLite database file (no server).

use std::path::PathBuf;

use crate::server::mysql::Flavor;

/// Where a managed server's binaries come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BinSource {
    /// Found on this machine (`--pg-bindir`, pg_config, PATH, Debian dirs).
    System,
    /// A directory the user names.
    Dir(PathBuf),
}

/// A parsed target.
#[derive(Clone, Debug, PartialEq)]
pub enum TargetSpec {
    /// PostgreSQL started and stopped by tidemark.
    ManagedPostgres {
        source: BinSource,
        config: Option<String>,
    },
    /// A PostgreSQL server somebody else runs.
    ExternalPostgres { url: String },
    /// MySQL or MariaDB started and stopped by tidemark; `flavor` is the
    /// family the spec names (the binaries found must be of it).
    ManagedMysql {
        flavor: Flavor,
        source: BinSource,
        config: Option<String>,
    },
    /// A MySQL or MariaDB server somebody else runs.
    ExternalMysql { url: String },
    /// A SQLite database file, opened by the library linked into tidemark.
    Sqlite {
        path: PathBuf,
        config: Option<String>,
    },
}

/// Config names shipped for managed PostgreSQL.
pub const PG_CONFIGS: &[&str] = &["base"];

impl TargetSpec {
    /// Parses a spec; the error names the bad part and the accepted forms.
    pub fn parse(text: &str) -> Result<TargetSpec, String> {
        let t = text.trim();
        if t.starts_with("postgres://") || t.starts_with("postgresql://") {
            crate::db::postgres::PgConnectOptions::from_url(t)?;
            return Ok(TargetSpec::ExternalPostgres { url: t.to_string() });
        }
        if t.starts_with("mysql://") || t.starts_with("mariadb://") {
            crate::db::mysql::MyConnectOptions::from_url(t)?;
            return Ok(TargetSpec::ExternalMysql { url: t.to_string() });
        }
        if let Some(rest) = t.strip_prefix("sqlite:") {
            return parse_sqlite(t, rest);
        }
        let (head, config) = match t.split_once('+') {
            Some((h, c)) if !c.is_empty() => (h, Some(c.to_string())),
            Some(_) => {
                return Err(format!(
                    "target '{t}' ends with '+': name a config after it, e.g. {}+base",
                    t.trim_end_matches('+')
                ));
            }
            None => (t, None),
        };
        let (dbms, source) = head.split_once('@').unwrap_or((head, "system"));
        let flavor = match dbms {
            "pg" | "postgres" | "postgresql" => None,
            "mysql" => Some(Flavor::Mysql),
            "mariadb" => Some(Flavor::MariaDb),
            "sqlite" => {
                return Err(format!(
                    "target '{t}': a SQLite target names its file: sqlite:PATH, e.g. sqlite:./bench.db"
                ));
            }
            other => {
                return Err(format!(
                    "target '{t}': unknown DBMS '{other}': use pg@system, mariadb@system, mysql@/path/to/basedir, sqlite:PATH or a postgres:// / mysql:// URL"
                ));
            }
        };
        let source = if source == "system" {
            BinSource::System
        } else if source.starts_with('/') || source.starts_with('.') {
            BinSource::Dir(PathBuf::from(source))
        } else {
            return Err(format!(
                "target '{t}': '{source}' is neither 'system' nor a directory path: use {dbms}@system or {dbms}@/path/to/dir (installing versions by number is not available yet)"
            ));
        };
        let configs = match flavor {
            None => PG_CONFIGS,
            Some(_) => crate::server::mysql::CONFIGS,
        };
        if let Some(c) = &config
            && !configs.contains(&c.as_str())
        {
            return Err(format!(
                "target '{t}': unknown config '{c}': use one of {}",
                configs.join(", ")
            ));
        }
        Ok(match flavor {
            None => TargetSpec::ManagedPostgres { source, config },
            Some(flavor) => TargetSpec::ManagedMysql {
                flavor,
                source,
                config,
            },
        })
    }

    /// Whether tidemark runs this target's engine itself (a server it
    /// starts, or SQLite), so `-c` settings apply to it.
    pub fn is_managed(&self) -> bool {
        matches!(
            self,
            TargetSpec::ManagedPostgres { .. }
                | TargetSpec::ManagedMysql { .. }
                | TargetSpec::Sqlite { .. }
        )
    }
}

/// `sqlite:PATH[+CONFIG]`: a `+word` suffix without `/` or `.` is a config
/// name; anything else belongs to the path.
fn parse_sqlite(t: &str, rest: &str) -> Result<TargetSpec, String> {
    use crate::server::sqlite_target::CONFIGS;
    let (path, config) = match rest.rsplit_once('+') {
        Some((p, c)) if !c.contains('/') && !c.contains('.') => (p, Some(c.to_string())),
        _ => (rest, None),
    };
    if path.is_empty() {
        return Err(format!(
            "target '{t}' names no file: write sqlite:PATH, e.g. sqlite:./bench.db"
        ));
    }
    if let Some(c) = &config
        && !CONFIGS.contains(&c.as_str())
    {
        return Err(format!(
            "target '{t}': unknown SQLite config '{c}': use one of {}",
            CONFIGS.join(", ")
        ));
    }
    Ok(TargetSpec::Sqlite {
        path: PathBuf::from(path),
        config,
    })
}

/// Parses `name=value` of `-c/--set`.
pub fn parse_setting(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() => Ok((n.trim().to_string(), v.trim().to_string())),
        _ => Err(format!(
            "-c '{s}' is not name=value: write it like -c shared_buffers=1GB"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_supported_forms() {
        assert_eq!(
            TargetSpec::parse("pg").unwrap(),
            TargetSpec::ManagedPostgres {
                source: BinSource::System,
                config: None
            }
        );
        assert_eq!(
            TargetSpec::parse("pg@/opt/pg/bin+base").unwrap(),
            TargetSpec::ManagedPostgres {
                source: BinSource::Dir("/opt/pg/bin".into()),
                config: Some("base".into())
            }
        );
        assert!(matches!(
            TargetSpec::parse("postgres://u@127.0.0.1:5433/db").unwrap(),
            TargetSpec::ExternalPostgres { .. }
        ));
    }

    #[test]
    fn parses_mysql_mariadb_and_sqlite_forms() {
        assert_eq!(
            TargetSpec::parse("mariadb@system+binlog").unwrap(),
            TargetSpec::ManagedMysql {
                flavor: Flavor::MariaDb,
                source: BinSource::System,
                config: Some("binlog".into())
            }
        );
        assert_eq!(
            TargetSpec::parse("mysql@/opt/mysql-8.4").unwrap(),
            TargetSpec::ManagedMysql {
                flavor: Flavor::Mysql,
                source: BinSource::Dir("/opt/mysql-8.4".into()),
                config: None
            }
        );
        assert_eq!(
            TargetSpec::parse("mariadb").unwrap(),
            TargetSpec::ManagedMysql {
                flavor: Flavor::MariaDb,
                source: BinSource::System,
                config: None
            }
        );
        assert!(matches!(
            TargetSpec::parse("mysql://u:p@127.0.0.1:3306/db").unwrap(),
            TargetSpec::ExternalMysql { .. }
        ));
        assert!(matches!(
            TargetSpec::parse("mariadb://u@h/db?charset=utf8mb4").unwrap(),
            TargetSpec::ExternalMysql { .. }
        ));
        assert_eq!(
            TargetSpec::parse("sqlite:/tmp/a+b.db+delete").unwrap(),
            TargetSpec::Sqlite {
                path: "/tmp/a+b.db".into(),
                config: Some("delete".into())
            }
        );
        assert_eq!(
            TargetSpec::parse("sqlite:bench.db").unwrap(),
            TargetSpec::Sqlite {
                path: "bench.db".into(),
                config: None
            }
        );
        for spec in ["mariadb@system", "mysql://u@h/d", "sqlite:x.db"] {
            assert_eq!(
                TargetSpec::parse(spec).unwrap().is_managed(),
                !spec.contains("://")
            );
        }
    }

    #[test]
    fn errors_name_the_bad_part() {
        for (spec, want) in [
            ("oracle@system", "unknown DBMS 'oracle'"),
            ("pg@17.10", "'17.10' is neither"),
            ("pg@system+cx99", "unknown config 'cx99'"),
            ("pg+", "ends with '+'"),
            ("mariadb@system+z99", "unknown config 'z99'"),
            ("sqlite:x.db+wall", "unknown SQLite config 'wall'"),
            ("sqlite:", "names no file"),
            ("sqlite@system", "names its file"),
            ("mysql://u@h:0/d", "port"),
        ] {
            let e = TargetSpec::parse(spec).unwrap_err();
            assert!(e.contains(want), "{e}");
            assert!(!e.contains('\n'));
        }
        assert!(parse_setting("a=b").is_ok());
        assert!(parse_setting("=b").is_err());
    }
}
