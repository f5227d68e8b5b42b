//! Which block devices hold a data directory, named as `iostat` names them,
//! so the per-second disk counters are those of the disks the server
//! actually uses.
//!
//! The filesystem under the directory is found from its device number (and
//! the mount table); a partition stands for its whole disk, device-mapper
//! and md RAID devices for the disks under them (their `slaves`), and a loop
//! device for the disk holding its backing file. `--device NAME` overrides
//! all of this. A directory with no block device (tmpfs, overlay, a network
//! filesystem) gets a reason instead of a device, and its disk metrics are
//! stored as missing.

use std::fs;
use std::path::{Path, PathBuf};

use super::host::{block_device_links, mount_of, parse_mountinfo, read, whole_disk};
use super::procfs::diskstats_has;

/// Loop devices backed by files on loop devices, and so on, stop here.
const MAX_DEPTH: usize = 8;

/// The disks (as `/proc/diskstats` names them, sorted, without duplicates)
/// under `path`, or why there are none.
pub fn devices_for_path(path: &Path) -> Result<Vec<String>, String> {
    let mountinfo = read("/proc/self/mountinfo");
    let mut out = Vec::new();
    resolve(path, Path::new("/sys"), &mountinfo, 0, &mut out)?;
    out.sort();
    out.dedup();
    Ok(out)
}

