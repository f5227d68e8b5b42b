//! The seeds' my.cnf files as complete files (`config/mysql/seeds/`), one
//! per config and version range, next to the named configs that are diffs
//! on tidemark's base.
//!
//! A complete config (`complete = true` in `configs.toml`: `cz12a`, `cz12b`,
//! `cz12a_nocb`, `cz13a`, `cz12a_dw0`, `cz12b_dw0`, named as the seeds name their files
//! `my.cnf.cz12a_c24r64`) replaces the whole shipped text: the target gets
//! the file of its family whose version range holds the server's version,
//! with the buffer pool and redo log scaled to the run's profile (the
//! `@buffer_pool@`, `@redo@` and `@redo/10@` placeholders), then the few
//! lines tidemark's clients need ([`TIDEMARK_NEEDS`]). A version no file
//! covers is refused before anything starts, naming the versions that have
//! one. The diff configs (`z12a`, `bl1_sync1_dw1`, …) keep their names and
//! meaning.

use super::binaries::Flavor;
use super::named::version_at_least;

/// One shipped complete file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedFile {
    /// The config it belongs to (`cz12a`).
    pub config: &'static str,
    pub family: Flavor,
    /// The first version it is for.
    pub from: &'static str,
    /// The first version it is no longer for, if any.
    pub before: Option<&'static str>,
    /// Its path in the source tree, for messages and the record.
    pub path: &'static str,
    pub text: &'static str,
}

macro_rules! seed_file {
    ($config:literal, $family:ident, $from:literal, $before:expr, $stem:literal) => {
        SeedFile {
            config: $config,
            family: Flavor::$family,
            from: $from,
            before: $before,
            path: concat!("config/mysql/seeds/", $stem, ".cnf"),
            text: include_str!(concat!("../../../config/mysql/seeds/", $stem, ".cnf")),
        }
    };
}

/// Every shipped complete file.
pub const SEED_FILES: &[SeedFile] = &[
    seed_file!("cz12a", MariaDb, "10.2", Some("10.5"), "cz12a.mariadb-10.2"),
    seed_file!("cz12a", MariaDb, "10.5", Some("11.0"), "cz12a.mariadb-10.5"),
    seed_file!("cz12b", MariaDb, "10.2", Some("10.5"), "cz12b.mariadb-10.2"),
    seed_file!("cz12b", MariaDb, "10.5", Some("11.0"), "cz12b.mariadb-10.5"),
    seed_file!("cz12b", MariaDb, "11.4", None, "cz12b.mariadb-11.4"),
    seed_file!(
        "cz12a_dw0",
        MariaDb,
        "10.5",
        Some("11.0"),
        "cz12a_dw0.mariadb-10.5"
    ),
    seed_file!(
        "cz12b_dw0",
        MariaDb,
        "10.5",
        Some("11.0"),
        "cz12b_dw0.mariadb-10.5"
    ),
    seed_file!("cz12b_dw0", MariaDb, "11.4", None, "cz12b_dw0.mariadb-11.4"),
    // innodb_numa_interleave, which the file sets, came with 5.6.27.
    seed_file!("cz12a", Mysql, "5.6.27", Some("5.7"), "cz12a.mysql-5.6"),
    seed_file!("cz12a", Mysql, "5.7", Some("8.0"), "cz12a.mysql-5.7"),
    seed_file!("cz12a", Mysql, "8.0.30", Some("8.4"), "cz12a.mysql-8.0.30"),
    seed_file!("cz12a", Mysql, "8.4", Some("9.0"), "cz12a.mysql-8.4"),
    seed_file!("cz12a", Mysql, "9.0", None, "cz12a.mysql-9.0"),
    seed_file!(
        "cz12a_nocb",
        Mysql,
        "8.4",
        Some("9.0"),
        "cz12a_nocb.mysql-8.4"
    ),
    seed_file!("cz13a", Mysql, "9.0", None, "cz13a.mysql-9.0"),
];

/// Lines a complete file gets after it: what tidemark's clients need
/// (a thousand connections, ~10 prepared statements per table each, no
/// DNS lookups of loopback clients).
pub const TIDEMARK_NEEDS: &str = "[mysqld]\n\
    # --- added by tidemark: what its clients need ---\n\
    max_connections = 1000\n\
    max_prepared_stmt_count = 1000000\n\
    skip_name_resolve = 1\n";

impl SeedFile {
    /// Whether `version` of `family` is in this file's range.
    pub fn covers(&self, family: Flavor, version: &str) -> bool {
        family == self.family
            && version_at_least(version, self.from)
            && self.before.is_none_or(|b| !version_at_least(version, b))
    }

    /// `MariaDB 10.2–10.4`-style range for messages.
    pub fn range(&self) -> String {
        match self.before {
            Some(b) => format!("{} {} up to {b}", self.family.title(), self.from),
            None => format!("{} {}+", self.family.title(), self.from),
        }
    }
}

/// The file of `config` for `family` at `version`; the error names the
/// versions that have one.
pub fn pick(config: &str, family: Flavor, version: &str) -> Result<&'static SeedFile, String> {
    let files: Vec<&SeedFile> = SEED_FILES.iter().filter(|f| f.config == config).collect();
    if let Some(found) = files.iter().find(|f| f.covers(family, version)) {
        return Ok(found);
    }
    let ranges: Vec<String> = files.iter().map(|f| f.range()).collect();
    Err(format!(
        "config {config} has no file for {} {version}: it has files for {}",
        family.title(),
        ranges.join(", ")
    ))
}

