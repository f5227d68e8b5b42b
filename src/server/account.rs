//! The account a managed server runs as.
//!
//! PostgreSQL and MySQL refuse to run as root, so when tidemark is root it
//! starts each server as an unprivileged account ([`ServerUser`]) and must
//! check, before anything slow, that this account can reach the binaries and
//! the data directory, and hand it the files tidemark writes.

use std::io;
use std::os::unix::fs::{MetadataExt, lchown};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Result, bail};
use nix::unistd::{Uid, User};

/// The account a server runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerUser {
    /// tidemark is not root: the server runs as whoever runs tidemark.
    Current,
    /// tidemark is root: the server runs as this unprivileged account (its
    /// primary group only; supplementary groups are dropped).
    Account { name: String, uid: u32, gid: u32 },
}

impl ServerUser {
    /// The account for a server whose usual account is `preferred` (e.g.
    /// `postgres`): [`ServerUser::Current`] unless tidemark is root; as root,
    /// `preferred` if it exists, else `nobody`.
    pub fn detect(preferred: &str) -> Result<ServerUser> {
        let lookup = |name: &str| {
            User::from_name(name)
                .ok()
                .flatten()
                .map(|u| (u.uid.as_raw(), u.gid.as_raw()))
        };
        Self::choose(Uid::effective().is_root(), preferred, lookup)
    }

    /// The selection rule of [`ServerUser::detect`], with the account lookup
    /// passed in so it can be tested.
    pub fn choose(
        is_root: bool,
        preferred: &str,
        lookup: impl Fn(&str) -> Option<(u32, u32)>,
    ) -> Result<ServerUser> {
        if !is_root {
            return Ok(ServerUser::Current);
        }
        for name in [preferred, "nobody"] {
            if let Some((uid, gid)) = lookup(name) {
                if uid == 0 {
                    continue;
                }
                return Ok(ServerUser::Account {
                    name: name.to_string(),
                    uid,
                    gid,
                });
            }
        }
        bail!(
            "tidemark runs as root but neither user '{preferred}' nor 'nobody' exists \
             to run the server as: create one, or run tidemark as an ordinary user"
        )
    }

    /// The account's name (for `Current`, the name of the user running
    /// tidemark, or its uid if it has no name).
    pub fn name(&self) -> String {
        match self {
            ServerUser::Account { name, .. } => name.clone(),
            ServerUser::Current => {
                let uid = Uid::current();
                match User::from_uid(uid) {
                    Ok(Some(user)) => user.name,
                    _ => uid.to_string(),
                }
            }
        }
    }

    /// `(uid, gid)` to switch to, or `None` to stay as we are.
    pub fn ids(&self) -> Option<(u32, u32)> {
        match self {
            ServerUser::Current => None,
            ServerUser::Account { uid, gid, .. } => Some((*uid, *gid)),
        }
    }

    /// Makes `cmd` run as this account. std then also drops the
    /// supplementary groups (it calls `setgroups(0)` when root sets a uid).
    pub fn apply(&self, cmd: &mut Command) {
        if let Some((uid, gid)) = self.ids() {
            cmd.uid(uid).gid(gid);
        }
    }

    /// The first ancestor directory of `path` this account may not search
    /// (enter), judged from the permission bits; `None` if all are fine.
    /// `path` itself is not checked (tidemark creates and chowns it).
    pub fn blocked_ancestor(&self, path: &Path) -> Option<PathBuf> {
        let (uid, gid) = self.ids()?;
        for dir in path.ancestors().skip(1) {
            if dir.as_os_str().is_empty() {
                continue;
            }
            let Ok(meta) = std::fs::metadata(dir) else {
                return Some(dir.to_path_buf());
            };
            if !may_search(meta.mode(), meta.uid(), meta.gid(), uid, gid) {
                return Some(dir.to_path_buf());
            }
        }
        None
    }

    /// `chown -R` of `path` to this account (no-op for `Current`).
    /// Symbolic links are changed themselves, never followed.
    pub fn chown_tree(&self, path: &Path) -> io::Result<()> {
        let Some((uid, gid)) = self.ids() else {
            return Ok(());
        };
        chown_tree(path, uid, gid)
    }
}

fn chown_tree(path: &Path, uid: u32, gid: u32) -> io::Result<()> {
    lchown(path, Some(uid), Some(gid))
        .map_err(|e| io::Error::new(e.kind(), format!("chown {}: {e}", path.display())))?;
    if std::fs::symlink_metadata(path)?.is_dir() {
        for entry in std::fs::read_dir(path)? {
            chown_tree(&entry?.path(), uid, gid)?;
        }
    }
    Ok(())
}

/// Whether a user `uid` with the single group `gid` may search a directory
/// with `mode`, owned by `owner:group` (ACLs are not considered).
pub fn may_search(mode: u32, owner: u32, group: u32, uid: u32, gid: u32) -> bool {
    let bit = if uid == 0 {
        return true;
    } else if uid == owner {
        0o100
    } else if gid == group {
        0o010
    } else {
        0o001
    };
    mode & bit != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accounts(name: &str) -> Option<(u32, u32)> {
        match name {
            "postgres" => Some((101, 104)),
            "nobody" => Some((65534, 65534)),
            _ => None,
        }
    }

    #[test]
    fn not_root_runs_as_self() {
        let user = ServerUser::choose(false, "postgres", accounts).unwrap();
        assert_eq!(user, ServerUser::Current);
        assert_eq!(user.ids(), None);
    }

    #[test]
    fn root_prefers_the_named_account_then_nobody() {
        let user = ServerUser::choose(true, "postgres", accounts).unwrap();
        assert_eq!(user.ids(), Some((101, 104)));
        assert_eq!(user.name(), "postgres");
        let user = ServerUser::choose(true, "mysql", accounts).unwrap();
        assert_eq!(user.name(), "nobody");
        assert_eq!(user.ids(), Some((65534, 65534)));
        let err = ServerUser::choose(true, "mysql", |_| None).unwrap_err();
        assert!(
            err.to_string()
                .contains("neither user 'mysql' nor 'nobody'")
        );
        // A root-equivalent account is never a way out of root.
        let user = ServerUser::choose(true, "toor", |n| accounts(n).or(Some((0, 0)))).unwrap();
        assert_eq!(user.name(), "nobody");
    }

    #[test]
    fn search_permission_follows_owner_group_other() {
        assert!(may_search(0o700, 101, 104, 101, 1));
        assert!(!may_search(0o700, 0, 0, 101, 104));
        assert!(may_search(0o710, 0, 104, 101, 104));
        assert!(!may_search(0o770, 0, 0, 101, 104));
        assert!(may_search(0o701, 0, 0, 101, 104));
        assert!(may_search(0o000, 5, 5, 0, 0));
        // The owner bit alone decides for the owner, as in the kernel.
        assert!(!may_search(0o011, 101, 104, 101, 104));
    }
}