/// Checks `--device` names against `/proc/diskstats`; the error is one line
/// naming the devices that exist.
pub fn check_device_names(names: &[String]) -> Result<(), String> {
    let diskstats = read("/proc/diskstats");
    for name in names {
        if !diskstats_has(&diskstats, name) {
            let mut known: Vec<String> = fs::read_dir("/sys/block")
                .map(|d| {
                    d.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| !n.starts_with("loop") && !n.starts_with("ram"))
                        .collect()
                })
                .unwrap_or_default();
            known.sort();
            return Err(format!(
                "--device {name}: no block device of that name in /proc/diskstats: pass one of {}",
                if known.is_empty() {
                    "the names /proc/diskstats lists".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    Ok(())
}

fn resolve(
    path: &Path,
    sys: &Path,
    mountinfo: &str,
    depth: usize,
    out: &mut Vec<String>,
) -> Result<(), String> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let existing = absolute
        .ancestors()
        .find(|p| p.exists())
        .ok_or_else(|| format!("{} does not exist", absolute.display()))?;
    let canonical = fs::canonicalize(existing).unwrap_or_else(|_| existing.to_path_buf());
    let mounts = parse_mountinfo(mountinfo);
    let mount = mount_of(&mounts, &canonical);

    let candidates = block_device_links(&canonical, mount, sys);
    let Some(block) = candidates.iter().find_map(|c| block_dir(c)) else {
        let (fstype, source) = mount
            .map(|m| (m.fstype.as_str(), m.source.as_str()))
            .unwrap_or(("unknown", "unknown"));
        return Err(format!(
            "{} is on a {fstype} filesystem ({source}) with no block device: pass --device NAME to watch a disk",
            canonical.display()
        ));
    };
    expand(&block, sys, mountinfo, depth, out)
}

/// The canonical sysfs directory of a block device link, if it is one.
fn block_dir(link: &Path) -> Option<PathBuf> {
    let dir = fs::canonicalize(link).ok()?;
    dir.join("dev").exists().then_some(dir)
}

/// Adds the disks behind the block device at sysfs directory `dir`.
fn expand(
    dir: &Path,
    sys: &Path,
    mountinfo: &str,
    depth: usize,
    out: &mut Vec<String>,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "{}: block devices nested more than {MAX_DEPTH} deep",
            dir.display()
        ));
    }
    if dir.join("partition").exists() {
        let disk = whole_disk(dir)
            .ok_or_else(|| format!("{}: a partition whose disk is not in sysfs", dir.display()))?;
        return expand(&disk, sys, mountinfo, depth + 1, out);
    }
    let mut slaves: Vec<PathBuf> = fs::read_dir(dir.join("slaves"))
        .map(|d| d.flatten().filter_map(|e| block_dir(&e.path())).collect())
        .unwrap_or_default();
    if !slaves.is_empty() {
        slaves.sort();
        for slave in slaves {
            expand(&slave, sys, mountinfo, depth + 1, out)?;
        }
        return Ok(());
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let backing = read(dir.join("loop/backing_file"));
    if name.starts_with("loop") && !backing.is_empty() {
        let file = backing.trim_end_matches(" (deleted)");
        return resolve(Path::new(file), sys, mountinfo, depth + 1, out);
    }
    out.push(name);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, symlink};

    use crate::metrics::host::dev_major_minor;

    /// A fake sysfs: disks sda (partitioned), sdb, nvme0n1, nvme1n1 (both
    /// partitioned), vdz; dm-0 over sda2 and sdb; md0 over the two nvme
    /// partitions; loop0 backed by a file in `backing_dir`, whose device
    /// number is mapped to vdz.
    fn fake_sys(backing_dir: &Path) -> tempfile::TempDir {
        let sys = tempfile::tempdir().unwrap();
        let s = sys.path();
        let dev = |rel: &str| {
            let d = s.join(rel);
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("dev"), "x\n").unwrap();
            d
        };
        for disk in ["sda", "sdb", "nvme0n1", "nvme1n1", "vdz"] {
            dev(&format!("devices/pci/block/{disk}"));
        }
        for part in ["sda/sda2", "nvme0n1/nvme0n1p1", "nvme1n1/nvme1n1p1"] {
            let d = dev(&format!("devices/pci/block/{part}"));
            fs::write(d.join("partition"), "1\n").unwrap();
        }
        let dm = dev("devices/virtual/block/dm-0");
        fs::create_dir_all(dm.join("slaves")).unwrap();
        symlink("../../../../pci/block/sda/sda2", dm.join("slaves/sda2")).unwrap();
        symlink("../../../../pci/block/sdb", dm.join("slaves/sdb")).unwrap();
        let md = dev("devices/virtual/block/md0");
        fs::create_dir_all(md.join("slaves")).unwrap();
        symlink(
            "../../../../pci/block/nvme0n1/nvme0n1p1",
            md.join("slaves/nvme0n1p1"),
        )
        .unwrap();
        symlink(
            "../../../../pci/block/nvme1n1/nvme1n1p1",
            md.join("slaves/nvme1n1p1"),
        )
        .unwrap();
        let lo = dev("devices/virtual/block/loop0");
        fs::create_dir_all(lo.join("loop")).unwrap();
        fs::write(
            lo.join("loop/backing_file"),
            format!("{}\n", backing_dir.join("disk.img").display()),
        )
        .unwrap();
        fs::create_dir_all(s.join("dev/block")).unwrap();
        let (major, minor) = dev_major_minor(fs::metadata(backing_dir).unwrap().dev());
        symlink(
            "../../devices/pci/block/vdz",
            s.join(format!("dev/block/{major}:{minor}")),
        )
        .unwrap();
        sys
    }

    fn disks_of(sys: &Path, rel: &str) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        let dir = fs::canonicalize(sys.join(rel)).unwrap();
        expand(&dir, sys, "", 0, &mut out)?;
        Ok(out)
    }

    #[test]
    fn partitions_dm_md_and_loop_resolve_to_disks() {
        let backing = tempfile::tempdir().unwrap();
        let sys = fake_sys(backing.path());
        let s = sys.path();
        assert_eq!(disks_of(s, "devices/pci/block/sda/sda2").unwrap(), ["sda"]);
        assert_eq!(disks_of(s, "devices/pci/block/sdb").unwrap(), ["sdb"]);
        assert_eq!(
            disks_of(s, "devices/virtual/block/dm-0").unwrap(),
            ["sda", "sdb"]
        );
        assert_eq!(
            disks_of(s, "devices/virtual/block/md0").unwrap(),
            ["nvme0n1", "nvme1n1"]
        );
        assert_eq!(
            disks_of(s, "devices/virtual/block/loop0").unwrap(),
            ["vdz"],
            "a loop device stands for the disk of its backing file"
        );
    }

    #[test]
    fn a_filesystem_without_a_block_device_gives_a_reason() {
        let empty_sys = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let canonical = fs::canonicalize(data.path()).unwrap();
        let mountinfo = format!(
            "40 1 0:55 / {} rw - nfs4 server:/export rw\n",
            canonical.display()
        );
        let mut out = Vec::new();
        let e = resolve(data.path(), empty_sys.path(), &mountinfo, 0, &mut out).unwrap_err();
        assert!(e.contains("nfs4 filesystem (server:/export)"), "{e}");
        assert!(e.contains("--device"), "{e}");
        assert!(out.is_empty());
    }

    #[test]
    fn this_hosts_root_filesystem_resolves_or_explains() {
        let dir = tempfile::tempdir().unwrap();
        match devices_for_path(dir.path()) {
            Ok(devs) => {
                assert!(!devs.is_empty());
                let diskstats = read("/proc/diskstats");
                for d in &devs {
                    assert!(diskstats_has(&diskstats, d), "{d} is in /proc/diskstats");
                }
            }
            Err(reason) => assert!(reason.contains("no block device"), "{reason}"),
        }
    }

    #[test]
    fn unknown_device_names_are_refused_in_one_line() {
        let e = check_device_names(&["no-such-disk".to_string()]).unwrap_err();
        assert!(e.starts_with("--device no-such-disk: "), "{e}");
        assert!(!e.contains('\n'));
    }
}
