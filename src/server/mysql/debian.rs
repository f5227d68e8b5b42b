//! Server trees of both families from Debian suites newer than this
//! machine's (MariaDB 11.8, MySQL 9.x): the release a suite carries, read
//! from its index, and its install through the private apt of
//! [`crate::server::package::debian`] into the family's cache.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::Flavor;
use super::install::{Begun, MaInstalled, MaManifest, begin_install, check_tree};
use crate::server::package::cache::move_into_cache;
use crate::server::package::{Scratch, fresh_dir};
use crate::server::postgres::install::cache_root;

/// The release the newer Debian suites carry in `package`, as (release,
/// Debian version); `None` when no suite has it.
pub fn debian_offer_of(package: &str) -> Result<Option<(String, String)>> {
    let apt = crate::server::package::debian::PrivateApt::open(&cache_root())?;
    Ok(apt
        .show(package)?
        .and_then(|e| Some((debian_release(&e.version)?, e.version))))
}

/// `1:11.8.9+ds-4` → `11.8.9`.
pub fn debian_release(debian_version: &str) -> Option<String> {
    let v = debian_version
        .split_once(':')
        .map_or(debian_version, |(_, v)| v);
    let v = v.split(['+', '-', '~']).next()?;
    (v.split('.').count() == 3 && v.split('.').all(|p| p.parse::<u32>().is_ok()))
        .then(|| v.to_string())
}

/// A server family's packages in the newer Debian suites.
pub(super) struct DebianServer {
    pub flavor: Flavor,
    /// The server's package first, then the others it needs.
    pub packages: &'static [&'static str],
    /// The family's install cache.
    pub root: PathBuf,
}

/// Installs `release` (Debian version `debian_version` of the first of
/// `server.packages`) from a newer Debian suite: the packages and the
/// libraries they need unpacked side by side (see
/// [`crate::server::package::debian`]), each download checked against the
/// signed index's SHA-256, the programs pointed at that tree's loader and
/// libraries, `bin`, `sbin` and `share` linked at its top as a basedir has
/// them; renamed into the cache only when the server there reports
/// `release`.
pub(super) fn install_debian_tree(
    server: &DebianServer,
    release: &str,
    debian_version: &str,
    say: &mut dyn FnMut(&str),
) -> Result<MaInstalled> {
    use crate::server::package::debian::{self, PrivateApt};
    let title = server.flavor.title();
    let main = server.packages[0];
    let root = &server.root;
    let installing = format!(
        "installing {title} {release} with apt ({main} {debian_version}, a newer Debian suite)"
    );
    let started = match begin_install(root, release, say, &installing)? {
        Begun::Installed(done) => return Ok(done),
        Begun::Started(at) => at,
    };
    let apt = PrivateApt::open(&cache_root())?;
    let entries = apt.library_closure_of(server.packages)?;
    let work = fresh_dir(root, "download")?;
    let staging = fresh_dir(root, "staging")?;
    let _scratch = Scratch(vec![work.clone(), staging.clone()]);
    std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o755))?;
    let debs = apt
        .download(&entries, &work)
        .with_context(|| format!("cannot install {title} {release}"))?;
    let bytes: u64 = debs
        .iter()
        .map(|(f, _)| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    debian::unpack(&debs, &staging)?;
    for (link, target) in [
        ("bin", "usr/bin"),
        ("sbin", "usr/sbin"),
        ("share", "usr/share"),
    ] {
        std::os::unix::fs::symlink(target, staging.join(link))
            .with_context(|| format!("cannot link {link} in {}", staging.display()))?;
    }
    debian::relocate(&staging, &staging, &["usr/bin", "usr/sbin"])?;
    let manifest = MaManifest {
        version: release.to_string(),
        client: "apt".into(),
        package: format!("{main}={debian_version} (+{} packages)", debs.len() - 1),
        sha1: String::new(),
        sha256: debs[0].1.clone(),
        installed_at: crate::util::time::now_rfc3339(),
        bytes,
        needs_shipped_libs: false,
    };
    let what = format!("{main} {debian_version}");
    check_tree(server.flavor, &staging, &manifest, &what)?;
    let dest = root.join(release);
    debian::relocate(&staging, &dest, &["usr/bin", "usr/sbin"])?;
    move_into_cache(&staging, dest, manifest, say, |t| {
        format!(
            "installed {title} {release} from apt {} (sha256 verified against the signed index, {} MB) in {} in {:.1} s",
            t.manifest.package,
            bytes / 1_000_000,
            t.dir.display(),
            started.elapsed().as_secs_f64()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_versions_name_mariadb_releases() {
        assert_eq!(debian_release("1:11.8.9+ds-4").as_deref(), Some("11.8.9"));
        assert_eq!(
            debian_release("1:10.11.19-0+deb12u1").as_deref(),
            Some("10.11.19")
        );
        assert_eq!(debian_release("11.8"), None);
    }
}
