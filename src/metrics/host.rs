//! Facts about the machine a run happens on: CPU, memory, kernel, OS and the
//! disk under the data directory.
//!
//! Two runs are only comparable when they ran on the same kind of host, so
//! every run records these facts and the report prints them. They are read
//! straight from `/proc` and `/sys` (no subprocesses, nothing to install), and
//! collecting them never fails: a fact that cannot be read is left empty.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub use crate::record::{HostFacts, StorageFacts};

/// Collects the host facts, with storage facts for `data_path` if given.
///
/// `data_path` need not exist yet: its nearest existing ancestor is used.
pub fn collect(data_path: Option<&Path>) -> HostFacts {
    let cpuinfo = read("/proc/cpuinfo");
    HostFacts {
        hostname: first_nonempty(read("/proc/sys/kernel/hostname"), || {
            uname_field(Uname::Node)
        }),
        cores: online_cpus(),
        memory_bytes: meminfo_total(&read("/proc/meminfo")).unwrap_or(0),
        kernel: first_nonempty(read("/proc/sys/kernel/osrelease"), || {
            uname_field(Uname::Release)
        }),
        os: os_pretty_name(),
        cpu_model: cpu_model(&cpuinfo),
        storage: data_path.map(|p| storage(p, Path::new("/sys"), &read("/proc/self/mountinfo"))),
    }
}

/// A whole file as text, trimmed; empty when it cannot be read.
pub(crate) fn read(path: impl AsRef<Path>) -> String {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn first_nonempty(s: String, fallback: impl FnOnce() -> String) -> String {
    if s.is_empty() { fallback() } else { s }
}

enum Uname {
    Node,
    Release,
}

/// A field of `uname(2)`, for hosts where `/proc/sys` is not mounted.
fn uname_field(which: Uname) -> String {
    // SAFETY: utsname is plain old data, so all-zero is a valid value, and
    // uname only writes NUL-terminated strings into the arrays it is given.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let field: &[libc::c_char] = match which {
        Uname::Node => &u.nodename,
        Uname::Release => &u.release,
    };
    let bytes: Vec<u8> = field
        .iter()
        .take_while(|&&c| c != 0)
        .map(|c| c.to_ne_bytes()[0])
        .collect();
    String::from_utf8_lossy(&bytes).trim().to_string()
}

/// Online CPUs from `/sys/devices/system/cpu/online`, else `sysconf`.
pub(crate) fn online_cpus() -> u32 {
    if let Some(n) = count_cpu_list(&read("/sys/devices/system/cpu/online")) {
        return n;
    }
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(0)
}

/// Counts the CPUs in a kernel CPU list such as `0-3,5,7-8`.
fn count_cpu_list(list: &str) -> Option<u32> {
    if list.trim().is_empty() {
        return None;
    }
    let mut n = 0u32;
    for part in list.trim().split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.trim().parse::<u32>().ok()?;
                n += 1;
            }
        }
    }
    Some(n)
}

/// This machine's memory (`MemTotal`), bytes; `None` when unreadable.
pub fn memory_bytes() -> Option<u64> {
    meminfo_total(&read("/proc/meminfo"))
}

/// `MemTotal` of `/proc/meminfo` text, in bytes.
fn meminfo_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    let unit = match words.next() {
        Some("kB") | Some("KB") => 1024,
        None => 1,
        Some(_) => return None,
    };
    n.checked_mul(unit)
}

/// `PRETTY_NAME` from `/etc/os-release`, or `/usr/lib/os-release`.
fn os_pretty_name() -> String {
    ["/etc/os-release", "/usr/lib/os-release"]
        .iter()
        .find_map(|p| os_release_value(&read(p), "PRETTY_NAME"))
        .unwrap_or_default()
}

