//! Named PostgreSQL configurations and config sets, shipped as data files
//! (`config/postgres/configs.toml`, `config/postgres/sets.toml`), and
//! configuration files a user names by path.
//!
//! A named config is a small diff on the base, as the seeds keep theirs
//! (`conf.diff.cx10b`): the benchmark compares configurations, so each one
//! must be short enough to read in a report and stored with the results.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;

const CONFIGS_TOML: &str = include_str!("../../../config/postgres/configs.toml");
const SETS_TOML: &str = include_str!("../../../config/postgres/sets.toml");

/// A shipped named configuration.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedConfig {
    #[serde(skip)]
    pub name: String,
    /// One line saying what it changes.
    pub about: String,
    /// First major version that has all its settings.
    #[serde(default)]
    pub needs: Option<u32>,
    /// name → value, in name order (empty for a complete file).
    #[serde(default, deserialize_with = "string_values")]
    pub settings: Vec<(String, String)>,
    /// A complete file of the seeds instead of a diff on the base (see
    /// [`super::seed_files`]).
    #[serde(default)]
    pub file: Option<String>,
    /// The seeds' (memory GB, max_wal_size GB) pairs a complete file's
    /// max_wal_size is scaled by.
    #[serde(default)]
    pub wal_scale: Vec<[f64; 2]>,
}

/// A shipped list of named configs to compare (PostgreSQL's and
/// MySQL/MariaDB's alike).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigSet {
    #[serde(skip)]
    pub name: String,
    pub about: String,
    pub configs: Vec<String>,
}

/// TOML values of any scalar type, as the text postgresql.conf gets.
fn string_values<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<(String, String)>, D::Error> {
    let table = toml::Table::deserialize(d)?;
    table
        .into_iter()
        .map(|(k, v)| scalar_text(&v).map(|t| (k.clone(), t)).ok_or(k))
        .collect::<Result<_, String>>()
        .map_err(|k| {
            serde::de::Error::custom(format!("setting {k} is not a string, number or boolean"))
        })
}

/// A TOML scalar as setting text (`"8MB"`, `4`, `true` → `on`).
pub fn scalar_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(if *b { "on" } else { "off" }.to_string()),
        _ => None,
    }
}

/// The tables of a shipped TOML file (`config/<family>/<what>`), each given
/// its key as its name by `name`.
pub(crate) fn parse_named<T: for<'de> Deserialize<'de>>(
    text: &str,
    what: &str,
    name: impl Fn(&mut T, String),
) -> Vec<T> {
    let table: BTreeMap<String, T> =
        toml::from_str(text).unwrap_or_else(|e| panic!("shipped {what} is malformed: {e}"));
    table
        .into_iter()
        .map(|(k, mut v)| {
            name(&mut v, k);
            v
        })
        .collect()
}

/// Every shipped named config, by name.
pub fn named_configs() -> &'static [NamedConfig] {
    static ALL: OnceLock<Vec<NamedConfig>> = OnceLock::new();
    ALL.get_or_init(|| {
        parse_named(
            CONFIGS_TOML,
            "config/postgres/configs.toml",
            |c: &mut NamedConfig, n| {
                if let Some(file) = &c.file {
                    let first = super::seed_files::first_major(file)
                        .unwrap_or_else(|| panic!("config {n} names unshipped file {file}"));
                    c.needs = Some(c.needs.unwrap_or(first).max(first));
                }
                c.name = n
            },
        )
    })
}

/// Every shipped config set, by name.
pub fn config_sets() -> &'static [ConfigSet] {
    static ALL: OnceLock<Vec<ConfigSet>> = OnceLock::new();
    ALL.get_or_init(|| {
        parse_named(
            SETS_TOML,
            "config/postgres/sets.toml",
            |c: &mut ConfigSet, n| c.name = n,
        )
    })
}

/// The names of the shipped configs, in `configs.toml`'s order.
pub fn named_config_names() -> Vec<&'static str> {
    named_configs().iter().map(|c| c.name.as_str()).collect()
}

/// The shipped config `name`.
pub fn named_config(name: &str) -> Option<&'static NamedConfig> {
    named_configs().iter().find(|c| c.name == name)
}

/// The shipped config set `name`.
pub fn config_set(name: &str) -> Option<&'static ConfigSet> {
    config_sets().iter().find(|c| c.name == name)
}

/// Whether a `+CONFIG` part names a file rather than a shipped config.
pub fn is_config_path(config: &str) -> bool {
    config.contains('/') || config.ends_with(".conf")
}

/// The configuration a target asked for after `+`.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigChoice {
    Named(&'static NamedConfig),
    /// A postgresql.conf fragment the user wrote.
    File {
        path: PathBuf,
        text: String,
        settings: Vec<(String, String)>,
    },
}

