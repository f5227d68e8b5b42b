//! PostgreSQL built from a source tree with a named flag set, so a plan can
//! compare `pg@15.18_o2nofp` with `pg@15.18_o3_native_lto` or with a patched
//! build, as the seeds compare their own builds.
//!
//! `tidemark servers build pg --src DIR --build o2nofp [--patch FILE]…`
//! copies the tree into a scratch directory of the install cache, applies
//! the patches in order, runs configure, `make` and `make install` (their
//! output goes to a log file kept beside the cache), and moves the
//! installed tree to `<cache>/pg/<version>_<build>`. The tree's
//! [`BUILD_MANIFEST`] records the flags, compiler, source version and
//! revision, patches and a fingerprint of them all; a second build with the
//! same inputs finds it and does nothing. The flag sets are data
//! (`config/postgres/builds.toml`).

pub mod fetch;
mod steps;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::PgBinaries;
use super::install::pg_cache;
use crate::server::package::hex;
use crate::server::process::ServerUser;
pub use steps::{BuildEvent, Step};

const BUILDS_TOML: &str = include_str!("../../../../config/postgres/builds.toml");

/// The file in each built tree that records how it was built.
pub const BUILD_MANIFEST: &str = "tidemark-build.json";

/// A named compiler flag set (`o2nofp`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagSet {
    #[serde(skip)]
    pub name: String,
    /// One line saying what it is.
    pub about: String,
    /// CFLAGS given to configure.
    pub cflags: String,
    /// LDFLAGS given to configure.
    #[serde(default)]
    pub ldflags: String,
}

/// Every shipped flag set, by name.
pub fn flag_sets() -> &'static [FlagSet] {
    static ALL: OnceLock<Vec<FlagSet>> = OnceLock::new();
    ALL.get_or_init(|| {
        let table: std::collections::BTreeMap<String, FlagSet> = toml::from_str(BUILDS_TOML)
            .unwrap_or_else(|e| panic!("shipped builds.toml is malformed: {e}"));
        table
            .into_iter()
            .map(|(name, mut f)| {
                f.name = name;
                f
            })
            .collect()
    })
}

/// The shipped flag set `name`, or a one-line error listing them.
pub fn flag_set(name: &str) -> Result<&'static FlagSet> {
    flag_sets().iter().find(|f| f.name == name).ok_or_else(|| {
        let names: Vec<&str> = flag_sets().iter().map(|f| f.name.as_str()).collect();
        anyhow::anyhow!(
            "unknown build '{name}'{}: use one of {} (config/postgres/builds.toml)",
            crate::util::suggest::did_you_mean(name, names.iter().copied()),
            names.join(", ")
        )
    })
}

/// A patch applied before configure: its file name and content hash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PatchRecord {
    pub name: String,
    /// Hex SHA-256 of the file.
    pub sha256: String,
}

/// How a cached tree was built, as recorded in [`BUILD_MANIFEST`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildManifest {
    /// The cache name and target suffix (`15.18_o2nofp`).
    pub name: String,
    /// The release the source says it is (`15.18`).
    pub version: String,
    /// The flag set's name.
    pub build: String,
    pub cflags: String,
    pub ldflags: String,
    /// configure's arguments besides the prefix and the flags.
    pub configure_args: Vec<String>,
    /// The compiler's first `--version` line.
    pub compiler: String,
    /// The source tree built from.
    pub source_dir: String,
    /// `git` commit of the source tree, or what is known without git.
    pub source_revision: String,
    /// In the order applied.
    pub patches: Vec<PatchRecord>,
    /// Hex SHA-256 over every input above (not the paths): equal inputs,
    /// equal build.
    pub fingerprint: String,
    /// RFC 3339 UTC.
    pub built_at: String,
    pub build_secs: f64,
    /// configure, make and make install output.
    pub log: String,
    /// Optional features the build lacks (`lz4`, `zstd`, `io_uring`).
    #[serde(default)]
    pub lacks: Vec<String>,
}

