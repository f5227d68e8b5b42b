//! Target specs: which DBMS, where its binaries come from, and which config.
//!
//! Grammar (more forms arrive with later suites and installers):
//! - `pg`, `pg@system`: a PostgreSQL server tidemark starts from installed binaries;
//! - `pg@/path/to/bin`: the same from a build or install directory;
//! - `…+NAME`: the named config (`pg@system+base`);
//! - `postgres://user[:pass]@host[:port]/db`: an external server, not started by tidemark.

use std::path::PathBuf;

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
        match dbms {
            "pg" | "postgres" | "postgresql" => {}
            "mysql" | "mariadb" | "sqlite" => {
                return Err(format!(
                    "target '{t}': {dbms} targets are not supported by this build yet: use pg@system or a postgres:// URL"
                ));
            }
            other => {
                return Err(format!(
                    "target '{t}': unknown DBMS '{other}': use pg@system, pg@/path/to/bin or postgres://user@host:port/db"
                ));
            }
        }
        let source = if source == "system" {
            BinSource::System
        } else if source.starts_with('/') || source.starts_with('.') {
            BinSource::Dir(PathBuf::from(source))
        } else {
            return Err(format!(
                "target '{t}': '{source}' is neither 'system' nor a directory path: use pg@system or pg@/path/to/bin (installing versions by number is not available yet)"
            ));
        };
        if let Some(c) = &config
            && !PG_CONFIGS.contains(&c.as_str())
        {
            return Err(format!(
                "target '{t}': unknown config '{c}': use one of {}",
                PG_CONFIGS.join(", ")
            ));
        }
        Ok(TargetSpec::ManagedPostgres { source, config })
    }

    /// Whether tidemark starts this target's server.
    pub fn is_managed(&self) -> bool {
        matches!(self, TargetSpec::ManagedPostgres { .. })
    }
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
    fn errors_name_the_bad_part() {
        for (spec, want) in [
            ("oracle@system", "unknown DBMS 'oracle'"),
            ("pg@17.10", "'17.10' is neither"),
            ("pg@system+cx99", "unknown config 'cx99'"),
            ("pg+", "ends with '+'"),
        ] {
            let e = TargetSpec::parse(spec).unwrap_err();
            assert!(e.contains(want), "{e}");
            assert!(!e.contains('\n'));
        }
        assert!(parse_setting("a=b").is_ok());
        assert!(parse_setting("=b").is_err());
    }
}
