//! Reading the jars (zip archives) Maven serves, in-process, with the `zip`
//! crate: its central directory lists the entries, and an entry read to its
//! end has had its CRC-32 checked.

use std::fs::File;
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

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

/// A jar opened once: its central directory read, its entries copied out
/// one after the other without reading it again.
pub struct Jar {
    path: PathBuf,
    archive: ZipArchive<BufReader<File>>,
}

impl Jar {
    /// Opens the zip archive at `path` and reads its central directory.
    pub fn open(path: &Path) -> Result<Jar> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let archive = ZipArchive::new(BufReader::new(file))
            .with_context(|| format!("{} is not a readable jar", path.display()))?;
        Ok(Jar {
            path: path.to_path_buf(),
            archive,
        })
    }

    /// The entries, in archive order.
    pub fn entries(&mut self) -> Result<Vec<ZipEntry>> {
        let what = || format!("{} is not a readable jar", self.path.display());
        (0..self.archive.len())
            .map(|index| {
                let entry = self.archive.by_index_raw(index).with_context(what)?;
                Ok(ZipEntry {
                    name: entry.name().with_context(what)?.into_owned(),
                    size: entry.size(),
                    index,
                })
            })
            .collect()
    }

    /// Copies `entry` to `out` and checks its CRC-32; returns the bytes
    /// written.
    pub fn extract(&mut self, entry: &ZipEntry, out: &Path) -> Result<u64> {
        let zip = self.path.display();
        let what = || format!("{zip}: entry {} cannot be read", entry.name);
        let mut reader = self.archive.by_index(entry.index).with_context(what)?;
        let mut dest =
            File::create(out).with_context(|| format!("cannot write {}", out.display()))?;
        match io::copy(&mut reader, &mut dest) {
            Ok(written) => Ok(written),
            Err(e) if e.to_string().contains("checksum") => {
                bail!("{zip}: entry {} fails its CRC-32 check", entry.name)
            }
            Err(e) => Err(e).with_context(what),
        }
    }
}

/// Copies the entry `name` of the zip archive at `zip` to `out` and checks
/// its CRC-32.
pub fn extract_zip_entry(zip: &Path, name: &str, out: &Path) -> Result<u64> {
    let mut jar = Jar::open(zip)?;
    let entries = jar.entries()?;
    let Some(entry) = entries.iter().find(|e| e.name == name) else {
        bail!("{} holds no entry {name}", zip.display())
    };
    jar.extract(entry, out)
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
        let names: Vec<_> = Jar::open(&jar)
            .unwrap()
            .entries()
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
        let e = Jar::open(&jar).err().unwrap();
        assert!(e.to_string().contains("not a readable jar"), "{e}");
    }
}