impl BuildManifest {
    /// One line for reports and listings: flags, compiler, source, patches.
    pub fn summary(&self) -> String {
        let patches = if self.patches.is_empty() {
            "no patches".to_string()
        } else {
            let list: Vec<String> = self
                .patches
                .iter()
                .map(|p| {
                    format!(
                        "{} (sha256 {})",
                        p.name,
                        &p.sha256[..12.min(p.sha256.len())]
                    )
                })
                .collect();
            format!("patches {}", list.join(", "))
        };
        let mut flags = self.cflags.clone();
        if !self.ldflags.is_empty() {
            flags.push_str(&format!("; LDFLAGS {}", self.ldflags));
        }
        format!(
            "built from source {} {} ({flags}) with {}, source {}, {patches}",
            self.version, self.build, self.compiler, self.source_revision
        )
    }
}

/// A built tree in the cache.
#[derive(Clone, Debug, PartialEq)]
pub struct Built {
    /// The tree's root (holds bin, lib, share).
    pub dir: PathBuf,
    pub manifest: BuildManifest,
}

impl Built {
    /// The tree's binaries, described for the store.
    pub fn binaries(&self) -> Result<PgBinaries> {
        PgBinaries::probe(&self.dir.join("bin"), &self.manifest.summary())
    }

    /// What the store keeps of the build, beside the target.
    pub fn record(&self) -> serde_json::Value {
        let m = &self.manifest;
        serde_json::json!({
            "name": m.name,
            "version": m.version,
            "build": m.build,
            "cflags": m.cflags,
            "ldflags": m.ldflags,
            "configure_args": m.configure_args,
            "compiler": m.compiler,
            "source_revision": m.source_revision,
            "patches": m.patches,
            "fingerprint": m.fingerprint,
            "summary": m.summary(),
        })
    }
}

/// The store's record of the build whose `bin/` is `bindir`, if it is one.
pub fn record_for_bindir(bindir: &Path) -> Option<serde_json::Value> {
    let built = built_at(bindir.parent()?).ok()??;
    Some(built.record())
}

/// The part of a build's name after its version (`o2nofp` of
/// `15.18_o2nofp`) when `bindir` is a build's `bin/`.
pub fn build_suffix(bindir: &Path) -> Option<String> {
    let built = built_at(bindir.parent()?).ok()??;
    Some(built.manifest.name.split_once('_')?.1.to_string())
}

/// Whether `name` reads as a build's cache name: a version as configure
/// names it, `_`, a flag set's name, maybe more (`15.18_o2nofp`,
/// `19beta1_o2nofp`, `18.1_o2nofp_p1a2b3c4d`).
pub fn is_build_name(name: &str) -> bool {
    name.split_once('_').is_some_and(|(v, rest)| {
        v.starts_with(|c: char| c.is_ascii_digit())
            && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
            && !rest.is_empty()
            && rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    })
}

/// Every built tree in the cache, by name.
pub fn list_built() -> Result<Vec<Built>> {
    let Ok(entries) = std::fs::read_dir(pg_cache()) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for entry in entries {
        if let Some(b) = built_at(&entry?.path())? {
            out.push(b);
        }
    }
    out.sort_by(|a, b| a.manifest.name.cmp(&b.manifest.name));
    Ok(out)
}

/// The built tree `name` (`15.18_o2nofp`), or a one-line error saying how
/// to build it.
pub fn find_built(name: &str) -> Result<Built> {
    let dir = pg_cache().join(name);
    match built_at(&dir)? {
        Some(b) => Ok(b),
        None => {
            let build = name.split_once('_').map_or("o2nofp", |(_, b)| b);
            bail!(
                "no PostgreSQL build {name} in {}: build it with `tidemark servers build pg --src \
                 DIR --build {build}` (`tidemark servers list` shows the builds there are)",
                pg_cache().display()
            )
        }
    }
}

fn built_at(dir: &Path) -> Result<Option<Built>> {
    let path = dir.join(BUILD_MANIFEST);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let manifest =
        serde_json::from_str(&text).with_context(|| format!("malformed {}", path.display()))?;
    Ok(Some(Built {
        dir: dir.to_path_buf(),
        manifest,
    }))
}

