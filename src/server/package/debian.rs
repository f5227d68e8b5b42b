//! Server builds from Debian suites newer than this machine's (experimental,
//! sid), through apt itself with a private configuration: a sources list
//! derived from the system's own entry (its mirror and keyring, other
//! suites, and the source packages of the machine's own suites), and lists
//! and downloads kept under the install cache. The system's apt
//! configuration is never touched.
//!
//! Such a build needs a newer C library than the machine has, so a tree is
//! made self-contained: the server's package and the library packages it
//! depends on (through library packages only) are unpacked side by side,
//! and every executable is pointed at that tree's own loader and libraries
//! with `patchelf` (interpreter and `DT_RPATH`, which also serves libraries
//! loaded later). apt checks each download against the suite's signed
//! index; tidemark checks it again against the index's SHA-256 and records
//! its own.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use super::run_client;

/// The suites searched, newest first.
pub const SUITES: [&str; 2] = ["experimental", "sid"];

/// Where the system's apt sources are read from.
const SYSTEM_SOURCES: [&str; 2] = [
    "/etc/apt/sources.list.d/debian.sources",
    "/etc/apt/sources.list",
];

/// The system's Debian mirror, keyring and suites, read from its apt
/// sources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mirror {
    pub uri: String,
    pub keyring: Option<String>,
    /// The machine's own suites of that entry (`bookworm
    /// bookworm-updates`): their sources are searched too, for a release
    /// the machine's suite carries (`servers build pg --version 15.18` on
    /// bookworm).
    pub suites: Vec<String>,
}

impl Mirror {
    /// The first Debian entry of the system's sources (deb822 or one-line);
    /// the error says what to install or configure.
    pub fn of_system() -> Result<Mirror> {
        for path in SYSTEM_SOURCES {
            if let Ok(text) = std::fs::read_to_string(path)
                && let Some(m) = Mirror::parse(&text)
            {
                return Ok(m);
            }
        }
        bail!(
            "no Debian apt source found in {}: newer Debian packages come through the system's own mirror",
            SYSTEM_SOURCES.join(" or ")
        )
    }

    /// The first entry of a sources file whose URI serves Debian's main
    /// archive (not its security archive).
    pub fn parse(text: &str) -> Option<Mirror> {
        // deb822: paragraphs of `Field: value`.
        for para in text.split("\n\n") {
            let field = |name: &str| {
                para.lines()
                    .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                    .map(|v| v.trim().to_string())
            };
            if let Some(uris) = field("URIs") {
                let uri = uris.split_whitespace().next()?.to_string();
                if !uri.contains("security") {
                    return Some(Mirror {
                        uri,
                        keyring: field("Signed-By"),
                        suites: field("Suites")
                            .unwrap_or_default()
                            .split_whitespace()
                            .map(str::to_string)
                            .collect(),
                    });
                }
            }
        }
        // One-line: `deb [options] URI suite components`.
        for line in text.lines().map(str::trim) {
            let Some(rest) = line.strip_prefix("deb ") else {
                continue;
            };
            let (options, rest) = match rest.trim_start().strip_prefix('[') {
                Some(r) => r.split_once(']')?,
                None => ("", rest),
            };
            let mut words = rest.split_whitespace();
            let uri = words.next()?;
            if uri.contains("security") {
                continue;
            }
            let suites = words.next().map(str::to_string).into_iter().collect();
            let keyring = options
                .split_whitespace()
                .find_map(|o| o.strip_prefix("signed-by="))
                .map(str::to_string);
            return Some(Mirror {
                uri: uri.to_string(),
                keyring,
                suites,
            });
        }
        None
    }

    /// The private sources file: packages and sources of [`SUITES`], and
    /// the sources (never the packages) of the machine's own suites.
    pub fn sources(&self) -> String {
        let paragraph = |types: &str, suites: &str| {
            let mut p = format!(
                "Types: {types}\nURIs: {}\nSuites: {suites}\nComponents: main\n",
                self.uri
            );
            if let Some(k) = &self.keyring {
                p.push_str(&format!("Signed-By: {k}\n"));
            }
            p
        };
        let mut s = paragraph("deb deb-src", &SUITES.join(" "));
        let own: Vec<&str> = self
            .suites
            .iter()
            .map(String::as_str)
            .filter(|x| !SUITES.contains(x))
            .collect();
        if !own.is_empty() {
            s.push('\n');
            s.push_str(&paragraph("deb-src", &own.join(" ")));
        }
        s
    }
}

