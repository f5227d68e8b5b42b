//! One target's postgresql.conf as layers — base, profile sizes, the
//! chosen buffer pool, the named config, run-wide `-c`, the target's own
//! settings — checked against the target's binary before any server of the
//! run starts.
//!
//! Each layer keeps its origin so an error says which target, which setting
//! and where it came from. Base lines a version does not have (an older
//! release lacks some autovacuum settings) are left out with a note, since
//! the base is tidemark's; anything the user or a named config asks for
//! must exist, or the run does not start.

use anyhow::{Result, bail};

use super::binaries::PgBinaries;
use super::config::{base_config, check_override_syntax, compose_config};
use super::named::{ConfigChoice, NamedConfig, setting_lines};
use super::preflight::{Preflight, feature_for};
use super::seed_files;

/// What a target asks for, before checking.
pub struct LayerInputs<'a> {
    /// The target as the user wrote it, for messages.
    pub target: &'a str,
    /// Size profile (`quick`, `small`, `large`).
    pub profile: &'a str,
    /// postgresql.conf lines of the chosen buffer pool.
    pub sizing_lines: &'a str,
    /// The chosen buffer pool, MB (a complete file's shared_buffers).
    pub shared_buffers_mb: u64,
    /// The machine's memory (0: unknown), which a complete file's WAL
    /// sizes scale with.
    pub memory_bytes: u64,
    pub config: &'a ConfigChoice,
    /// `-c` settings for every target.
    pub run_wide: &'a [(String, String)],
    /// `:name=value` settings of this target.
    pub own: &'a [(String, String)],
}

/// A checked configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedConfig {
    /// The text before tidemark's own lines and the overrides.
    pub base_text: String,
    /// The overrides, run-wide then the target's own.
    pub overrides: Vec<(String, String)>,
    /// Things the user should know (base lines left out).
    pub notes: Vec<String>,
}

/// Composes and checks a target's configuration with its binary.
pub fn check_layers(
    inputs: &LayerInputs<'_>,
    bin: &PgBinaries,
    pre: &Preflight<'_>,
) -> Result<CheckedConfig> {
    let t = inputs.target;
    let v = &bin.version;
    if let ConfigChoice::Named(c) = inputs.config
        && let Some(needs) = c.needs
        && bin.major < needs
    {
        let names: Vec<String> = match &c.file {
            Some(file) => seed_files::variant(file, needs)
                .map(|(_, text)| setting_lines(text))
                .unwrap_or_default()
                .into_iter()
                .map(|(_, n, _)| n)
                .filter(|n| !pre.knows(n))
                .collect(),
            None => Vec::new(),
        };
        let names = if names.is_empty() {
            c.settings.iter().map(|(n, _)| n.clone()).collect()
        } else {
            names
        };
        let what = if names.is_empty() {
            format!("it is the seeds' file for PostgreSQL {needs} and later")
        } else {
            format!("it sets {}", names.join(", "))
        };
        bail!(
            "target {t}: config {} needs PostgreSQL {needs} or later ({what}), and this is \
             PostgreSQL {v}: pick a newer version or another config",
            c.name
        );
    }

    // A complete file of the seeds replaces the base; else tidemark's own
    // lines, adapted to the version, come first.
    let mut notes = Vec::new();
    let mut asked: Vec<(String, String, String)> = Vec::new();
    let (base_lines, config_text) = match inputs.config {
        ConfigChoice::Named(c) if c.file.is_some() => {
            let file = complete_file(c, bin.major, inputs)?;
            let origin = format!("config {}", c.name);
            for (_, n, val) in setting_lines(&file) {
                asked.push((n, val, origin.clone()));
            }
            (String::new(), file)
        }
        config => {
            let Some(profile_text) = base_config(inputs.profile) else {
                bail!(
                    "no shipped PostgreSQL config for profile {}",
                    inputs.profile
                );
            };
            let base = format!("{}\n\n{}", profile_text.trim_end(), inputs.sizing_lines);
            let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
            for (i, name, _) in setting_lines(&base) {
                if !pre.knows(&name) {
                    lines[i] = format!("# not in PostgreSQL {v}: {}", lines[i]);
                    notes.push(format!(
                        "base setting {name} does not exist in PostgreSQL {v}: left out"
                    ));
                }
            }
            // What the named config asks for must all exist.
            for (n, val) in config.settings() {
                asked.push((n.clone(), val.clone(), config.origin()));
            }
            (lines.join("\n"), config.text())
        }
    };
    let mut overrides = Vec::new();
    for (n, val) in inputs.run_wide {
        asked.push((n.clone(), val.clone(), format!("-c {n}={val}")));
        overrides.push((n.clone(), val.clone()));
    }
    for (n, val) in inputs.own {
        asked.push((n.clone(), val.clone(), format!("the target's :{n}={val}")));
        overrides.push((n.clone(), val.clone()));
    }
    check_override_syntax(&overrides).map_err(|e| anyhow::anyhow!("target {t}: {e}"))?;
    for (name, value, origin) in &asked {
        if !pre.knows(name) {
            bail!(
                "target {t}: unknown PostgreSQL setting '{name}' for {v} (from {origin}): check \
                 the name with `postgres --describe-config`, or pick a version that has it"
            );
        }
        if let Some(feature) = feature_for(name, value)
            && !pre.has_feature(feature)?
        {
            bail!(
                "target {t}: this PostgreSQL {v} build ({}) lacks {feature}, which {name} = \
                 {value} (from {origin}) needs: choose a config without it, or a build with \
                 {feature} (pg@system or pg@/path/to/bin)",
                bin.source
            );
        }
    }

    let base_text = if base_lines.is_empty() {
        config_text
    } else {
        format!("{}\n\n{}", base_lines.trim_end(), config_text)
    };
    let full = compose_config(&base_text, 5432, "/tmp", &overrides);
    if let Err(complaint) = pre.check_values(&full) {
        bail!("target {t}: PostgreSQL {v} rejects the configuration: {complaint}");
    }
    Ok(CheckedConfig {
        base_text,
        overrides,
        notes,
    })
}

/// A seeds' complete file for this major version, with its header line and
/// the run's buffer pool and the machine's WAL sizes filled in.
fn complete_file(c: &NamedConfig, major: u32, inputs: &LayerInputs<'_>) -> Result<String> {
    let file = c.file.as_deref().unwrap_or_default();
    let Some((from, text)) = seed_files::variant(file, major) else {
        bail!(
            "target {}: config {} has no file for PostgreSQL {major}: pick a newer version or \
             another config",
            inputs.target,
            c.name
        );
    };
    let max_wal_mb = seed_files::max_wal_mb(inputs.memory_bytes, &c.wal_scale);
    let mut out = format!(
        "# --- config {}: the seeds' complete file {file}.pg{from}.conf (replaces tidemark's \
         base; shared_buffers from the run's sizing, WAL sizes scaled to this machine) ---\n{}\n",
        c.name,
        seed_files::render(text, inputs.shared_buffers_mb, max_wal_mb).trim_end()
    );
    if !c.settings.is_empty() {
        out.push_str(&format!("\n# --- config {}: {} ---\n", c.name, c.about));
        for (name, value) in &c.settings {
            out.push_str(&format!("{name} = '{}'\n", value.replace('\'', "''")));
        }
    }
    Ok(out)
}