/// What `servers build` was asked for.
#[derive(Clone, Debug)]
pub struct BuildRequest {
    /// A PostgreSQL source tree (holds `configure`).
    pub src: PathBuf,
    pub flags: &'static FlagSet,
    /// Applied in this order with `patch -p1`.
    pub patches: Vec<PathBuf>,
    /// Cache name instead of the default `<version>_<build>[_p<hash>]`.
    pub name: Option<String>,
    /// `make -j`.
    pub jobs: usize,
    /// Set (by a Ctrl-C handler) to stop the running step; nothing is
    /// installed then.
    pub cancel: Option<&'static std::sync::atomic::AtomicBool>,
}

/// The outcome of [`build`].
pub enum BuildOutcome {
    /// Built now.
    Built(Built),
    /// The cache had a build of the same inputs.
    Cached(Built),
}

/// Everything a build's identity rests on, gathered before any slow step.
struct Inputs {
    version: String,
    revision: String,
    compiler: String,
    patches: Vec<PatchRecord>,
    configure_args: Vec<String>,
    name: String,
    fingerprint: String,
}

fn gather(req: &BuildRequest) -> Result<Inputs> {
    let configure = req.src.join("configure");
    let text = std::fs::read_to_string(&configure).map_err(|e| {
        anyhow::anyhow!(
            "--src {} has no readable configure script ({e}): name the top directory of a \
             PostgreSQL source tree",
            req.src.display()
        )
    })?;
    let version = steps::configure_version(&text).ok_or_else(|| {
        anyhow::anyhow!(
            "{} names no PostgreSQL version (PACKAGE_VERSION): name the top directory of a \
             PostgreSQL source tree",
            configure.display()
        )
    })?;
    let mut patches = Vec::new();
    for p in &req.patches {
        let bytes = std::fs::read(p).map_err(|e| {
            anyhow::anyhow!(
                "patch {} cannot be read ({e}): name a patch file",
                p.display()
            )
        })?;
        patches.push(PatchRecord {
            name: p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            sha256: hex(&Sha256::digest(&bytes)),
        });
    }
    if !patches.is_empty() && !super::install::on_path("patch") {
        bail!(
            "applying patches needs the patch program: install it (Debian: apt-get install patch)"
        );
    }
    let compiler = steps::compiler_version()?;
    let revision = steps::source_revision(&req.src);
    let configure_args = steps::optional_features(&text);
    let mut h = Sha256::new();
    for part in [
        version.as_str(),
        revision.as_str(),
        compiler.as_str(),
        req.flags.cflags.as_str(),
        req.flags.ldflags.as_str(),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    for a in &configure_args {
        h.update(a.as_bytes());
        h.update([0]);
    }
    for p in &patches {
        h.update(p.sha256.as_bytes());
        h.update([0]);
    }
    let fingerprint = hex(&h.finalize());
    let name = match &req.name {
        Some(n) => {
            if !is_build_name(n) {
                bail!(
                    "--name {n} is not a build name: write it as VERSION_NAME, e.g. \
                     {version}_{}_mine (letters, digits, _ and -)",
                    req.flags.name
                );
            }
            n.clone()
        }
        None if patches.is_empty() => format!("{version}_{}", req.flags.name),
        None => {
            let mut h = Sha256::new();
            for p in &patches {
                h.update(p.sha256.as_bytes());
            }
            format!("{version}_{}_p{}", req.flags.name, &hex(&h.finalize())[..8])
        }
    };
    Ok(Inputs {
        version,
        revision,
        compiler,
        patches,
        configure_args,
        name,
        fingerprint,
    })
}

/// Builds and installs `req` into the cache, unless a build of the same
/// inputs is there already. `event` hears each step and the progress of
/// `make`; a failure is one line naming the log file.
pub fn build(req: &BuildRequest, event: &mut dyn FnMut(BuildEvent)) -> Result<BuildOutcome> {
    let inputs = gather(req)?;
    let root = pg_cache();
    crate::server::package::tarball::make_dirs(&root)?;
    let dest = root.join(&inputs.name);
    if let Some(found) = built_at(&dest)? {
        if found.manifest.fingerprint == inputs.fingerprint {
            return Ok(BuildOutcome::Cached(found));
        }
        bail!(
            "{} holds a build of other inputs ({}): pass --name to keep both, or remove that \
             directory",
            dest.display(),
            found.manifest.summary()
        );
    }
    if dest.exists() {
        bail!(
            "{} exists but is no tidemark build: remove it or pass --name",
            dest.display()
        );
    }
    let log = root.join(format!("build-{}.log", inputs.name));
    let started = std::time::Instant::now();
    let staging = steps::run(req, &inputs.configure_args, &root, &log, event)?;
    let manifest = BuildManifest {
        name: inputs.name,
        version: inputs.version,
        build: req.flags.name.clone(),
        cflags: req.flags.cflags.clone(),
        ldflags: req.flags.ldflags.clone(),
        configure_args: inputs.configure_args,
        compiler: inputs.compiler,
        source_dir: req.src.display().to_string(),
        source_revision: inputs.revision,
        patches: inputs.patches,
        fingerprint: inputs.fingerprint,
        built_at: crate::util::time::now_rfc3339(),
        build_secs: started.elapsed().as_secs_f64(),
        log: log.display().to_string(),
        lacks: Vec::new(),
    };
    let mut built = Built {
        dir: staging.path().to_path_buf(),
        manifest,
    };
    let bins = built.binaries()?;
    if bins.version != built.manifest.version {
        bail!(
            "the build says it is PostgreSQL {}, the source {}: see {}",
            bins.version,
            built.manifest.version,
            log.display()
        );
    }
    let user = ServerUser::detect("postgres")?;
    super::runs_as_server_user(&bins, &user)?;
    built.manifest.lacks = super::lacking_features(&bins, &user)?;
    std::fs::write(
        staging.path().join(BUILD_MANIFEST),
        serde_json::to_string_pretty(&built.manifest)?,
    )?;
    staging.move_to(&dest)?;
    Ok(BuildOutcome::Built(Built {
        dir: dest,
        manifest: built.manifest,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_flag_sets_parse() {
        let o2 = flag_set("o2nofp").unwrap();
        assert_eq!(o2.cflags, "-O2 -fno-omit-frame-pointer");
        let lto = flag_set("o3_native_lto").unwrap();
        assert!(lto.cflags.contains("-flto") && lto.ldflags == "-flto");
        let e = flag_set("fast").unwrap_err().to_string();
        assert!(e.starts_with("unknown build 'fast': use one of "), "{e}");
        assert!(e.contains("o2nofp") && e.contains("o3_native_lto"), "{e}");
    }

    #[test]
    fn build_names_are_version_underscore_name() {
        assert!(is_build_name("15.18_o2nofp"));
        assert!(is_build_name("18.1_o3_native_lto"));
        assert!(is_build_name("18.1_o2nofp_p1a2b3c4d"));
        assert!(
            is_build_name("19beta1_o2nofp"),
            "a beta's configure version"
        );
        assert!(!is_build_name("15.18"));
        assert!(!is_build_name("15.18_"));
        assert!(!is_build_name("x_o2nofp"));
        assert!(!is_build_name("15.18_o2/../x"));
    }

    #[test]
    fn summary_names_flags_compiler_source_and_patches() {
        let mut m = BuildManifest {
            name: "15.18_o2nofp".into(),
            version: "15.18".into(),
            build: "o2nofp".into(),
            cflags: "-O2 -fno-omit-frame-pointer".into(),
            ldflags: String::new(),
            configure_args: vec![],
            compiler: "gcc (Debian 12.2.0-14) 12.2.0".into(),
            source_dir: "/src".into(),
            source_revision: "release tarball".into(),
            patches: vec![],
            fingerprint: "f".into(),
            built_at: "2026-01-01T00:00:00Z".into(),
            build_secs: 1.0,
            log: "/c/build.log".into(),
            lacks: vec![],
        };
        assert_eq!(
            m.summary(),
            "built from source 15.18 o2nofp (-O2 -fno-omit-frame-pointer) with gcc (Debian \
             12.2.0-14) 12.2.0, source release tarball, no patches"
        );
        m.patches.push(PatchRecord {
            name: "fix.patch".into(),
            sha256: "0123456789abcdef".into(),
        });
        assert!(
            m.summary()
                .ends_with("patches fix.patch (sha256 0123456789ab)")
        );
    }
}
