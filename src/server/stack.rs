//! The same initial stack for every server of a run, whatever its paths.
//!
//! A program's first stack frame sits below what the kernel (or Valgrind,
//! which builds its client's stack itself) copies to the top of the
//! stack: the program's path, its arguments and its environment. Two
//! servers of one build whose install or data directory paths differ in
//! length therefore start their stacks at other offsets within a page,
//! every local variable of every function moves with it, and work that
//! depends on an address's offset in its page differs: glibc's `memcmp`
//! takes another path when a key on the stack lies close to a page's end.
//! Under Valgrind, which lays a stack out the same way every time, a copy
//! of one build at a 44-character-longer path executed 25 to 739
//! instructions per statement more or fewer than the original, and a
//! planted patch's measured cost was off by up to 29 % on some tests.
//!
//! So a managed server is started through a path of the same length for
//! every install ([`fixed_length_path`]: a link named by a hash of the
//! install's directory; PostgreSQL always, MariaDB and MySQL under
//! Valgrind, where their option file names the real basedir), and its environment is padded so that its
//! arguments and environment take a whole number of pages
//! ([`even_out`]). Then every server of one family has the same stack
//! offsets, under Valgrind exactly. Without Valgrind the kernel moves
//! the stack by a random amount anyway (address space randomisation);
//! the padding changes nothing there.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable whose value pads a server's initial stack.
pub const PAD_VAR: &str = "TIDEMARK_STACK_PAD";

/// What the arguments and environment are padded to a multiple of, bytes:
/// a page, so every offset within a page comes out the same.
const PAD_UNIT: usize = 4096;

/// Bytes of one pointer in the argument and environment arrays.
const POINTER: usize = 8;

/// `program` reached through a path whose length depends on nothing but
/// the user: `TMPDIR/tidemark-exec-UID/HASH/NAME`, where `HASH` (16 hex
/// digits) names a link to `program`'s directory. The program still finds
/// its own files through the link (PostgreSQL resolves it to the real
/// directory). On any failure the program's own path, with the reason.
pub fn fixed_length_path(program: &Path) -> Result<PathBuf, String> {
    let (Some(dir), Some(name)) = (program.parent(), program.file_name()) else {
        return Err(format!("{} has no directory", program.display()));
    };
    let mut hasher = DefaultHasher::new();
    dir.hash(&mut hasher);
    let root = std::env::temp_dir().join(format!("tidemark-exec-{}", nix::unistd::getuid()));
    let link = root.join(format!("{:016x}", hasher.finish()));
    let made = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(&root)?;
        if std::fs::read_link(&link).ok().as_deref() == Some(dir) {
            return Ok(());
        }
        // A new link replaces a stale one in one step; the temporary name
        // is this call's own, so servers started at once do not collide.
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let call = CALLS.fetch_add(1, Ordering::Relaxed);
        let tmp = root.join(format!(
            ".{}.{}.{call}",
            hasher.finish(),
            std::process::id()
        ));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(dir, &tmp)?;
        std::fs::rename(&tmp, &link)
    })();
    made.map(|()| link.join(name)).map_err(|e| {
        format!(
            "cannot link {} under {}: {e}",
            dir.display(),
            root.display()
        )
    })
}

/// Pads `cmd`'s environment with [`PAD_VAR`] so that the program's
/// arguments (its path first) and environment, strings with their NULs
/// and one pointer each, take a multiple of [`PAD_UNIT`] bytes. When `cmd`
/// is Valgrind, the program is the one Valgrind runs: its first argument
/// that is not an option, and the arguments after it. The environment is
/// tidemark's with `cmd`'s changes (tidemark never clears a server's).
pub fn even_out(cmd: &mut Command) {
    let args: Vec<&OsStr> = cmd.get_args().collect();
    let program = cmd.get_program();
    let argv: Vec<&OsStr> = if Path::new(program).file_name() == Some(OsStr::new("valgrind")) {
        match args.iter().position(|a| !a.as_bytes().starts_with(b"-")) {
            Some(first) => args[first..].to_vec(),
            None => return,
        }
    } else {
        std::iter::once(program).chain(args).collect()
    };
    let mut env: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => env.insert(key.to_owned(), v.to_owned()),
            None => env.remove(key),
        };
    }
    env.remove(OsStr::new(PAD_VAR));
    let lengths = argv
        .iter()
        .map(|a| a.len())
        .chain(env.iter().map(|(k, v)| k.len() + 1 + v.len()));
    let pad = pad_for(lengths);
    cmd.env(PAD_VAR, "x".repeat(pad));
}

/// The pad (bytes of [`PAD_VAR`]'s value) that brings strings of these
/// lengths, each with its NUL and pointer, plus the pad's own entry, to a
/// multiple of [`PAD_UNIT`].
fn pad_for(lengths: impl Iterator<Item = usize>) -> usize {
    let used: usize = lengths.map(|len| len + 1 + POINTER).sum();
    let own = PAD_VAR.len() + 1 + 1 + POINTER;
    (PAD_UNIT - (used + own) % PAD_UNIT) % PAD_UNIT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pad_fills_to_a_page_whatever_the_lengths() {
        for lengths in [vec![], vec![10, 200], vec![4000, 4000, 4000]] {
            let pad = pad_for(lengths.iter().copied());
            let total: usize = lengths.iter().map(|l| l + 1 + POINTER).sum::<usize>()
                + PAD_VAR.len()
                + 1
                + pad
                + 1
                + POINTER;
            assert_eq!(total % PAD_UNIT, 0, "{lengths:?}");
            assert!(pad < PAD_UNIT);
        }
    }

    /// The pad [`even_out`] gives `cmd`.
    fn pad_given(mut cmd: Command) -> usize {
        even_out(&mut cmd);
        cmd.get_envs()
            .find(|(k, _)| *k == OsStr::new(PAD_VAR))
            .and_then(|(_, v)| v)
            .map(|v| v.len())
            .unwrap()
    }

    #[test]
    fn two_paths_of_other_lengths_get_pads_that_even_them_out() {
        let pad_of = |program: &str| {
            let mut cmd = Command::new(program);
            cmd.arg("-D").arg("/data").env("LC_ALL", "C");
            pad_given(cmd)
        };
        let short = pad_of("/a/postgres");
        let long = pad_of("/a/longer-by-ten/postgres");
        assert_eq!((short + PAD_UNIT - long) % PAD_UNIT, "longer-by-ten/".len());
        // Under Valgrind only the client's path and arguments count, not
        // Valgrind's options.
        let mut vg = Command::new("valgrind");
        vg.args([
            "--tool=callgrind",
            "--trace-children=yes",
            "/a/postgres",
            "-D",
            "/data",
        ])
        .env("LC_ALL", "C");
        assert_eq!(pad_given(vg), short);
    }

    #[test]
    fn one_directory_gets_one_link_of_a_fixed_length() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("bin");
        let b = dir.path().join("a-much-longer-install-directory/bin");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(a.join("prog"), "").unwrap();
        std::fs::write(b.join("prog"), "").unwrap();
        let la = fixed_length_path(&a.join("prog")).unwrap();
        let lb = fixed_length_path(&b.join("prog")).unwrap();
        assert_eq!(la.as_os_str().len(), lb.as_os_str().len());
        assert_ne!(la, lb);
        assert_eq!(
            std::fs::canonicalize(&la).unwrap(),
            std::fs::canonicalize(a.join("prog")).unwrap()
        );
        assert_eq!(fixed_length_path(&a.join("prog")).unwrap(), la);
    }
}