/// apt with a private configuration under `<cache>/apt`, held by this
/// process alone while it lives (apt locks its lists; two tidemarks
/// installing at once wait for each other instead of failing).
pub struct PrivateApt {
    dir: PathBuf,
    _lock: std::fs::File,
}

/// One package version as the suite's index describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub package: String,
    pub version: String,
    pub sha256: String,
    /// Names of the packages it depends on (first of each alternative).
    pub depends: Vec<String>,
}

impl PrivateApt {
    /// The private apt of install cache `root`, its lists refreshed when
    /// older than a day.
    pub fn open(root: &Path) -> Result<PrivateApt> {
        if !super::super::postgres::install::on_path("apt-get") {
            bail!("apt-get is not on PATH: newer Debian packages come through apt");
        }
        let dir = root.join("apt");
        for sub in ["parts", "lists/partial", "cache/archives/partial"] {
            std::fs::create_dir_all(dir.join(sub))
                .with_context(|| format!("cannot create {}", dir.join(sub).display()))?;
        }
        let lock = std::fs::File::create(dir.join("tidemark.lock"))
            .with_context(|| format!("cannot create a lock in {}", dir.display()))?;
        // SAFETY: flock on a file descriptor this function owns.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) } != 0 {
            bail!("cannot lock {}", dir.join("tidemark.lock").display());
        }
        let sources = Mirror::of_system()?.sources();
        let file = dir.join("parts/tidemark.sources");
        let changed = std::fs::read_to_string(&file).ok().as_deref() != Some(sources.as_str());
        if changed {
            std::fs::write(&file, &sources)
                .with_context(|| format!("cannot write {}", file.display()))?;
        }
        let apt = PrivateApt { dir, _lock: lock };
        let stale = std::fs::metadata(apt.dir.join("lists/updated"))
            .and_then(|m| m.modified())
            .map_or(true, |t| {
                t.elapsed().unwrap_or_default() > std::time::Duration::from_secs(86_400)
            });
        if changed || stale {
            run_client(apt.command("apt-get", &["update", "-qq"]), "apt-get update")?;
            std::fs::write(apt.dir.join("lists/updated"), b"")?;
        }
        Ok(apt)
    }

    fn command(&self, program: &str, args: &[&str]) -> Command {
        let d = &self.dir;
        let mut cmd = Command::new(program);
        for (k, v) in [
            ("Dir::Etc::SourceList", PathBuf::from("/dev/null")),
            ("Dir::Etc::SourceParts", d.join("parts")),
            ("Dir::State::Lists", d.join("lists")),
            ("Dir::Cache", d.join("cache")),
            // apt's binary caches of the lists, kept in the private cache
            // directory (Debian's container images turn them off): without
            // them each apt-cache call parses every list again (1.4 s
            // against 0.3 s here).
            ("Dir::Cache::pkgcache", PathBuf::from("pkgcache.bin")),
            ("Dir::Cache::srcpkgcache", PathBuf::from("srcpkgcache.bin")),
            ("Dir::State::status", PathBuf::from("/dev/null")),
            ("APT::Sandbox::User", PathBuf::from("root")),
        ] {
            cmd.arg("-o").arg(format!("{k}={}", v.display()));
        }
        cmd.args(args).env("LC_ALL", "C");
        cmd
    }

    /// Runs `apt-get` or `apt-cache` (`program`) with this configuration
    /// and `args` in `dir`; returns its output, or the one-line error.
    pub fn run(&self, program: &str, args: &[&str], dir: &Path) -> Result<Vec<u8>> {
        let mut cmd = self.command(program, args);
        cmd.current_dir(dir);
        run_client(cmd, &format!("{program} {}", args.first().unwrap_or(&"")))
    }

    /// The candidate of `package` in [`SUITES`], `None` when no suite has it.
    pub fn show(&self, package: &str) -> Result<Option<IndexEntry>> {
        Ok(self.show_all(&[package])?.pop())
    }

    /// The candidates of `packages` that some suite has, in one apt-cache
    /// call (each call loads apt's cache, so a closure asks once a level).
    fn show_all(&self, packages: &[&str]) -> Result<Vec<IndexEntry>> {
        if packages.is_empty() {
            return Ok(Vec::new());
        }
        let mut args = vec!["show", "--no-all-versions"];
        args.extend_from_slice(packages);
        let out = self
            .command("apt-cache", &args)
            .output()
            .context("cannot run apt-cache")?;
        // apt-cache fails only when it found none of them.
        if !out.status.success() {
            return Ok(Vec::new());
        }
        Ok(parse_entries(&String::from_utf8_lossy(&out.stdout)))
    }

    /// `package` and the library packages it needs, found through library
    /// packages only (`lib*`, `zlib1g`): what its executables load.
    pub fn library_closure(&self, package: &str) -> Result<Vec<IndexEntry>> {
        self.library_closure_of(&[package])
    }

    /// [`PrivateApt::library_closure`] of several packages (each listed
    /// first, in order), asked of apt a level of dependencies at a time.
    pub fn library_closure_of(&self, packages: &[&str]) -> Result<Vec<IndexEntry>> {
        let found = self.show_all(packages)?;
        let mut out = Vec::new();
        for package in packages {
            let entry = found.iter().find(|e| e.package == *package);
            out.push(entry.cloned().with_context(|| {
                format!("no Debian suite ({}) has {package}", SUITES.join(", "))
            })?);
        }
        let package = packages.first().copied().unwrap_or_default();
        let mut level = 0;
        while level < out.len() {
            let mut wanted: Vec<String> = Vec::new();
            for entry in &out[level..] {
                for dep in &entry.depends {
                    let library = dep.starts_with("lib") || dep == "zlib1g";
                    if library && !out.iter().any(|e| &e.package == dep) && !wanted.contains(dep) {
                        wanted.push(dep.clone());
                    }
                }
            }
            level = out.len();
            let names: Vec<&str> = wanted.iter().map(String::as_str).collect();
            let found = self.show_all(&names)?;
            for dep in &wanted {
                let entry = found
                    .iter()
                    .find(|e| &e.package == dep)
                    .with_context(|| format!("{package} needs {dep}, which no Debian suite has"))?;
                out.push(entry.clone());
            }
        }
        Ok(out)
    }

    /// Downloads `entries` into `dir` and checks each file's SHA-256 against
    /// the index; returns each file with its SHA-256 and the bytes fetched.
    pub fn download(&self, entries: &[IndexEntry], dir: &Path) -> Result<Vec<(PathBuf, String)>> {
        let specs: Vec<String> = entries
            .iter()
            .map(|e| format!("{}={}", e.package, e.version))
            .collect();
        let mut args = vec!["download", "-qq"];
        args.extend(specs.iter().map(String::as_str));
        let mut cmd = self.command("apt-get", &args);
        cmd.current_dir(dir);
        run_client(cmd, "apt-get download")?;
        let mut files = Vec::new();
        for e in entries {
            let file = std::fs::read_dir(dir)?
                .filter_map(|f| f.ok().map(|f| f.path()))
                .find(|p| {
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                        n.starts_with(&format!("{}_", e.package)) && n.ends_with(".deb")
                    })
                })
                .with_context(|| format!("apt-get download left no {} file", e.package))?;
            let sha = sha256_file(&file)?;
            verify(&e.package, &sha, &e.sha256)?;
            files.push((file, sha));
        }
        Ok(files)
    }
}