/// The value of `key` in os-release text, unquoted.
fn os_release_value(text: &str, key: &str) -> Option<String> {
    let raw = text.lines().find_map(|l| {
        let (k, v) = l.trim().split_once('=')?;
        (k.trim() == key).then(|| v.trim())
    })?;
    let unquoted = if raw.len() >= 2
        && ((raw.starts_with('"') && raw.ends_with('"'))
            || (raw.starts_with('\'') && raw.ends_with('\'')))
    {
        &raw[1..raw.len() - 1]
    } else {
        raw
    };
    // Undo the shell escapes os-release allows inside double quotes.
    let mut out = String::with_capacity(unquoted.len());
    let mut chars = unquoted.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The CPU model from `/proc/cpuinfo` text: `model name` on x86, with the
/// fields other architectures use as fallbacks.
fn cpu_model(cpuinfo: &str) -> String {
    ["model name", "Model", "cpu model", "Hardware", "Processor"]
        .iter()
        .find_map(|key| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == *key && !v.trim().is_empty()).then(|| v.trim().to_string())
            })
        })
        .unwrap_or_default()
}

/// Storage facts for `path`, given the sysfs root and `/proc/self/mountinfo`.
fn storage(path: &Path, sys: &Path, mountinfo: &str) -> StorageFacts {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut facts = StorageFacts {
        path: absolute.display().to_string(),
        ..StorageFacts::default()
    };
    // The data directory may not exist yet; its filesystem is its ancestor's.
    let Some(existing) = absolute.ancestors().find(|p| p.exists()) else {
        return facts;
    };
    let canonical = fs::canonicalize(existing).unwrap_or_else(|_| existing.to_path_buf());
    let mounts = parse_mountinfo(mountinfo);
    let mount = mount_of(&mounts, &canonical);
    if let Some(m) = mount {
        facts.filesystem = m.fstype.clone();
    }

    let candidates = block_device_links(&canonical, mount, sys);
    if let Some(disk) = candidates.iter().find_map(|c| whole_disk(c)) {
        facts.device = disk
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        facts.rotational = match read(disk.join("queue/rotational")).as_str() {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        };
    }
    facts
}

/// The sysfs links that may name the block device holding `canonical`
/// (a path that exists, on `mount`), best first: the file's own st_dev, the
/// mount's device number (they differ on btrfs), the mount source.
pub(crate) fn block_device_links(
    canonical: &Path,
    mount: Option<&Mount>,
    sys: &Path,
) -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(meta) = fs::metadata(canonical) {
        let (major, minor) = dev_major_minor(meta.dev());
        candidates.push(sys.join(format!("dev/block/{major}:{minor}")));
    }
    if let Some(m) = mount {
        candidates.push(sys.join(format!("dev/block/{}", m.dev)));
        if m.source.starts_with("/dev/") {
            let dev = fs::canonicalize(&m.source).unwrap_or_else(|_| PathBuf::from(&m.source));
            if let Some(name) = dev.file_name() {
                candidates.push(sys.join("class/block").join(name));
            }
        }
    }
    candidates
}

/// The sysfs directory of the whole disk behind a block device link
/// (`/sys/dev/block/M:m` or `/sys/class/block/NAME`), going from a partition
/// to its parent disk.
pub(crate) fn whole_disk(link: &Path) -> Option<PathBuf> {
    let dir = fs::canonicalize(link).ok()?;
    if dir.join("partition").exists() {
        let parent = dir.parent()?;
        parent.join("dev").exists().then(|| parent.to_path_buf())
    } else {
        dir.join("dev").exists().then_some(dir)
    }
}

/// Major and minor numbers of a Linux `dev_t` (glibc's encoding).
pub(crate) fn dev_major_minor(dev: u64) -> (u64, u64) {
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff);
    (major, minor)
}

/// One line of `/proc/self/mountinfo`, the parts used here.
#[derive(Debug, PartialEq)]
pub(crate) struct Mount {
    /// `major:minor` of the mounted device.
    pub(crate) dev: String,
    pub(crate) mount_point: PathBuf,
    pub(crate) fstype: String,
    pub(crate) source: String,
}

/// Parses `/proc/self/mountinfo`:
/// `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw`.
pub(crate) fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let left: Vec<&str> = left.split(' ').collect();
            let mut right = right.split(' ');
            Some(Mount {
                dev: left.get(2)?.to_string(),
                mount_point: PathBuf::from(unescape_octal(left.get(4)?)),
                fstype: right.next()?.to_string(),
                source: unescape_octal(right.next().unwrap_or("")),
            })
        })
        .collect()
}