impl ConfigChoice {
    /// Resolves `+config`: a shipped name, or a readable file.
    pub fn resolve(config: &str) -> Result<ConfigChoice, String> {
        if is_config_path(config) {
            let path = PathBuf::from(config);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                format!("config file {config} cannot be read ({e}): name a postgresql.conf fragment or a shipped config")
            })?;
            let settings = setting_lines(&text)
                .into_iter()
                .map(|(_, n, v)| (n, v))
                .collect();
            return Ok(ConfigChoice::File {
                path,
                text,
                settings,
            });
        }
        named_config(config)
            .map(ConfigChoice::Named)
            .ok_or_else(|| {
                let names = named_config_names();
                format!(
                    "unknown config '{config}'{}: use one of {} or a file path ending in .conf",
                    crate::util::suggest::did_you_mean(config, names.iter().copied()),
                    names.join(", ")
                )
            })
    }

    /// The name stored and shown in labels (`cx10b`, `my` for `./my.conf`).
    pub fn label(&self) -> String {
        match self {
            ConfigChoice::Named(c) => c.name.clone(),
            ConfigChoice::File { path, .. } => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "file".into()),
        }
    }

    /// Where its settings come from, for messages (`config cx10b`).
    pub fn origin(&self) -> String {
        match self {
            ConfigChoice::Named(c) => format!("config {}", c.name),
            ConfigChoice::File { path, .. } => format!("config file {}", path.display()),
        }
    }

    /// The settings it changes.
    pub fn settings(&self) -> &[(String, String)] {
        match self {
            ConfigChoice::Named(c) => &c.settings,
            ConfigChoice::File { settings, .. } => settings,
        }
    }

    /// The lines it adds to postgresql.conf.
    pub fn text(&self) -> String {
        match self {
            ConfigChoice::Named(c) => {
                let mut text = format!("# --- config {}: {} ---\n", c.name, c.about);
                for (name, value) in &c.settings {
                    text.push_str(&format!("{name} = '{}'\n", value.replace('\'', "''")));
                }
                text
            }
            ConfigChoice::File { path, text, .. } => {
                format!(
                    "# --- config file {} ---\n{}\n",
                    path.display(),
                    text.trim_end()
                )
            }
        }
    }
}

/// The `name = value` lines of postgresql.conf text: (line index, name,
/// value without quotes or comment). `include` lines are not followed.
pub fn setting_lines(text: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let split = line
            .find(|c: char| c == '=' || c.is_whitespace())
            .unwrap_or(line.len());
        let name = line[..split].trim();
        let rest = line[split..]
            .trim_start()
            .trim_start_matches('=')
            .trim_start();
        let value = if let Some(quoted) = rest.strip_prefix('\'') {
            quoted.split('\'').next().unwrap_or("").to_string()
        } else {
            rest.split('#').next().unwrap_or("").trim().to_string()
        };
        if !name.is_empty() {
            out.push((i, name.to_string(), value));
        }
    }
    out
}

/// `path` relative to `base_dir` unless absolute (plan files name config
/// files relative to themselves).
pub fn relative_to(base_dir: &Path, path: &str) -> String {
    if Path::new(path).is_absolute() {
        path.to_string()
    } else {
        base_dir.join(path).display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_configs_and_sets_are_consistent() {
        let base = named_config("base").unwrap();
        assert!(base.settings.is_empty() && base.file.is_none());
        let a = named_config("cx10a").unwrap();
        assert_eq!((a.file.as_deref(), a.needs), (Some("cx10a"), Some(12)));
        let d = named_config("cx10d").unwrap();
        assert_eq!((d.file.as_deref(), d.needs), (Some("cx10d"), Some(18)));
        assert_eq!(named_config("x10b").unwrap().file.as_deref(), Some("cx10b"));
        assert_eq!(named_config("a27").unwrap().needs, Some(15));
        assert_eq!(named_config("a28").unwrap().needs, Some(13));
        for c in named_configs() {
            assert_eq!(c.file.is_some(), !c.wal_scale.is_empty(), "{}", c.name);
        }
        let lz4 = named_config("sync1_compLZ4_fpi0").unwrap();
        assert!(
            lz4.settings
                .contains(&("wal_compression".into(), "lz4".into()))
        );
        assert!(
            lz4.settings
                .contains(&("full_page_writes".into(), "off".into()))
        );
        let durability = config_set("pg-durability").unwrap();
        assert_eq!(durability.configs.len(), 12);
        for set in config_sets() {
            for c in &set.configs {
                assert!(
                    named_config(c).is_some(),
                    "set {} names unknown {c}",
                    set.name
                );
            }
        }
        for c in named_configs() {
            assert!(!c.about.contains('\n'), "{}", c.name);
        }
    }

    #[test]
    fn config_choices_resolve_names_and_files() {
        let c = ConfigChoice::resolve("sync1_comp1_fpi1").unwrap();
        assert_eq!(c.label(), "sync1_comp1_fpi1");
        assert!(c.text().contains("wal_compression = 'pglz'"));
        let e = ConfigChoice::resolve("cx99").unwrap_err();
        assert!(
            e.starts_with("unknown config 'cx99': use one of a27, a28, base, cx10a"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mine.conf");
        std::fs::write(&file, "work_mem = '8MB'  # more\nfsync off\n").unwrap();
        let c = ConfigChoice::resolve(file.to_str().unwrap()).unwrap();
        assert_eq!(c.label(), "mine");
        assert_eq!(
            c.settings(),
            [
                ("work_mem".to_string(), "8MB".to_string()),
                ("fsync".to_string(), "off".to_string())
            ]
        );
        assert!(
            ConfigChoice::resolve("/nonexistent/x.conf")
                .unwrap_err()
                .contains("cannot be read")
        );
    }

    #[test]
    fn setting_lines_skip_comments() {
        let lines =
            setting_lines("# c\n\nshared_buffers = 1GB # x\nlog_line_prefix = '%m # [%p] '\n");
        assert_eq!(lines[0], (2, "shared_buffers".into(), "1GB".into()));
        assert_eq!(lines[1], (3, "log_line_prefix".into(), "%m # [%p] ".into()));
    }
}
