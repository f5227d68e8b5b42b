//! Reading the jars (zip archives) Maven serves, in-process, with the `zip`
//! crate: its central directory lists the entries, and an entry read to its
//! end has had its CRC-32 checked.

use std::fs::File;
use std::io::{self, BufReader};
use std::path::Path;

use anyhow::{Context, Result, bail};
use zip::ZipArchive;

/// One entry of a zip's central directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZipEntry {
    /// The path inside the archive (`a/b/c`, directories end with `/`).
    pub name: String,
    /// Bytes the entry holds once unpacked.
    pub size: u64,
    index: usize,
}

impl ZipEntry {
    /// Whether the entry is a directory.
    pub fn is_dir(&self) -> bool {
        self.name.ends_with('/')
    }
}

fn open(zip: &Path) -> Result<ZipArchive<BufReader<File>>> {
    let file = File::open(zip).with_context(|| format!("cannot open {}", zip.display()))?;
    ZipArchive::new(BufReader::new(file))
        .with_context(|| format!("{} is not a readable jar", zip.display()))
}

/// The entries of the zip archive at `zip`, in archive order.
pub fn zip_entries(zip: &Path) -> Result<Vec<ZipEntry>> {
    let mut archive = open(zip)?;
    (0..archive.len())
        .map(|index| {
            let what = || format!("{} is not a readable jar", zip.display());
            let entry = archive.by_index_raw(index).with_context(what)?;
            Ok(ZipEntry {
                name: entry.name().with_context(what)?.into_owned(),
                size: entry.size(),
                index,
            })
        })
        .collect()
}

/// Copies `entry` of the zip at `zip` to `out` and checks its CRC-32;
/// returns the bytes written.
pub fn extract_entry(zip: &Path, entry: &ZipEntry, out: &Path) -> Result<u64> {
    let mut archive = open(zip)?;
    let what = || format!("{}: entry {} cannot be read", zip.display(), entry.name);
    let mut reader = archive.by_index(entry.index).with_context(what)?;
    let mut dest = File::create(out).with_context(|| format!("cannot write {}", out.display()))?;
    match io::copy(&mut reader, &mut dest) {
        Ok(written) => Ok(written),
        Err(e) if e.to_string().contains("checksum") => {
            bail!(
                "{}: entry {} fails its CRC-32 check",
                zip.display(),
                entry.name
            )
        }
        Err(e) => Err(e).with_context(what),
    }
}

/// Copies the entry `name` of the zip archive at `zip` to `out` and checks
/// its CRC-32.
pub fn extract_zip_entry(zip: &Path, name: &str, out: &Path) -> Result<u64> {
    let entries = zip_entries(zip)?;
    let Some(entry) = entries.iter().find(|e| e.name == name) else {
        bail!("{} holds no entry {name}", zip.display())
    };
    extract_entry(zip, entry, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn jar_of(entries: &[(&str, &[u8], zip::CompressionMethod)]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        for (name, data, method) in entries {
            let options = zip::write::SimpleFileOptions::default().compression_method(*method);
            w.start_file(*name, options).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn stored_and_deflated_entries_are_read_and_their_crc_checked() {
        let data = b"postgres tree";
        let mut zip = jar_of(&[
            ("x.txz", data, zip::CompressionMethod::Stored),
            ("d/y", &[7u8; 5000], zip::CompressionMethod::Deflated),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let jar = dir.path().join("a.jar");
        std::fs::write(&jar, &zip).unwrap();
        let out = dir.path().join("out");
        let names: Vec<_> = zip_entries(&jar)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["x.txz", "d/y"]);
        assert_eq!(extract_zip_entry(&jar, "d/y", &out).unwrap(), 5000);
        assert_eq!(std::fs::read(&out).unwrap(), [7u8; 5000]);
        assert_eq!(
            extract_zip_entry(&jar, "x.txz", &out).unwrap(),
            data.len() as u64
        );
        assert_eq!(std::fs::read(&out).unwrap(), data);
        assert!(extract_zip_entry(&jar, "y", &out).is_err());
        zip[30 + "x.txz".len()] ^= 1; // corrupt the stored data
        std::fs::write(&jar, &zip).unwrap();
        let e = extract_zip_entry(&jar, "x.txz", &out).unwrap_err();
        assert!(e.to_string().contains("CRC-32"), "{e}");
        std::fs::write(&jar, b"not a zip").unwrap();
        let e = zip_entries(&jar).unwrap_err();
        assert!(e.to_string().contains("not a readable jar"), "{e}");
    }
}
