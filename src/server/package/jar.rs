//! Reading the jars (zip archives) Maven serves, in-process: the central
//! directory lists the entries, and an entry is copied out with its CRC-32
//! checked. Only the stored and deflated entries jars use are read.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result, bail};

/// One entry of a zip's central directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZipEntry {
    /// The path inside the archive (`a/b/c`, directories end with `/`).
    pub name: String,
    method: u16,
    crc: u32,
    compressed: u64,
    /// Bytes the entry holds once unpacked.
    pub size: u64,
    local: u64,
}

impl ZipEntry {
    /// Whether the entry is a directory.
    pub fn is_dir(&self) -> bool {
        self.name.ends_with('/')
    }
}

/// The entries of the zip archive at `zip`, in archive order.
pub fn zip_entries(zip: &Path) -> Result<Vec<ZipEntry>> {
    let mut file = File::open(zip).with_context(|| format!("cannot open {}", zip.display()))?;
    let len = file.metadata()?.len();
    let what = || format!("{} is not a readable jar", zip.display());
    // The end-of-central-directory record is in the last 64 KiB + 22 bytes.
    let tail_len = len.min(65_557);
    file.seek(SeekFrom::Start(len - tail_len))?;
    let mut tail = vec![0; tail_len as usize];
    file.read_exact(&mut tail)?;
    let eocd = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&i| tail[i..i + 4] == [0x50, 0x4b, 0x05, 0x06])
        .with_context(what)?;
    let count = u16_at(&tail, eocd + 10);
    let start = u64::from(u32_at(&tail, eocd + 16));
    file.seek(SeekFrom::Start(start))?;
    let mut dir = BufReader::new(file);
    let mut out = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        let mut header = [0u8; 46];
        dir.read_exact(&mut header).with_context(what)?;
        if header[..4] != [0x50, 0x4b, 0x01, 0x02] {
            bail!(what());
        }
        let name_len = usize::from(u16_at(&header, 28));
        let skip = usize::from(u16_at(&header, 30)) + usize::from(u16_at(&header, 32));
        let mut name = vec![0; name_len];
        dir.read_exact(&mut name).with_context(what)?;
        let mut rest = vec![0; skip];
        dir.read_exact(&mut rest).with_context(what)?;
        out.push(ZipEntry {
            name: String::from_utf8_lossy(&name).into_owned(),
            method: u16_at(&header, 10),
            crc: u32_at(&header, 16),
            compressed: u64::from(u32_at(&header, 20)),
            size: u64::from(u32_at(&header, 24)),
            local: u64::from(u32_at(&header, 42)),
        });
    }
    Ok(out)
}

/// Copies `entry` of the zip at `zip` to `out` and checks its CRC-32;
/// returns the bytes written.
pub fn extract_entry(zip: &Path, entry: &ZipEntry, out: &Path) -> Result<u64> {
    let mut file = File::open(zip).with_context(|| format!("cannot open {}", zip.display()))?;
    let what = || format!("{} is not a readable jar", zip.display());
    let name = &entry.name;
    let mut local_header = [0u8; 30];
    file.seek(SeekFrom::Start(entry.local))?;
    file.read_exact(&mut local_header).with_context(what)?;
    let skip = u64::from(u16_at(&local_header, 26)) + u64::from(u16_at(&local_header, 28));
    file.seek(SeekFrom::Start(entry.local + 30 + skip))?;
    let raw = BufReader::new(file.take(entry.compressed));
    let mut reader: Box<dyn Read> = match entry.method {
        0 => Box::new(raw),
        8 => Box::new(flate2::read::DeflateDecoder::new(raw)),
        m => bail!(
            "{}: entry {name} uses zip method {m}, not stored or deflate",
            zip.display()
        ),
    };
    let mut dest = File::create(out).with_context(|| format!("cannot write {}", out.display()))?;
    let mut check = flate2::Crc::new();
    let mut buf = vec![0; 1 << 16];
    let mut written = 0u64;
    loop {
        let n = reader.read(&mut buf).with_context(what)?;
        if n == 0 {
            break;
        }
        check.update(&buf[..n]);
        io::Write::write_all(&mut dest, &buf[..n])
            .with_context(|| format!("cannot write {}", out.display()))?;
        written += n as u64;
    }
    if check.sum() != entry.crc {
        bail!("{}: entry {name} fails its CRC-32 check", zip.display());
    }
    Ok(written)
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

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
