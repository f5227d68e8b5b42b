//! `tidemark servers build pg (--src DIR | --version V) --build NAME
//! [--patch FILE]…`: a PostgreSQL source build into the install cache, from
//! a tree on disk or Debian's source package of release V fetched with apt,
//! with a progress bar per step while `make` runs (its output goes to the
//! log file).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::server::postgres::build::{self, BuildEvent, BuildOutcome, BuildRequest, Step};

/// Set by Ctrl-C while a build runs.
static CANCEL: AtomicBool = AtomicBool::new(false);

/// Arguments of `tidemark servers build`.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// What to build: `pg` (PostgreSQL).
    pub dbms: String,
    /// The source tree (the directory holding `configure`).
    #[arg(long, required_unless_present = "version", conflicts_with = "version")]
    pub src: Option<PathBuf>,
    /// A release whose source tidemark fetches (Debian's source package
    /// from a newer suite, through apt): 18.6, 17.12, 19beta2.
    #[arg(long)]
    pub version: Option<String>,
    /// Named flag set: o2nofp (-O2 -fno-omit-frame-pointer), o3_native_lto, o2.
    #[arg(long, default_value = "o2nofp")]
    pub build: String,
    /// A patch applied with `patch -p1` before configure; repeatable, in order.
    #[arg(long = "patch")]
    pub patches: Vec<PathBuf>,
    /// Cache name instead of VERSION_BUILD (patched builds get _pHASH).
    #[arg(long)]
    pub name: Option<String>,
    /// Parallel make jobs (default: the CPUs available).
    #[arg(long)]
    pub jobs: Option<usize>,
}

/// Builds (or finds) the requested build and prints its target name.
pub fn build_server(a: &BuildArgs) -> anyhow::Result<i32> {
    if !matches!(a.dbms.as_str(), "pg" | "postgres" | "postgresql") {
        anyhow::bail!(
            "cannot build '{}' from source: tidemark builds PostgreSQL (`servers build pg`)",
            a.dbms
        );
    }
    let flags = build::flag_set(&a.build)?;
    let src = match (&a.src, &a.version) {
        (Some(dir), _) => dir.clone(),
        (None, Some(v)) => build::fetch::fetch_source(v, &mut |line| eprintln!("{line}"))?,
        (None, None) => anyhow::bail!("servers build pg: give --src DIR or --version RELEASE"),
    };
    let req = BuildRequest {
        src,
        flags,
        patches: a.patches.clone(),
        name: a.name.clone(),
        jobs: a
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        cancel: Some(&CANCEL),
    };
    // Ctrl-C stops the running step's process group; the scratch tree is
    // removed and nothing is installed.
    let _ = ctrlc::set_handler(|| CANCEL.store(true, Ordering::SeqCst));
    let mut bar: Option<ProgressBar> = None;
    let draw = |bar: &mut Option<ProgressBar>, event: BuildEvent| match event {
        BuildEvent::Started { step, log } => {
            if step == Step::Configure {
                eprintln!("build log: {}", log.display());
            }
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            let style = if step == Step::Build {
                ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} files  {elapsed}")
            } else {
                ProgressStyle::with_template("{prefix:>12} {spinner} {elapsed}")
            };
            b.set_style(style.expect("a valid template").progress_chars("=> "));
            b.set_prefix(step.label());
            b.enable_steady_tick(Duration::from_millis(200));
            *bar = Some(b);
        }
        BuildEvent::Progress { done, total } => {
            if let Some(b) = bar {
                b.set_length(total);
                b.set_position(done);
            }
        }
        BuildEvent::Finished { step, secs } => {
            if let Some(b) = bar.take() {
                b.finish_and_clear();
            }
            eprintln!("{:>12} done in {secs:.1} s", step.label());
        }
    };
    let outcome = build::build(&req, &mut |e| draw(&mut bar, e));
    if let Some(b) = bar.take() {
        b.abandon();
    }
    match outcome? {
        BuildOutcome::Cached(b) => println!(
            "pg@{} is built already in {} with the same inputs: nothing to do ({})",
            b.manifest.name,
            b.dir.display(),
            b.manifest.summary()
        ),
        BuildOutcome::Built(b) => println!(
            "built pg@{} in {} in {:.0} s: {}",
            b.manifest.name,
            b.dir.display(),
            b.manifest.build_secs,
            b.manifest.summary()
        ),
    }
    Ok(0)
}
