//! The steps of a source build — copy, patch, configure, make, make
//! install — run with their output in one log file, and the facts a build
//! records (source version and revision, compiler, optional features).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::BuildRequest;

/// A step of a build, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Copying the source tree to a scratch directory.
    Copy,
    /// Applying the patches.
    Patch,
    Configure,
    /// `make`.
    Build,
    /// `make install`.
    Install,
}

impl Step {
    /// Its name on the progress line.
    pub fn label(self) -> &'static str {
        match self {
            Step::Copy => "copy source",
            Step::Patch => "patch",
            Step::Configure => "configure",
            Step::Build => "build",
            Step::Install => "install",
        }
    }
}

/// What a build tells its caller while it runs.
#[derive(Clone, Debug, PartialEq)]
pub enum BuildEvent {
    /// A step began; `log` is where its output goes.
    Started { step: Step, log: PathBuf },
    /// `make` compiled `done` of about `total` files.
    Progress { done: u64, total: u64 },
    /// A step ended well.
    Finished { step: Step, secs: f64 },
}

/// The release a configure script says it builds (`PACKAGE_VERSION='15.18'`).
pub fn configure_version(configure: &str) -> Option<String> {
    configure.lines().find_map(|l| {
        let v = l.strip_prefix("PACKAGE_VERSION='")?.strip_suffix('\'')?;
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The first line of the C compiler's `--version`: `CC` when set (it may
/// name a wrapper first, `ccache gcc`, as configure allows), else gcc
/// (configure's choice when CC is unset and gcc is present).
pub fn compiler_version() -> Result<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".into());
    let mut words = cc.split_whitespace();
    let program = words.next().unwrap_or("gcc");
    let out = Command::new(program)
        .args(words)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot run the C compiler {cc} ({e}): install one (Debian: apt-get install \
                 build-essential) or set CC"
            )
        })?;
    if !out.status.success() {
        anyhow::bail!(
            "the C compiler {cc} failed to say its version: set CC to a working compiler"
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or(&cc)
        .trim()
        .to_string())
}

/// The git commit of `src` (with `-dirty` when it has changes), else what
/// a release tree says of itself.
pub fn source_revision(src: &Path) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(src)
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if src.join(".git").exists()
        && let Some(commit) = git(&["rev-parse", "HEAD"])
    {
        let dirty =
            git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        return format!("git {commit}{}", if dirty { "-dirty" } else { "" });
    }
    if let Ok(note) = std::fs::read_to_string(src.join(super::fetch::SOURCE_NOTE)) {
        return note.trim().to_string();
    }
    "release tree (no git)".to_string()
}

