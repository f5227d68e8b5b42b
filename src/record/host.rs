//! What the host a run happened on is: the facts every run records so two
//! runs can be told comparable (collected by `metrics::host`).

use serde::{Deserialize, Serialize};

/// What the host a run happened on is.
///
/// Stored as JSON with each run; `#[serde(default)]` lets runs stored by
/// builds that knew fewer facts still load.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct HostFacts {
    pub hostname: String,
    /// Online CPUs (hardware threads).
    pub cores: u32,
    /// Total memory (`MemTotal` of `/proc/meminfo`), bytes.
    pub memory_bytes: u64,
    /// Kernel release, as `uname -r` prints it.
    pub kernel: String,
    /// Distribution name (`PRETTY_NAME` of `/etc/os-release`).
    pub os: String,
    /// CPU model (`model name` of `/proc/cpuinfo`).
    pub cpu_model: String,
    /// The storage under the data directory, when one was given.
    pub storage: Option<StorageFacts>,
}

/// The storage a data directory lives on.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct StorageFacts {
    /// The data directory, made absolute.
    pub path: String,
    /// Whole-disk block device name (`vda`, `nvme0n1`, `dm-0`); empty when
    /// the filesystem has no block device (tmpfs, overlay) or it is unknown.
    pub device: String,
    /// Filesystem type of the mount holding the path (`ext4`, `xfs`).
    pub filesystem: String,
    /// Whether the kernel reports the disk as rotational (spinning).
    pub rotational: Option<bool>,
}
