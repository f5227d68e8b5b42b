//! The results database: every run, target and step tidemark measured, in
//! one SQLite file, `results.db`, in the results directory, or in a
//! PostgreSQL database a team shares (`--store postgres://…`); the two hold
//! the same schema and are read and written through [`backend`].
//!
//! The store exists so that measuring and reporting are separate: `tidemark
//! run` writes each step as it finishes, and the report, the export and the
//! `runs` listing read only from here. Each step is written in one
//! transaction, so Ctrl-C or a crash keeps every finished step and never
//! half of one. The schema is versioned ([`schema`]); the file is meant to be
//! kept, copied and compared for years.
//!
//! Writing is in [`write`](mod@write), reading in [`read`], the samplers'
//! tables in `host`, the JSON and CSV exports in [`export`], copying runs
//! between stores in [`transfer`].

pub mod backend;
pub mod cells;
mod counter_rows;
pub mod export;
mod host_rows;
pub mod hw_columns;
mod migrate;
pub mod read;
pub mod role_rows;
pub mod schema;
pub mod shards;
pub mod transfer;
pub mod write;

#[cfg(test)]
mod tests;

use std::cell::{RefCell, RefMut};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use rusqlite::{Connection, OpenFlags};

use crate::db::postgres::{PgConn, PgConnectOptions};
use crate::record::HostFacts;
use backend::Backend;

pub use backend::Engine;
pub use export::{export_csv, export_json};
pub use read::{RunSummary, StoredRun, StoredStep, StoredTarget, format_runs_table};
pub use role_rows::RoleRecord;
pub use schema::SCHEMA_VERSION;
pub use write::{decode_histogram, encode_histogram};

/// File name of the database inside the results directory.
pub const DB_FILE: &str = "results.db";

/// Values of `runs.status`: `running` from [`Store::begin_run`] until
/// [`Store::finish_run`] sets one of the others. A run left `running` with no
/// `finished_at` was cut short by a crash.
pub const RUN_STATUSES: [&str; 4] = ["running", "finished", "interrupted", "failed"];

/// Values of `targets.status`: `running` from [`Store::add_target`] until
/// [`Store::set_target_status`] sets one of the others.
pub const TARGET_STATUSES: [&str; 5] = ["running", "finished", "interrupted", "failed", "skipped"];

/// How long a writer waits for another process's write to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long connecting to a PostgreSQL store may take before it counts as
/// unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the store records about a run when it begins.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunInfo {
    /// RFC 3339 UTC ([`crate::util::time::now_rfc3339`]).
    pub started_at: String,
    /// The command line as the user typed it, for reproducing the run.
    pub command_line: String,
    /// The tidemark version that ran it.
    pub tidemark_version: String,
    /// Named profile (`quick`, `full`…).
    pub profile: String,
    /// `sysbench` or `ibench`.
    pub suite: String,
    /// Parameters that shaped the run (durations, tables, rows, threads…).
    pub params: serde_json::Value,
    pub host: HostFacts,
}

/// An open results store: `results.db` in a results directory, or a
/// shared PostgreSQL database (`--store postgres://…`).
pub struct Store {
    /// Interior mutability: reading a PostgreSQL store needs the connection
    /// mutably, and the report reads through `&Store`. A store is used by
    /// one thread.
    db: RefCell<Backend>,
    dir: PathBuf,
    /// Where the store is, for messages: the results directory, or the URL
    /// without its password.
    place: String,
}

impl Store {
    /// Opens the results database in `results_dir`, creating the directory
    /// and `results.db` if needed and migrating the schema to this build's.
    pub fn open(results_dir: &Path) -> Result<Store> {
        std::fs::create_dir_all(results_dir)
            .with_context(|| format!("creating results directory {}", results_dir.display()))?;
        Store::connect(results_dir, OpenFlags::default())
    }

    /// Opens an existing results database, for the verbs that only read
    /// (`runs`, `report`, `export`); fails if `results_dir` has none.
    ///
    /// A database from an older build is migrated, since the read code
    /// expects the current schema; a current one is not written to.
    pub fn open_existing(results_dir: &Path) -> Result<Store> {
        if !results_dir.join(DB_FILE).is_file() {
            bail!(
                "no results in {}: run `tidemark run` first or pass --results DIR",
                results_dir.display()
            );
        }
        Store::connect(
            results_dir,
            OpenFlags::default().difference(OpenFlags::SQLITE_OPEN_CREATE),
        )
    }