/// `256M`, `12G`, `1048576` → bytes; `None` when it does not parse.
pub(super) fn size_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let (num, unit) = match v.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => (&v[..i], c.to_ascii_uppercase()),
        _ => (v, 'B'),
    };
    let n: u64 = num.parse().ok()?;
    let scale = match unit {
        'B' => 1,
        'K' => 1 << 10,
        'M' => 1 << 20,
        'G' => 1 << 30,
        'T' => 1 << 40,
        _ => return None,
    };
    Some(n * scale)
}

/// The value of the last active `name = value` line of `text`.
fn value_of<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .filter(|(n, _)| n.trim() == name)
        .map(|(_, v)| v.trim())
        .next_back()
}

/// `file`'s text with the profile's sizes in place of its placeholders
/// (`sizes` is the profile's size file), then [`TIDEMARK_NEEDS`].
pub fn scaled_text(file: &SeedFile, sizes: &str) -> Result<String, String> {
    let pool = value_of(sizes, "innodb_buffer_pool_size")
        .ok_or("the profile's size file has no innodb_buffer_pool_size")?;
    let redo = value_of(sizes, "innodb_log_file_size")
        .ok_or("the profile's size file has no innodb_log_file_size")?;
    let tenth = size_bytes(redo)
        .map(|b| format!("{}M", (b / 10) >> 20))
        .ok_or_else(|| format!("cannot read the redo size {redo}"))?;
    let text = file
        .text
        .replace("@buffer_pool@", pool)
        .replace("@redo/10@", &tenth)
        .replace("@redo@", redo);
    Ok(format!(
        "# --- config {} ({}) ---\n{}\n{TIDEMARK_NEEDS}",
        file.config,
        file.path,
        text.trim_end()
    ))
}

/// The `name = value` settings of a complete file's text, in file order.
pub fn settings_of(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_version_gets_its_files_variant() {
        let p = |c, f, v| pick(c, f, v).map(|s| s.path);
        assert_eq!(
            p("cz12a", Flavor::MariaDb, "10.2.11"),
            Ok("config/mysql/seeds/cz12a.mariadb-10.2.cnf")
        );
        assert_eq!(
            p("cz12a", Flavor::MariaDb, "10.11.19"),
            Ok("config/mysql/seeds/cz12a.mariadb-10.5.cnf")
        );
        assert_eq!(
            p("cz12b", Flavor::MariaDb, "11.4.5"),
            Ok("config/mysql/seeds/cz12b.mariadb-11.4.cnf")
        );
        assert_eq!(
            p("cz12a", Flavor::Mysql, "5.6.51"),
            Ok("config/mysql/seeds/cz12a.mysql-5.6.cnf")
        );
        assert_eq!(
            p("cz12a", Flavor::Mysql, "8.4.7"),
            Ok("config/mysql/seeds/cz12a.mysql-8.4.cnf")
        );
        let e = pick("cz12a", Flavor::Mysql, "8.0.29").unwrap_err();
        assert!(
            e.starts_with("config cz12a has no file for MySQL 8.0.29: it has files for ")
                && e.contains("MySQL 8.0.30 up to 8.4"),
            "{e}"
        );
        let e = pick("cz12a", Flavor::Mysql, "5.6.24").unwrap_err();
        assert!(e.contains("MySQL 5.6.27 up to 5.7"), "{e}");
        assert!(pick("cz12b", Flavor::MariaDb, "11.2.3").is_err());
        assert!(pick("cz13a", Flavor::MariaDb, "10.11.19").is_err());
    }

    #[test]
    fn files_are_scaled_to_the_profile() {
        let sizes = "innodb_buffer_pool_size = 256M\ninnodb_log_file_size = 256M\n";
        let f = pick("cz12a", Flavor::MariaDb, "10.2.11").unwrap();
        let t = scaled_text(f, sizes).unwrap();
        assert!(t.contains("\ninnodb_buffer_pool_size = 256M\n"), "{t}");
        assert!(t.contains("\ninnodb_log_file_size = 25M\n"), "{t}");
        assert!(t.ends_with(TIDEMARK_NEEDS));
        assert!(!t.contains('@'), "no placeholder is left: {t}");
        let large = "innodb_buffer_pool_size = 24G\ninnodb_log_file_size = 16G\n";
        let my = scaled_text(pick("cz12a", Flavor::Mysql, "8.4.7").unwrap(), large).unwrap();
        assert!(my.contains("innodb_redo_log_capacity = 16G"), "{my}");
        for file in SEED_FILES {
            let t = scaled_text(file, sizes).unwrap();
            assert!(!t.contains('@'), "{}", file.path);
            let settings = settings_of(&t);
            assert!(settings.iter().any(|(n, _)| n == "innodb_buffer_pool_size"));
            for reserved in ["datadir", "tmpdir", "port", "socket"] {
                assert!(
                    !settings.iter().any(|(n, _)| n == reserved),
                    "{}",
                    file.path
                );
            }
        }
        assert_eq!(size_bytes("12G"), Some(12 << 30));
        assert_eq!(size_bytes("1048576"), Some(1 << 20));
        assert_eq!(size_bytes("x"), None);
    }
}
