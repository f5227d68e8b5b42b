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
use super::named::{ConfigChoice, setting_lines};
use super::preflight::{Preflight, feature_for};

/// What a target asks for, before checking.
pub struct LayerInputs<'a> {
    /// The target as the user wrote it, for messages.
    pub target: &'a str,
    /// Size profile (`quick`, `small`, `large`).
    pub profile: &'a str,
    /// postgresql.conf lines of the chosen buffer pool.
    pub sizing_lines: &'a str,
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
        let names: Vec<&str> = c.settings.iter().map(|(n, _)| n.as_str()).collect();
        bail!(
            "target {t}: config {} needs PostgreSQL {needs} or later (it sets {}), and this is \
             PostgreSQL {v}: pick a newer version or another config",
            c.name,
            names.join(", ")
        );
    }

    // The base: tidemark's own lines, adapted to the version.
    let Some(profile_text) = base_config(inputs.profile) else {
        bail!(
            "no shipped PostgreSQL config for profile {}",
            inputs.profile
        );
    };
    let base = format!("{}\n\n{}", profile_text.trim_end(), inputs.sizing_lines);
    let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
    let mut notes = Vec::new();
    for (i, name, _) in setting_lines(&base) {
        if !pre.knows(&name) {
            lines[i] = format!("# not in PostgreSQL {v}: {}", lines[i]);
            notes.push(format!(
                "base setting {name} does not exist in PostgreSQL {v}: left out"
            ));
        }
    }

    // What the user and the named config ask for must all exist.
    let mut asked: Vec<(String, String, String)> = Vec::new();
    for (n, val) in inputs.config.settings() {
        asked.push((n.clone(), val.clone(), inputs.config.origin()));
    }
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

    let base_text = format!(
        "{}\n\n{}",
        lines.join("\n").trim_end(),
        inputs.config.text()
    );
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
