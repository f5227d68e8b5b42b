//! Target specs: which DBMS, where its binaries come from, which config, and
//! settings for this target alone.
//!
//! Grammar (docs/targets.md has it with examples):
//! ```text
//! target  = spec { ":" NAME "=" VALUE }      settings for this target only
//! spec    = DBMS [ "@" source ] [ "+" config ]     DBMS: pg, mariadb, mysql
//!         | "postgres://user[:pass]@host[:port]/db"   (external; no settings)
//!         | ("mysql" | "mariadb") "://user[:pass]@host[:port]/db"
//!         | "sqlite:" PATH [ "+" ("wal" | "wal-full" | "delete") ]
//! source  = "system"                          installed binaries (the default)
//!         | VERSION                           17.10, 17 (newest 17.x), 9.6.24:
//!                                             the cache's build, installed if missing (pg only)
//!         | VERSION "_" BUILD                 15.18_o2nofp: a source build in the cache
//!                                             (`tidemark servers build`; pg only)
//!         | PATH                              starts with / or . : a bin/ directory
//!                                             (pg) or a basedir (mariadb, mysql)
//! config  = NAME                              a shipped config (cx10b; binlog, z12a, bl1_sync1_dw1)
//!         | PATH                              a postgresql.conf fragment (has / or ends in .conf; pg only)
//! ```
//! A setting starts at a `:` followed by `name=`, so values may hold other
//! colons (`log_line_prefix=%m:%p`).

use std::path::PathBuf;

use crate::server::mysql::Flavor;
use crate::server::postgres::install::VersionReq;
use crate::server::postgres::named::{is_config_path, named_config, named_config_names};

/// Where a managed server's binaries come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BinSource {
    /// Found on this machine (`--pg-bindir`, pg_config, PATH, Debian dirs).
    System,
    /// A directory the user names.
    Dir(PathBuf),
    /// A release from the install cache, installed through a package
    /// client when missing (`17.10`, `17`).
    Version(String),
    /// A source build in the install cache (`15.18_o2nofp`), made by
    /// `tidemark servers build`.
    Build(String),
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