/// Refuses a download whose SHA-256 is not the index's.
pub fn verify(package: &str, got: &str, want: &str) -> Result<()> {
    if !got.eq_ignore_ascii_case(want) {
        bail!(
            "the download of {package} is damaged (SHA-256 {got}, the signed index says {want}): nothing was installed; try again"
        );
    }
    Ok(())
}

fn sha256_file(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(super::hex(&Sha256::digest(&bytes)))
}

/// Every paragraph of `apt-cache show` output that names a package.
fn parse_entries(text: &str) -> Vec<IndexEntry> {
    text.split("\n\n").filter_map(parse_entry).collect()
}

/// The first paragraph of `apt-cache show` output.
pub fn parse_entry(text: &str) -> Option<IndexEntry> {
    let para = text.split("\n\n").find(|p| !p.trim().is_empty())?;
    let field = |name: &str| {
        para.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
            .map(str::to_string)
    };
    let mut depends = Vec::new();
    for name in ["Pre-Depends", "Depends"] {
        if let Some(list) = field(name) {
            for alt in list.split(',') {
                let first = alt.split('|').next().unwrap_or_default().trim();
                let pkg = first.split([' ', ':', '(']).next().unwrap_or_default();
                if !pkg.is_empty() {
                    depends.push(pkg.to_string());
                }
            }
        }
    }
    Some(IndexEntry {
        package: field("Package")?,
        version: field("Version")?,
        sha256: field("SHA256")?,
        depends,
    })
}