/// Undoes the kernel's `\040`-style escapes of spaces, tabs, newlines and
/// backslashes in mountinfo fields.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount holding `path`: the longest mount point that contains it, the
/// later line winning among equal ones (it is mounted on top).
pub(crate) fn mount_of<'a>(mounts: &'a [Mount], path: &Path) -> Option<&'a Mount> {
    mounts
        .iter()
        .filter(|m| path.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.components().count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn cpu_lists() {
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-1\n"), Some(2));
        assert_eq!(count_cpu_list("0-3,5,7-8"), Some(7));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("x"), None);
        assert_eq!(count_cpu_list("3-1"), None);
    }

    #[test]
    fn meminfo() {
        let text = "MemTotal:       16310476 kB\nMemFree:         1234 kB\n";
        assert_eq!(meminfo_total(text), Some(16_310_476 * 1024));
        assert_eq!(meminfo_total("MemFree: 1 kB"), None);
    }

    #[test]
    fn os_release() {
        let text = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
        assert_eq!(
            os_release_value(text, "PRETTY_NAME").as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(
            os_release_value("PRETTY_NAME='Arch Linux'", "PRETTY_NAME").as_deref(),
            Some("Arch Linux")
        );
        assert_eq!(
            os_release_value("PRETTY_NAME=Plain", "PRETTY_NAME").as_deref(),
            Some("Plain")
        );
        assert_eq!(
            os_release_value(r#"PRETTY_NAME="say \"hi\"""#, "PRETTY_NAME").as_deref(),
            Some(r#"say "hi""#)
        );
        assert_eq!(os_release_value("NAME=x", "PRETTY_NAME"), None);
    }

    #[test]
    fn cpu_models() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R) Processor\n";
        assert_eq!(cpu_model(x86), "Intel(R) Xeon(R) Processor");
        let arm =
            "processor\t: 0\nBogoMIPS\t: 50.00\n\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n";
        assert_eq!(cpu_model(arm), "Raspberry Pi 4 Model B Rev 1.4");
        assert_eq!(cpu_model(""), "");
    }

    #[test]
    fn dev_numbers() {
        assert_eq!(dev_major_minor(0xfe00), (254, 0));
        assert_eq!(dev_major_minor(0x0803), (8, 3));
        // nvme partitions get minors above 255, encoded in the high bits.
        let dev = (259u64 << 8) | (300 & 0xff) | ((300 & !0xff) << 12);
        assert_eq!(dev_major_minor(dev), (259, 300));
    }

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
40 27 8:17 / /data rw,relatime shared:5 - xfs /dev/sdb1 rw
41 40 0:50 / /data/my\\040dir rw - tmpfs tmp\\040fs rw
42 40 259:3 / /data rw - ext4 /dev/nvme0n1p3 rw
";

    #[test]
    fn mountinfo_and_longest_mount() {
        let mounts = parse_mountinfo(MOUNTINFO);
        assert_eq!(mounts.len(), 5);
        assert_eq!(mounts[3].mount_point, PathBuf::from("/data/my dir"));
        assert_eq!(mounts[3].source, "tmp fs");
        let of = |p: &str| mount_of(&mounts, Path::new(p)).map(|m| m.dev.as_str());
        assert_eq!(of("/var/lib"), Some("8:1"));
        assert_eq!(
            of("/data/pg"),
            Some("259:3"),
            "the later mount on /data wins"
        );
        assert_eq!(of("/data/my dir/x"), Some("0:50"));
        assert_eq!(
            of("/database"),
            Some("8:1"),
            "prefixes match whole components"
        );
    }

    /// A fake sysfs with a partitioned rotational disk `sdb` and an
    /// unpartitioned SSD `vda`.
    fn fake_sys() -> tempfile::TempDir {
        let sys = tempfile::tempdir().unwrap();
        let s = sys.path();
        for (disk, rot) in [
            ("devices/pci0/block/sdb", "1"),
            ("devices/virtio1/block/vda", "0"),
        ] {
            fs::create_dir_all(s.join(disk).join("queue")).unwrap();
            fs::write(s.join(disk).join("dev"), "x\n").unwrap();
            fs::write(s.join(disk).join("queue/rotational"), format!("{rot}\n")).unwrap();
        }
        let part = s.join("devices/pci0/block/sdb/sdb1");
        fs::create_dir_all(&part).unwrap();
        fs::write(part.join("dev"), "8:17\n").unwrap();
        fs::write(part.join("partition"), "1\n").unwrap();
        fs::create_dir_all(s.join("dev/block")).unwrap();
        fs::create_dir_all(s.join("class/block")).unwrap();
        symlink(
            "../../devices/pci0/block/sdb/sdb1",
            s.join("dev/block/8:17"),
        )
        .unwrap();
        symlink("../../devices/virtio1/block/vda", s.join("dev/block/254:0")).unwrap();
        symlink(
            "../../devices/pci0/block/sdb/sdb1",
            s.join("class/block/sdb1"),
        )
        .unwrap();
        sys
    }

    #[test]
    fn partitions_resolve_to_their_disk() {
        let sys = fake_sys();
        let s = sys.path();
        let disk = whole_disk(&s.join("dev/block/8:17")).unwrap();
        assert_eq!(disk.file_name().unwrap(), "sdb");
        let disk = whole_disk(&s.join("dev/block/254:0")).unwrap();
        assert_eq!(disk.file_name().unwrap(), "vda");
        assert_eq!(whole_disk(&s.join("dev/block/0:50")), None);
    }

    #[test]
    fn storage_of_a_path_uses_the_mount() {
        let sys = fake_sys();
        let data = tempfile::tempdir().unwrap();
        let canonical = fs::canonicalize(data.path()).unwrap();
        // A mount table where the temp dir is an xfs mount of sdb1, and its
        // st_dev is unknown to the fake sysfs: found through the mount.
        let mountinfo = format!(
            "27 1 0:1 / / rw - ext4 /dev/nonexistent rw\n\
             40 27 8:17 / {} rw - xfs /dev/nonexistent2 rw\n",
            canonical.display()
        );
        let (major, minor) = dev_major_minor(fs::metadata(&canonical).unwrap().dev());
        let own = sys.path().join(format!("dev/block/{major}:{minor}"));
        if own.file_name().unwrap() != "8:17" {
            let _ = fs::remove_file(&own);
        }
        let not_yet = data.path().join("pgdata/base");
        let f = storage(&not_yet, sys.path(), &mountinfo);
        assert_eq!(f.path, not_yet.display().to_string());
        assert_eq!(f.filesystem, "xfs");
        assert_eq!(f.device, "sdb");
        assert_eq!(f.rotational, Some(true));

        // The file's own st_dev comes first when sysfs knows it.
        if own.file_name().unwrap() != "8:17" {
            symlink("../../devices/virtio1/block/vda", &own).unwrap();
            let f = storage(&not_yet, sys.path(), &mountinfo);
            assert_eq!(f.device, "vda");
            assert_eq!(f.rotational, Some(false));
        }
    }

    #[test]
    fn collect_on_this_host_never_fails() {
        let data = tempfile::tempdir().unwrap();
        let facts = collect(Some(data.path()));
        assert!(facts.cores >= 1);
        assert!(facts.memory_bytes > 0);
        assert!(!facts.kernel.is_empty());
        assert!(!facts.hostname.is_empty());
        let storage = facts.storage.unwrap();
        assert!(!storage.filesystem.is_empty());
        let json = serde_json::to_string(&collect(None)).unwrap();
        let back: HostFacts = serde_json::from_str(&json).unwrap();
        assert_eq!(back.storage, None);
        // Older records with fewer facts still load.
        let old: HostFacts = serde_json::from_str(r#"{"hostname":"h"}"#).unwrap();
        assert_eq!(old.hostname, "h");
    }
}