impl TargetSpec {
    /// Parses a spec (without `:name=value` settings; see
    /// [`split_target_settings`]); the error names the bad part and the
    /// accepted forms.
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
                    "target '{t}': unknown DBMS '{other}': use pg@system, pg@17.10, mariadb@system, mysql@/path/to/basedir, sqlite:PATH or a postgres:// / mysql:// URL"
                ));
            }
        };
        let source = if source == "system" {
            BinSource::System
        } else if source.starts_with('/') || source.starts_with('.') {
            BinSource::Dir(PathBuf::from(source))
        } else if VersionReq::parse(source).is_some() {
            BinSource::Version(source.to_string())
        } else if flavor.is_none() && crate::server::postgres::build::is_build_name(source) {
            BinSource::Build(source.to_string())
        } else if let Some((bins, config)) = source.split_once(':')
            && !config.is_empty()
            && !config.contains('=')
        {
            // `pg@system:cx10b`: a config written like a setting.
            return Err(format!(
                "target '{t}': a config follows a '+' and a setting is ':name=value': write {dbms}@{bins}+{config}"
            ));
        } else {
            return Err(format!(
                "target '{t}': '{source}' is neither 'system', a version like 17.10, nor a directory path: use {dbms}@system, pg@17.10 or {dbms}@/path/to/dir"
            ));
        };
        if let Some(c) = &config
            && !config_known(flavor, c)
        {
            let names = match flavor {
                None => named_config_names(),
                Some(_) => crate::server::mysql::my_config_names(),
            };
            return Err(format!(
                "target '{t}': unknown config '{c}'{}: use one of {}{}",
                crate::util::suggest::did_you_mean(c, names.iter().copied()),
                names.join(", "),
                if flavor.is_none() {
                    " or a file path ending in .conf"
                } else {
                    ""
                }
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

    /// Whether tidemark starts this target's server (a managed PostgreSQL,
    /// MariaDB or MySQL; not SQLite, which runs inside tidemark, nor an
    /// external server).
    pub fn starts_server(&self) -> bool {
        matches!(
            self,
            TargetSpec::ManagedPostgres { .. } | TargetSpec::ManagedMysql { .. }
        )
    }

    /// The config named after `+`, if any.
    pub fn config(&self) -> Option<&str> {
        match self {
            TargetSpec::ManagedPostgres { config, .. }
            | TargetSpec::ManagedMysql { config, .. }
            | TargetSpec::Sqlite { config, .. } => config.as_deref(),
            TargetSpec::ExternalPostgres { .. } | TargetSpec::ExternalMysql { .. } => None,
        }
    }
}

/// Splits `pg@18.4+cx10a:io_method=worker:io_workers=4` into the spec and
/// its own settings. URLs have no settings part.
pub fn split_target_settings(text: &str) -> Result<(String, Vec<(String, String)>), String> {
    let t = text.trim();
    if t.contains("://") {
        return Ok((t.to_string(), Vec::new()));
    }
    let starts: Vec<usize> = t
        .match_indices(':')
        .map(|(i, _)| i)
        .filter(|&i| starts_setting(&t[i + 1..]))
        .collect();
    let Some(&first) = starts.first() else {
        return Ok((t.to_string(), Vec::new()));
    };
    let mut settings = Vec::new();
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(t.len());
        let part = &t[start + 1..end];
        let (name, value) = part.split_once('=').unwrap_or((part, ""));
        settings.push((name.to_string(), value.to_string()));
    }
    let spec = &t[..first];
    if spec.is_empty() {
        return Err(format!(
            "target '{t}' starts with settings: write the spec first, e.g. pg@system:{}",
            &t[1..]
        ));
    }
    Ok((spec.to_string(), settings))
}

/// Whether `s` begins with `name=` (a setting name: letters, digits, `_`, `.`).
fn starts_setting(s: &str) -> bool {
    let name_len = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(s.len());
    name_len > 0
        && s[name_len..].starts_with('=')
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
}

/// Writes a spec and its own settings back in the grammar.
pub fn join_target_settings(spec: &str, settings: &[(String, String)]) -> String {
    let mut text = spec.to_string();
    for (name, value) in settings {
        text.push(':');
        text.push_str(name);
        text.push('=');
        text.push_str(value);
    }
    text
}

/// Whether `+config` names a shipped config of the family (or, for
/// PostgreSQL, a config file).
fn config_known(flavor: Option<Flavor>, config: &str) -> bool {
    match flavor {
        None => is_config_path(config) || named_config(config).is_some(),
        Some(_) => crate::server::mysql::my_named_config(config).is_some(),
    }
}

/// `sqlite:PATH[+CONFIG]`: a `+word` suffix without `/` or `.` is a config
/// name; anything else belongs to the path.
fn parse_sqlite(t: &str, rest: &str) -> Result<TargetSpec, String> {
    use crate::server::sqlite::CONFIGS;
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
            "target '{t}': unknown SQLite config '{c}'{}: use one of {}",
            crate::util::suggest::did_you_mean(c, CONFIGS.iter().copied()),
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
        assert_eq!(
            TargetSpec::parse("pg@18.1_o2nofp+x10b").unwrap(),
            TargetSpec::ManagedPostgres {
                source: BinSource::Build("18.1_o2nofp".into()),
                config: Some("x10b".into())
            }
        );
        assert!(TargetSpec::parse("mariadb@10.11_o2nofp").is_err());
        assert_eq!(
            TargetSpec::parse("pg@19beta1_o2nofp").unwrap(),
            TargetSpec::ManagedPostgres {
                source: BinSource::Build("19beta1_o2nofp".into()),
                config: None
            }
        );
        assert_eq!(
            TargetSpec::parse("pg@18.4+cx10d").unwrap(),
            TargetSpec::ManagedPostgres {
                source: BinSource::Version("18.4".into()),
                config: Some("cx10d".into())
            }
        );
        assert_eq!(
            TargetSpec::parse("pg@17+./my.conf").unwrap().config(),
            Some("./my.conf")
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
        assert_eq!(
            TargetSpec::parse("mariadb@10.2+z12a").unwrap(),
            TargetSpec::ManagedMysql {
                flavor: Flavor::MariaDb,
                source: BinSource::Version("10.2".into()),
                config: Some("z12a".into())
            }
        );
        assert_eq!(
            TargetSpec::parse("mysql@5.7").unwrap(),
            TargetSpec::ManagedMysql {
                flavor: Flavor::Mysql,
                source: BinSource::Version("5.7".into()),
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
            ("pg@17.x", "'17.x' is neither"),
            ("pg@latest", "'latest' is neither"),
            ("pg@system+cx99", "unknown config 'cx99'"),
            (
                "pg@system+cx10",
                "unknown config 'cx10' (did you mean 'cx10",
            ),
            ("pg@system:cx10b", "write pg@system+cx10b"),
            ("pg@system:", "'system:' is neither"),
            ("mysql@8.0:binlog", "write mysql@8.0+binlog"),
            ("pg+", "ends with '+'"),
            ("mariadb@system+z99", "unknown config 'z99'"),
            (
                "mariadb@system+binlgo",
                "unknown config 'binlgo' (did you mean 'binlog'?)",
            ),
            (
                "sqlite:x.db+wall",
                "unknown SQLite config 'wall' (did you mean 'wal'?)",
            ),
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

    #[test]
    fn per_target_settings_split_at_colon_name_equals() {
        let (spec, s) =
            split_target_settings("pg@18.4+cx10a:io_method=worker:io_workers=4").unwrap();
        assert_eq!(spec, "pg@18.4+cx10a");
        assert_eq!(
            s,
            [
                ("io_method".to_string(), "worker".to_string()),
                ("io_workers".to_string(), "4".to_string())
            ]
        );
        let (spec, s) = split_target_settings("pg@/opt/a:b/bin:log_line_prefix=%m:%p ").unwrap();
        assert_eq!(spec, "pg@/opt/a:b/bin");
        assert_eq!(s, [("log_line_prefix".to_string(), "%m:%p".to_string())]);
        let url = "postgres://u:pw=x@h:5432/db";
        assert_eq!(
            split_target_settings(url).unwrap(),
            (url.to_string(), vec![])
        );
        assert_eq!(
            split_target_settings("pg").unwrap(),
            ("pg".to_string(), vec![])
        );
        assert!(split_target_settings(":a=b").is_err());
        let text = "pg@17.10+cx10a:work_mem=8MB";
        let (spec, s) = split_target_settings(text).unwrap();
        assert_eq!(join_target_settings(&spec, &s), text);
    }
}