/// configure options for the optional libraries: on where this source
/// knows them and the machine has them (pkg-config), off otherwise; no
/// readline (the server does not need it).
pub fn optional_features(configure: &str) -> Vec<String> {
    let knows = |opt: &str| configure.contains(&format!("with_{opt}"));
    let has = |pkg: &str| {
        Command::new("pkg-config")
            .args(["--exists", pkg])
            .stdin(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let mut args = vec!["--without-readline".to_string()];
    if knows("icu") && !has("icu-uc") {
        args.push("--without-icu".into());
    }
    if !has("zlib") {
        args.push("--without-zlib".into());
    }
    for (opt, pkg) in [
        ("lz4", "liblz4"),
        ("zstd", "libzstd"),
        ("liburing", "liburing"),
    ] {
        if knows(opt) && has(pkg) {
            args.push(format!("--with-{opt}"));
        }
    }
    args
}

/// A scratch directory in the cache, removed when dropped; `inst` is the
/// installed tree until [`Staging::move_to`] moves it into place.
pub struct Staging {
    work: PathBuf,
    inst: PathBuf,
}

impl Staging {
    /// The installed tree.
    pub fn path(&self) -> &Path {
        &self.inst
    }

    /// Moves the installed tree to `dest` (the scratch rest is removed on
    /// drop).
    pub fn move_to(&self, dest: &Path) -> Result<()> {
        std::fs::rename(&self.inst, dest)
            .with_context(|| format!("cannot move the build to {}", dest.display()))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.work);
    }
}

/// Removes scratch directories of builds whose process is gone (a build
/// stopped by Ctrl-C or a crash cannot remove its own).
pub fn remove_stale_scratch(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(".build-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn scratch(root: &Path) -> Result<PathBuf> {
    remove_stale_scratch(root);
    for n in 0..1000 {
        let dir = root.join(format!(".build-{}-{n}", std::process::id()));
        if std::fs::create_dir(&dir).is_ok() {
            return Ok(dir);
        }
    }
    bail!("cannot create a build directory in {}", root.display())
}

/// Copies, patches, configures, builds and installs; returns the installed
/// tree in a scratch directory under `root`.
pub fn run(
    req: &BuildRequest,
    configure_args: &[String],
    root: &Path,
    log: &Path,
    event: &mut dyn FnMut(super::BuildEvent),
) -> Result<Staging> {
    let work = scratch(root)?;
    let staging = Staging {
        inst: work.join("install"),
        work: work.clone(),
    };
    std::fs::write(log, "")
        .with_context(|| format!("cannot write the build log {}", log.display()))?;
    let tree = work.join("src");
    let step = |step: Step, cmd: Command, event: &mut dyn FnMut(BuildEvent)| {
        event(BuildEvent::Started {
            step,
            log: log.to_path_buf(),
        });
        let started = Instant::now();
        run_logged(step, cmd, log, &tree, req.cancel, event)?;
        event(BuildEvent::Finished {
            step,
            secs: started.elapsed().as_secs_f64(),
        });
        anyhow::Ok(())
    };

    let mut cp = Command::new("cp");
    cp.arg("-a").arg(&req.src).arg(&tree);
    step(Step::Copy, cp, event)?;
    for p in &req.patches {
        let abs = p
            .canonicalize()
            .with_context(|| format!("patch {}", p.display()))?;
        let mut patch = Command::new("patch");
        patch
            .args(["-p1", "--batch", "--forward", "-i"])
            .arg(abs)
            .current_dir(&tree);
        step(Step::Patch, patch, event)?;
    }
    let mut configure = Command::new(tree.join("configure"));
    configure
        .arg(format!("--prefix={}", staging.inst.display()))
        .args(configure_args)
        .arg(format!("CFLAGS={}", req.flags.cflags))
        .current_dir(&tree);
    if !req.flags.ldflags.is_empty() {
        configure.arg(format!("LDFLAGS={}", req.flags.ldflags));
    }
    let config_cache = ConfigCache::of(&tree, &configure, root);
    configure.arg(format!("--cache-file={}", config_cache.local.display()));
    step(Step::Configure, configure, event)?;
    config_cache.keep();
    let mut make = Command::new("make");
    make.arg(format!("-j{}", req.jobs.max(1)))
        .current_dir(&tree);
    step(Step::Build, make, event)?;
    let mut install = Command::new("make");
    install.arg("install").current_dir(&tree);
    step(Step::Install, install, event)?;
    Ok(staging)
}

/// configure's results kept between builds of the same configure script,
/// arguments (but the install prefix), compiler, PATH and precious
/// variables (`ac_precious_vars`: CC, CFLAGS, PKG_CONFIG, …): a patched
/// build of a source built before skips most of configure's checks (17.5 s
/// of a 67 s ccache build of PostgreSQL 15 here). Best effort: a cache that
/// cannot be read or written only costs the time.
struct ConfigCache {
    /// The cache file configure reads and writes, in the build tree.
    local: PathBuf,
    /// Where it is kept between builds, under the install cache.
    kept: PathBuf,
}

impl ConfigCache {
    fn of(tree: &Path, configure: &Command, root: &Path) -> ConfigCache {
        use sha2::{Digest, Sha256};
        let script = std::fs::read(tree.join("configure")).unwrap_or_default();
        let text = String::from_utf8_lossy(&script);
        let mut h = Sha256::new();
        h.update(&script);
        for arg in configure.get_args().filter_map(|a| a.to_str()) {
            if !arg.starts_with("--prefix=") {
                h.update(arg.as_bytes());
                h.update([0]);
            }
        }
        let mut names = vec!["PATH".to_string()];
        names.extend(precious_vars(&text));
        for name in names {
            let value = std::env::var(&name).unwrap_or_default();
            h.update(format!("{name}={value}").as_bytes());
            h.update([0]);
        }
        h.update(compiler_version().unwrap_or_default().as_bytes());
        let key = crate::server::package::hex(&h.finalize());
        let local = tree.join("config.cache");
        let kept = root
            .join("configure-cache")
            .join(format!("{}.cache", &key[..16]));
        let _ = std::fs::copy(&kept, &local);
        ConfigCache { local, kept }
    }

    /// Keeps the cache a successful configure wrote (a rename, so a build
    /// beside this one reads a whole file or none).
    fn keep(&self) {
        let Some(dir) = self.kept.parent() else {
            return;
        };
        let tmp = dir.join(format!(".{}.tmp", std::process::id()));
        let _ = std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::copy(&self.local, &tmp))
            .and_then(|_| std::fs::rename(&tmp, &self.kept));
        let _ = std::fs::remove_file(&tmp);
    }
}

/// The variables a configure script declares precious (its
/// `ac_precious_vars` lists): their values are part of its cache's key.
fn precious_vars(configure: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = configure;
    while let Some(at) = rest.find("ac_precious_vars=") {
        rest = &rest[at + "ac_precious_vars=".len()..];
        let Some(body) = rest.strip_prefix('\'') else {
            continue;
        };
        let end = body.find('\'').unwrap_or(body.len());
        names.extend(
            body[..end]
                .split_whitespace()
                .map(|n| n.trim_start_matches("$ac_precious_vars").to_string())
                .filter(|n| !n.is_empty()),
        );
        rest = &body[end..];
    }
    names
}

/// Runs one step with its output appended to `log`; reports `make`'s
/// progress by counting compiler lines against the C files in the tree.
fn run_logged(
    step: Step,
    mut cmd: Command,
    log: &Path,
    tree: &Path,
    cancel: Option<&AtomicBool>,
    event: &mut dyn FnMut(BuildEvent),
) -> Result<()> {
    let out = std::fs::OpenOptions::new().append(true).open(log)?;
    let err = out.try_clone()?;
    let start_len = out.metadata()?.len();
    // Its own process group, so a stop reaches make's children too.
    cmd.stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .env("LC_ALL", "C")
        .process_group(0);
    let mut child: Child = cmd
        .spawn()
        .with_context(|| format!("cannot start the {} step", step.label()))?;
    let total = if step == Step::Build {
        count_c_files(&tree.join("src"))
    } else {
        0
    };
    let mut done = 0u64;
    let mut offset = start_len;
    let mut carry = String::new();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
            let group = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGTERM);
            let _ = child.wait();
            bail!(
                "{} interrupted: nothing was installed (its output is in {})",
                step.label(),
                log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
        if step == Step::Build {
            done += count_compiles(log, &mut offset, &mut carry);
            event(BuildEvent::Progress {
                done: done.min(total),
                total,
            });
        }
    };
    if !status.success() {
        let last = last_error_line(log).map_or(String::new(), |l| format!(": {l}"));
        bail!(
            "{} failed ({status}); the output is in {}{last}",
            step.label(),
            log.display()
        );
    }
    Ok(())
}

