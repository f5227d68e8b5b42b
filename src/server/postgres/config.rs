//! postgresql.conf for a managed server: the shipped files, composition
//! with tidemark's own lines and `-c` overrides, and checks of names and
//! values against the PostgreSQL binary that will read them.
//!
//! A typo in a setting must fail before minutes of initdb, load and
//! warm-up, and must name the setting; so names are looked up in
//! `postgres --describe-config` (one fast call) and the finished file is
//! parsed by `postgres -C` before the server starts.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::binaries::{PgBinaries, tool};
use crate::server::process::ServerUser;
use crate::server::{compose_config_file, size_file};

/// Size profiles [`base_config`] knows.
pub use crate::server::SERVER_SIZES as PROFILES;

const BASE_CONF: &str = include_str!("../../../config/postgres/base.conf");
const QUICK_CONF: &str = include_str!("../../../config/postgres/quick.conf");
const SMALL_CONF: &str = include_str!("../../../config/postgres/small.conf");
const LARGE_CONF: &str = include_str!("../../../config/postgres/large.conf");

/// Settings tidemark writes itself; a `-c` override of them would make the
/// server unreachable or put it somewhere else.
const RESERVED: &[&str] = &[
    "port",
    "listen_addresses",
    "unix_socket_directories",
    "data_directory",
];

/// The shipped base configuration followed by the size lines of `profile`
/// (`quick`, `small`, `large`); `None` for an unknown profile.
pub fn base_config(profile: &str) -> Option<String> {
    let sizes = size_file(profile, [QUICK_CONF, SMALL_CONF, LARGE_CONF])?;
    Some(format!("{}\n\n{}", BASE_CONF.trim_end(), sizes))
}

/// The `postgresql.conf` text tidemark writes: `base`, then the lines that
/// make the server private (loopback `port`, socket directory), then the
/// overrides in order (PostgreSQL uses the last occurrence of a setting).
pub fn compose_config(
    base: &str,
    port: u16,
    socket_dir: &str,
    overrides: &[(String, String)],
) -> String {
    let own = format!(
        "port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = {}\n",
        conf_value(socket_dir)
    );
    compose_config_file(base, "", &own, overrides, conf_value)
}

/// A value as postgresql.conf wants it: single-quoted (valid for every
/// type), unless the user already quoted it.
fn conf_value(value: &str) -> String {
    if value.len() >= 2 && value.starts_with('\'') && value.ends_with('\'') {
        return value.to_string();
    }
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "''"))
}

fn override_origin(name: &str, value: &str) -> String {
    format!("-c {name}={value}")
}

