//! PostgreSQL builds from Debian suites newer than this machine's
//! (`postgresql-NN` in experimental or sid; see
//! [`crate::server::package::debian`]): the newest releases and
//! pre-releases (19~rc1 as `19rc1`) before npm or Maven carry them.
//!
//! The tree keeps Debian's layout (`usr/lib/postgresql/NN/{bin,lib}`,
//! `usr/share/postgresql/NN`, so the server finds its files relative to
//! its own path) beside the libraries it needs, with `bin`, `lib` and
//! `share` links at the top where tidemark looks.

use std::path::Path;

use anyhow::{Context, Result};

use super::{Fetched, Offer};
use crate::server::package::debian::{self, PrivateApt};

/// The majors looked for.
const MAJORS: std::ops::RangeInclusive<u32> = 16..=21;

/// The release a Debian version names: `19~rc1-1` → `19rc1`, `18.6-3` →
/// `18.6`; `None` for anything else.
pub fn release_of(debian_version: &str) -> Option<String> {
    let upstream = debian_version
        .split_once(':')
        .map_or(debian_version, |(_, v)| v);
    let upstream = upstream.rsplit_once('-').map_or(upstream, |(u, _)| u);
    let release = upstream.replace('~', "");
    let (numbers, pre) = split_release(&release)?;
    if numbers.is_empty() || (!pre.is_empty() && !is_pre_release(pre)) {
        return None;
    }
    Some(release)
}

/// `19rc1` → (`19`, `rc1`); `18.6` → (`18.6`, ``).
pub fn split_release(release: &str) -> Option<(&str, &str)> {
    let end = release
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(release.len());
    let (numbers, pre) = release.split_at(end);
    numbers
        .split('.')
        .all(|p| !p.is_empty() && p.parse::<u32>().is_ok())
        .then_some((numbers, pre))
}

/// `beta2`, `rc1`.
pub fn is_pre_release(pre: &str) -> bool {
    ["alpha", "beta", "rc"].iter().any(|s| {
        pre.strip_prefix(s)
            .is_some_and(|n| n.parse::<u32>().is_ok())
    })
}

/// The order of releases: numbers, then alpha < beta < rc < the release.
pub fn release_key(release: &str) -> Vec<u32> {
    let Some((numbers, pre)) = split_release(release) else {
        return Vec::new();
    };
    let mut key: Vec<u32> = numbers.split('.').filter_map(|p| p.parse().ok()).collect();
    key.resize(3, 0);
    let stage = [("alpha", 0), ("beta", 1), ("rc", 2)]
        .iter()
        .find_map(|(s, k)| Some((*k, pre.strip_prefix(s)?.parse::<u32>().ok()?)));
    match stage {
        Some((k, n)) => key.extend([k, n]),
        None => key.extend([3, 0]),
    }
    key
}

/// The PostgreSQL releases the newer Debian suites carry.
pub fn offers(apt: &PrivateApt) -> Result<Vec<Offer>> {
    let mut out = Vec::new();
    for major in MAJORS {
        if let Some(e) = apt.show(&format!("postgresql-{major}"))?
            && let Some(pg_version) = release_of(&e.version)
        {
            out.push(Offer {
                client: "apt",
                key: release_key(&pg_version),
                pg_version,
                package_version: e.version,
            });
        }
    }
    Ok(out)
}

/// Downloads `postgresql-NN` at `version` and the libraries it needs,
/// checks each against the signed index, unpacks them into `dest` and
/// points the programs at them as the tree will sit at `final_root`.
pub fn fetch(
    apt: &PrivateApt,
    offer: &Offer,
    work: &Path,
    dest: &Path,
    final_root: &Path,
) -> Result<Fetched> {
    let major = offer
        .pg_version
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap_or_default()
        .to_string();
    let package = format!("postgresql-{major}");
    let mut entries = apt.library_closure(&package)?;
    entries[0].version = offer.package_version.clone();
    let debs = apt.download(&entries, work)?;
    let bytes: u64 = debs
        .iter()
        .map(|(f, _)| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    debian::unpack(&debs, dest)?;
    for (link, target) in [
        ("bin", format!("usr/lib/postgresql/{major}/bin")),
        ("lib", format!("usr/lib/postgresql/{major}/lib")),
        ("share", format!("usr/share/postgresql/{major}")),
    ] {
        std::os::unix::fs::symlink(&target, dest.join(link))
            .with_context(|| format!("cannot link {link} in {}", dest.display()))?;
    }
    relocate(dest, final_root, &major)?;
    Ok(Fetched {
        package: format!(
            "{package}={} (+{} libraries)",
            offer.package_version,
            debs.len() - 1
        ),
        checksum: format!("sha256:{}", debs[0].1),
        bytes,
    })
}

/// Points the tree's programs at its own loader and libraries as it sits
/// at `root`.
pub fn relocate(tree: &Path, root: &Path, major: &str) -> Result<()> {
    debian::relocate(tree, root, &[&format!("usr/lib/postgresql/{major}/bin")])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_versions_name_releases_and_pre_releases() {
        assert_eq!(release_of("19~rc1-1").as_deref(), Some("19rc1"));
        assert_eq!(release_of("19~beta2-1").as_deref(), Some("19beta2"));
        assert_eq!(release_of("18.6-3").as_deref(), Some("18.6"));
        assert_eq!(release_of("1:11.8.9+ds-4"), None);
        assert_eq!(release_of("garbage"), None);
        assert!(release_key("19beta2") < release_key("19rc1"));
        assert!(release_key("19rc1") < release_key("19"));
        assert!(release_key("19") < release_key("19.1"));
        assert!(release_key("18.6") < release_key("19beta2"));
    }
}