/// Compiler invocations in the log since `offset` (lines with ` -c `).
fn count_compiles(log: &Path, offset: &mut u64, carry: &mut String) -> u64 {
    let Ok(mut f) = File::open(log) else {
        return 0;
    };
    if f.seek(SeekFrom::Start(*offset)).is_err() {
        return 0;
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return 0;
    }
    *offset += buf.len() as u64;
    carry.push_str(&String::from_utf8_lossy(&buf));
    let complete = carry.rfind('\n').map_or(0, |i| i + 1);
    let n = carry[..complete]
        .lines()
        .filter(|l| l.contains(" -c ") && l.contains(".c"))
        .count();
    carry.drain(..complete);
    n as u64
}

/// C files `make` compiles, roughly: those under `src/` outside the tests
/// and the tutorial.
fn count_c_files(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name();
        if path.is_dir() {
            if name != "test" && name != "tutorial" {
                n += count_c_files(&path);
            }
        } else if path.extension().is_some_and(|x| x == "c") {
            n += 1;
        }
    }
    n
}

/// The last line of the log that reads as an error, shortened.
fn last_error_line(log: &Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text.lines().rev().find(|l| {
        let l = l.to_ascii_lowercase();
        l.contains("error") && !l.contains("-werror")
    })?;
    let line = line.trim();
    Some(if line.chars().count() > 160 {
        format!("{}…", line.chars().take(160).collect::<String>())
    } else {
        line.to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configures_precious_variables_key_its_cache() {
        let text = "ac_subst_files=''\n      ac_precious_vars='build_alias\nCC\nCFLAGS\nPKG_CONFIG'\n\nfor ac_var in $ac_precious_vars; do\n";
        assert_eq!(
            precious_vars(text),
            ["build_alias", "CC", "CFLAGS", "PKG_CONFIG"]
        );
        assert!(precious_vars("echo hi\n").is_empty());
    }

    #[test]
    fn configure_names_the_version() {
        let text = "PACKAGE_NAME='PostgreSQL'\nPACKAGE_VERSION='15.18'\n";
        assert_eq!(configure_version(text).as_deref(), Some("15.18"));
        assert_eq!(
            configure_version("PACKAGE_VERSION='19beta1'\n").as_deref(),
            Some("19beta1")
        );
        assert_eq!(configure_version("echo hi\n"), None);
    }

    #[test]
    fn compile_lines_are_counted_once_across_reads() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(
            &log,
            "gcc -O2 -c -o a.o a.c\nmake[1]: Entering\ngcc -O2 -c -o b",
        )
        .unwrap();
        let (mut offset, mut carry) = (0, String::new());
        assert_eq!(count_compiles(&log, &mut offset, &mut carry), 1);
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut f, b".o b.c\n").unwrap();
        assert_eq!(count_compiles(&log, &mut offset, &mut carry), 1);
        assert_eq!(count_compiles(&log, &mut offset, &mut carry), 0);
    }

    #[test]
    fn the_revision_is_the_git_commit_and_says_dirty() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path();
        assert_eq!(source_revision(src), "release tree (no git)");
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(src)
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(src.join("configure"), "PACKAGE_VERSION='19beta1'\n").unwrap();
        git(&["add", "configure"]);
        git(&["commit", "-qm", "x"]);
        let clean = source_revision(src);
        assert!(clean.starts_with("git ") && clean.len() == 44, "{clean}");
        std::fs::write(src.join("configure"), "changed\n").unwrap();
        assert_eq!(source_revision(src), format!("{clean}-dirty"));
    }

    #[test]
    fn scratch_of_dead_builds_is_removed_and_live_ones_kept() {
        let root = tempfile::tempdir().unwrap();
        let dead = root.path().join(".build-4194304999-0");
        let live = root.path().join(format!(".build-{}-0", std::process::id()));
        let other = root.path().join("15.18_o2nofp");
        for d in [&dead, &live, &other] {
            std::fs::create_dir_all(d.join("src")).unwrap();
        }
        remove_stale_scratch(root.path());
        assert!(!dead.exists() && live.exists() && other.exists());
    }

    #[test]
    fn a_cancelled_step_stops_its_whole_process_group() {
        static CANCEL: AtomicBool = AtomicBool::new(false);
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("build.log");
        std::fs::write(&log, "").unwrap();
        let pid_file = dir.path().join("pid");
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("sleep 60 & echo $! > {}; wait", pid_file.display()));
        let setter = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(500));
            CANCEL.store(true, Ordering::SeqCst);
        });
        let started = Instant::now();
        let err = run_logged(
            Step::Build,
            cmd,
            &log,
            dir.path(),
            Some(&CANCEL),
            &mut |_| {},
        )
        .unwrap_err()
        .to_string();
        setter.join().unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(
            err.starts_with("build interrupted: nothing was installed"),
            "{err}"
        );
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
        assert!(
            stat.map_or(true, |s| s.contains(") Z ")),
            "the grandchild sleep is gone"
        );
    }

    #[test]
    fn a_failed_step_names_its_log_and_last_error() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("build.log");
        std::fs::write(&log, "").unwrap();
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "echo 'checking for cc... yes'; echo 'configure: error: no bison' >&2; exit 1",
        ]);
        let err = run_logged(Step::Configure, cmd, &log, dir.path(), None, &mut |_| {})
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "configure failed (exit status: 1); the output is in {}: configure: error: no \
                 bison",
                log.display()
            )
        );
        assert!(!err.contains('\n'));
    }
}