/// Rejects override names that are not setting names at all, and the
/// settings tidemark must control itself.
pub fn check_override_syntax(overrides: &[(String, String)]) -> Result<()> {
    let word_ok = |w: &str| {
        w.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    for (name, value) in overrides {
        if !name.split('.').all(word_ok) {
            bail!(
                "'{name}' is not a PostgreSQL setting name (from {})",
                override_origin(name, value)
            );
        }
        if RESERVED.contains(&name.to_ascii_lowercase().as_str()) {
            bail!(
                "{} is not allowed: tidemark sets {name} itself (the server listens on 127.0.0.1 \
                 and its own socket directory; choose the port with --port)",
                override_origin(name, value)
            );
        }
    }
    Ok(())
}

/// Override names `postgres --describe-config` does not list. Dotted names
/// (extension settings) are left to the server.
pub(super) fn unlisted_names(
    bin: &PgBinaries,
    user: &ServerUser,
    overrides: &[(String, String)],
) -> Result<Vec<(String, String)>> {
    if overrides.iter().all(|(name, _)| name.contains('.')) {
        return Ok(Vec::new());
    }
    let known = known_names(bin, user)?;
    Ok(overrides
        .iter()
        .filter(|(name, _)| !name.contains('.') && !known.contains(&name.to_ascii_lowercase()))
        .cloned()
        .collect())
}

/// The setting names (lowercase) `bin` knows, from one call of `postgres
/// --describe-config` as `user`.
pub(super) fn known_names(bin: &PgBinaries, user: &ServerUser) -> Result<HashSet<String>> {
    let out = tool(bin, "postgres", user)
        .arg("--describe-config")
        .output()
        .context("cannot run postgres --describe-config")?;
    if !out.status.success() {
        bail!(
            "postgres --describe-config failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(described_names(&String::from_utf8_lossy(&out.stdout)))
}

/// Setting names (lowercase) from `postgres --describe-config` output.
pub(super) fn described_names(text: &str) -> HashSet<String> {
    text.lines()
        .filter_map(|line| line.split('\t').next())
        .filter(|name| !name.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// What `postgres -C name` said about a setting name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NameCheck {
    Known,
    Unknown,
    /// The probe failed for another reason; ask again after initdb.
    Unsure,
}

/// Asks the server binary about a name `--describe-config` does not list
/// (it omits developer settings). Before initdb (`empty_config`) it reads
/// no configuration file, using the still-empty data directory only as a
/// place to look for postgresql.auto.conf.
pub(super) fn probe_name(
    bin: &PgBinaries,
    user: &ServerUser,
    datadir: &Path,
    name: &str,
    empty_config: bool,
) -> NameCheck {
    let mut cmd = tool(bin, "postgres", user);
    cmd.arg("-C").arg(name).arg("-D").arg(datadir);
    if empty_config {
        cmd.arg("--config-file=/dev/null");
    }
    match cmd.output() {
        Ok(out) if out.status.success() => NameCheck::Known,
        Ok(out)
            if String::from_utf8_lossy(&out.stderr)
                .contains("unrecognized configuration parameter") =>
        {
            NameCheck::Unknown
        }
        _ => NameCheck::Unsure,
    }
}

/// The one-line error for an override name this PostgreSQL does not know.
pub(super) fn unknown_setting(bin: &PgBinaries, name: &str, value: &str) -> String {
    format!(
        "unknown PostgreSQL setting '{name}' for {} (from {}): check the name with \
         `postgres --describe-config`",
        bin.version,
        override_origin(name, value)
    )
}

/// Runs `postgres -C port` on the written configuration: it fails, naming
/// the culprit, when a value is invalid for this PostgreSQL.
pub(super) fn check_config_values(
    bin: &PgBinaries,
    user: &ServerUser,
    datadir: &Path,
    conf: &Path,
) -> Result<()> {
    let out = tool(bin, "postgres", user)
        .args(["-C", "port", "-D"])
        .arg(datadir)
        .output()
        .context("cannot run postgres -C")?;
    if out.status.success() {
        return Ok(());
    }
    bail!(
        "PostgreSQL {} rejected the configuration in {}: {}",
        bin.version,
        conf.display(),
        config_complaints(&String::from_utf8_lossy(&out.stderr))
    )
}

/// The useful part of the server's complaints about a configuration file,
/// on one line.
pub(super) fn config_complaints(stderr: &str) -> String {
    const MARKERS: [(&str, &str); 4] = [
        ("LOG:  ", ""),
        ("HINT:  ", "hint: "),
        ("FATAL:  ", ""),
        ("DETAIL:  ", ""),
    ];
    let mut parts = Vec::new();
    for line in stderr.lines() {
        for (marker, label) in MARKERS {
            if let Some((_, msg)) = line.split_once(marker) {
                if !msg.contains("contains errors") && !msg.starts_with("skipping missing") {
                    parts.push(format!("{label}{}", msg.trim()));
                }
                break;
            }
        }
    }
    if parts.is_empty() {
        stderr.trim().replace('\n', "; ")
    } else {
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_compose_base_and_sizes() {
        let quick = base_config("quick").unwrap();
        assert!(quick.starts_with(BASE_CONF.trim_end()));
        assert!(quick.contains("\nshared_buffers = 256MB\n"));
        assert!(quick.contains("\nmax_wal_size = 2GB\n"));
        let small = base_config("small").unwrap();
        assert!(small.contains("\nshared_buffers = 4GB\n"));
        assert!(small.contains("\nmax_wal_size = 16GB\n"));
        let large = base_config("large").unwrap();
        assert!(large.contains("\nshared_buffers = 8GB\n"));
        assert!(large.contains("\nmax_wal_size = 32GB\n"));
        assert_eq!(base_config("huge"), None);
        let active = BASE_CONF
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
        for line in active {
            let name = line.split('=').next().unwrap().trim();
            assert!(!RESERVED.contains(&name), "{line}");
        }
    }

    #[test]
    fn config_text_puts_our_lines_and_overrides_last() {
        let overrides = vec![
            ("work_mem".to_string(), "8MB".to_string()),
            (
                "shared_preload_libraries".to_string(),
                "'pg_stat_statements'".to_string(),
            ),
            ("work_mem".to_string(), "it's".to_string()),
        ];
        let base = "shared_buffers = 1GB\nwork_mem = 4MB\n\n";
        let text = compose_config(base, 5999, "/tmp/d", &overrides);
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .collect();
        assert_eq!(
            lines,
            [
                "shared_buffers = 1GB",
                "work_mem = 4MB",
                "port = 5999",
                "listen_addresses = '127.0.0.1'",
                "unix_socket_directories = '/tmp/d'",
                "work_mem = '8MB'",
                "shared_preload_libraries = 'pg_stat_statements'",
                "work_mem = 'it''s'",
            ]
        );
        let bare = compose_config("", 1, "/s", &[]);
        assert!(bare.starts_with("# --- added by tidemark"));
        assert_eq!(conf_value(r"C:\x"), r"'C:\\x'");
    }

    #[test]
    fn override_names_are_checked_for_form_and_ownership() {
        let one = |n: &str| vec![(n.to_string(), "1".to_string())];
        assert!(check_override_syntax(&one("work_mem")).is_ok());
        assert!(check_override_syntax(&one("pg_stat_statements.max")).is_ok());
        let err = check_override_syntax(&one("work mem")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "'work mem' is not a PostgreSQL setting name (from -c work mem=1)"
        );
        assert!(check_override_syntax(&one("1abc")).is_err());
        assert!(check_override_syntax(&one("a..b")).is_err());
        let err = check_override_syntax(&one("Port")).unwrap_err().to_string();
        assert!(
            err.starts_with("-c Port=1 is not allowed: tidemark sets Port itself"),
            "{err}"
        );
    }

    #[test]
    fn describe_config_names_and_config_complaints() {
        let names =
            described_names("work_mem\tuser\tResource\tINTEGER\t4096\n\nMax_Wal_Size\tsighup\n");
        assert!(names.contains("work_mem") && names.contains("max_wal_size"));
        assert_eq!(names.len(), 2);
        let stderr = "\
2026-11-20 23:57:47.905 GMT [10924] LOG:  invalid value for parameter \"work_mem\": \"banana\"
2026-11-20 23:57:47.905 GMT [10924] LOG:  invalid value for parameter \"huge_pages\": \"maybe\"
2026-11-20 23:57:47.905 GMT [10924] HINT:  Available values: off, on, try.
2026-11-20 23:57:47.905 GMT [10924] FATAL:  configuration file \"/x/postgresql.conf\" contains errors
";
        assert_eq!(
            config_complaints(stderr),
            "invalid value for parameter \"work_mem\": \"banana\"; invalid value for parameter \
             \"huge_pages\": \"maybe\"; hint: Available values: off, on, try."
        );
        assert_eq!(
            config_complaints("something odd\nhappened\n"),
            "something odd; happened"
        );
    }
}