/// Unpacks each `.deb` into `root` (`dpkg-deb -x`).
pub fn unpack(debs: &[(PathBuf, String)], root: &Path) -> Result<()> {
    for (deb, _) in debs {
        let mut cmd = Command::new("dpkg-deb");
        cmd.arg("-x").arg(deb).arg(root);
        run_client(cmd, "dpkg-deb -x")
            .with_context(|| format!("cannot unpack {}", deb.display()))?;
    }
    Ok(())
}

/// Points every ELF executable in `dirs` (under `tree`) at the loader and
/// libraries of the tree as it will sit at `final_root` (the tree may be
/// patched where it is, then again for where it goes).
pub fn relocate(tree: &Path, final_root: &Path, dirs: &[&str]) -> Result<()> {
    if !super::super::postgres::install::on_path("patchelf") {
        bail!(
            "patchelf is not on PATH: a build from a newer Debian suite runs on its own C library, which patchelf points it at (Debian: apt-get install patchelf)"
        );
    }
    let libdir = "usr/lib/x86_64-linux-gnu";
    let loader = final_root.join(libdir).join("ld-linux-x86-64.so.2");
    if !tree.join(libdir).join("ld-linux-x86-64.so.2").exists() {
        bail!("the unpacked libraries hold no loader ({libdir}/ld-linux-x86-64.so.2)");
    }
    let rpath = format!(
        "{}:{}",
        final_root.join(libdir).display(),
        final_root.join("lib/x86_64-linux-gnu").display()
    );
    for dir in dirs {
        let entries = std::fs::read_dir(tree.join(dir))
            .with_context(|| format!("cannot list {}", tree.join(dir).display()))?;
        for entry in entries {
            let path = entry?.path();
            if !is_elf_executable(&path) {
                continue;
            }
            let mut cmd = Command::new("patchelf");
            cmd.arg("--set-interpreter")
                .arg(&loader)
                .arg("--force-rpath")
                .arg("--set-rpath")
                .arg(&rpath)
                .arg(&path);
            run_client(cmd, "patchelf")
                .with_context(|| format!("cannot patch {}", path.display()))?;
        }
    }
    Ok(())
}

/// Whether `path` is a dynamically linked 64-bit ELF program: it has a
/// program interpreter (`PT_INTERP`), wherever patching moved it.
fn is_elf_executable(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| has_interpreter(&b))
}