    /// Opens the store `url` names (`postgres://user@host/db`), or the
    /// SQLite one in `results_dir` when `url` is `None`; `results_dir`
    /// still holds servers' data directories and reports. A PostgreSQL
    /// store's schema is created or migrated; `existing` only says whether
    /// a missing SQLite store is an error.
    pub fn open_in(results_dir: &Path, url: Option<&str>, existing: bool) -> Result<Store> {
        match url {
            None if existing => Store::open_existing(results_dir),
            None => Store::open(results_dir),
            Some(url) => Store::open_postgres(url, results_dir),
        }
    }

    /// Opens (creating the schema in) the PostgreSQL store at `url`.
    pub fn open_postgres(url: &str, results_dir: &Path) -> Result<Store> {
        let mut opts = PgConnectOptions::from_url(url).map_err(|e| anyhow!("store URL: {e}"))?;
        opts.application_name = "tidemark-store".into();
        let place = redact(&opts);
        let conn = PgConn::connect_timeout(&opts, CONNECT_TIMEOUT).map_err(|e| {
            anyhow!(
                "cannot open the store {place}: {e}: check that the server is up and the URL \
                 is right, or drop --store (TIDEMARK_STORE) to use the local results.db"
            )
        })?;
        let mut db = Backend::Postgres(Box::new(conn));
        migrate::migrate(&mut db, &place)?;
        Ok(Store {
            db: RefCell::new(db),
            dir: results_dir.to_path_buf(),
            place,
        })
    }

    fn connect(dir: &Path, flags: OpenFlags) -> Result<Store> {
        let path = dir.join(DB_FILE);
        let what = || format!("opening {}", path.display());
        let conn = Connection::open_with_flags(&path, flags).with_context(what)?;
        conn.busy_timeout(BUSY_TIMEOUT).with_context(what)?;
        // WAL: readers (a report) never block the writer (a run), and a
        // commit is one append. NORMAL: a commit survives a crash of
        // tidemark; only a power loss may drop the last few.
        // A filesystem without shared memory (some network mounts) keeps
        // the rollback journal: still correct, only slower, so the mode the
        // pragma reports is not checked.
        let _mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .with_context(what)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .with_context(what)?;
        conn.pragma_update(None, "foreign_keys", true)
            .with_context(what)?;
        let mut db = Backend::Sqlite(conn);
        migrate::migrate(&mut db, &format!("results.db in {}", dir.display()))?;
        Ok(Store {
            db: RefCell::new(db),
            dir: dir.to_path_buf(),
            place: dir.display().to_string(),
        })
    }

    /// The results directory this store's reports and data dirs go to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the store is, as shown to users: the results directory or the
    /// PostgreSQL URL without its password.
    pub fn place(&self) -> &str {
        &self.place
    }

    /// Which database engine holds the store.
    pub fn engine(&self) -> Engine {
        self.db.borrow().engine()
    }

    /// The schema version of the open database (always [`SCHEMA_VERSION`]
    /// once open).
    pub fn schema_version(&self) -> Result<u32> {
        migrate::current_version(&mut self.db(), &self.place)
    }

    /// The connection, for one statement or transaction at a time.
    fn db(&self) -> RefMut<'_, Backend> {
        self.db.borrow_mut()
    }

    /// Opens the results database in `results_dir` and reads everything in
    /// it as the reading verbs do (the runs list, every run, the JSON and
    /// CSV exports); returns the bytes the exports wrote. The entry point of
    /// the fuzz target `store_damaged`: a damaged `results.db` must give an
    /// error, never a panic.
    pub fn read_everything(results_dir: &Path) -> Result<usize> {
        let store = Store::open_existing(results_dir)?;
        let runs = store.list_runs()?;
        let _ = format_runs_table(&runs);
        for id in store.run_ids()? {
            store.load_run(id)?;
        }
        let mut out = Vec::new();
        export_json(&store, None, &mut out)?;
        export_csv(&store, None, &mut out)?;
        Ok(out.len())
    }

    /// The one-line error for a run id that is not stored.
    fn unknown_run(&self, id: i64) -> anyhow::Error {
        anyhow!(
            "no run {id} in {}: `tidemark runs` lists the stored runs",
            self.place
        )
    }
}

/// A PostgreSQL store's URL as shown and recorded: without its password.
pub fn redact(opts: &PgConnectOptions) -> String {
    let mut shown = opts.clone();
    shown.application_name = "tidemark".into();
    shown.display_url()
}

/// A new run identity: a random (version 4) UUID, so runs from any
/// machine can meet in one store without colliding.
pub fn new_uuid() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}