fn has_interpreter(b: &[u8]) -> bool {
    const PT_INTERP: u32 = 3;
    if b.len() < 64 || !b.starts_with(b"\x7fELF") || b[4] != 2 || b[5] != 1 {
        return false;
    }
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(b[32..40].try_into().expect("8 bytes")) as usize;
    let (size, count) = (u16_at(54), u16_at(56));
    (0..count).any(|i| {
        let at = phoff + i * size;
        b.get(at..at + 4)
            .is_some_and(|t| u32::from_le_bytes(t.try_into().expect("4 bytes")) == PT_INTERP)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mirror_comes_from_the_systems_sources() {
        let deb822 = "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/k.gpg\n\nTypes: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n";
        let m = Mirror::parse(deb822).unwrap();
        assert_eq!(m.uri, "http://mirror.example/debian");
        assert_eq!(m.keyring.as_deref(), Some("/usr/share/keyrings/k.gpg"));
        assert_eq!(m.suites, ["bookworm"]);
        let s = m.sources();
        assert!(s.contains("Suites: experimental sid\n") && s.contains("Types: deb deb-src\n"));
        assert!(s.contains("Signed-By: /usr/share/keyrings/k.gpg"));
        // The machine's own suite: its sources only, never its packages.
        let own = s.split("\n\n").nth(1).unwrap();
        assert_eq!(
            own,
            "Types: deb-src\nURIs: http://mirror.example/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/k.gpg\n"
        );
        let two =
            Mirror::parse("Types: deb\nURIs: http://m/debian\nSuites: bookworm bookworm-updates\n")
                .unwrap();
        assert!(two.sources().contains(
            "Types: deb-src\nURIs: http://m/debian\nSuites: bookworm bookworm-updates\n"
        ));
        // A machine on sid adds no second paragraph.
        let sid = Mirror::parse("Types: deb\nURIs: http://m/debian\nSuites: sid\n").unwrap();
        assert_eq!(sid.sources().matches("Types:").count(), 1);
        let one = "# c\ndeb http://sec.example/debian-security bookworm-security main\ndeb [arch=amd64 signed-by=/k.gpg] http://m.example/debian bookworm main\n";
        let m = Mirror::parse(one).unwrap();
        assert_eq!(
            (m.uri.as_str(), m.keyring.as_deref()),
            ("http://m.example/debian", Some("/k.gpg"))
        );
        assert_eq!(m.suites, ["bookworm"]);
        assert!(Mirror::parse("# nothing\n").is_none());
    }

    #[test]
    fn index_entries_and_their_library_depends() {
        let text = "Package: postgresql-19\nVersion: 19~rc1-1\nPre-Depends: libc6 (>= 2.43)\nDepends: locales | locales-all, postgresql-common (>= 275~), libicu78 (>= 78.1-1~), libssl3t64:amd64 (>= 3.4.0), zlib1g\nSHA256: 278a43856ea0a7a2a8c34ff35075f24ebd85c4703a6a5f500d61fb7a7d0447b3\n\nPackage: postgresql-19\nVersion: 19~beta2-1\n";
        let e = parse_entry(text).unwrap();
        assert_eq!(e.version, "19~rc1-1");
        assert_eq!(
            e.depends,
            [
                "libc6",
                "locales",
                "postgresql-common",
                "libicu78",
                "libssl3t64",
                "zlib1g"
            ]
        );
        assert!(
            parse_entry("Package: x\n").is_none(),
            "no version or checksum"
        );
        // One apt-cache call for a level of a closure: a paragraph each.
        let level = "Package: libc6\nVersion: 2.43-1\nSHA256: aa\n\nPackage: zlib1g\nVersion: 1:1.3\nDepends: libc6\nSHA256: bb\n\n";
        let names: Vec<String> = parse_entries(level)
            .into_iter()
            .map(|e| e.package)
            .collect();
        assert_eq!(names, ["libc6", "zlib1g"]);
    }

    #[test]
    fn programs_are_told_from_libraries_and_other_files() {
        let me = std::fs::read("/proc/self/exe").unwrap();
        assert!(has_interpreter(&me), "the test binary is a dynamic program");
        assert!(!has_interpreter(b"#!/bin/sh\necho"));
        let libc = [
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/usr/lib/x86_64-linux-gnu/libm.so.6",
        ];
        for lib in libc.iter().filter(|p| Path::new(p).exists()) {
            let b = std::fs::read(lib).unwrap();
            // libc has an interpreter entry (it runs as a program); libm has none.
            if lib.ends_with("libm.so.6") {
                assert!(!has_interpreter(&b), "{lib}");
            }
        }
    }

    #[test]
    fn a_damaged_download_is_refused_in_one_line() {
        assert!(verify("p", "ABCD", "abcd").is_ok());
        let e = verify("postgresql-19", "00ff", "abcd")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("damaged") && e.contains("postgresql-19") && !e.contains('\n'),
            "{e}"
        );
    }
}
