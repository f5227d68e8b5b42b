//! Named MySQL/MariaDB configurations and config sets, shipped as data files
//! (`config/mysql/configs.toml`, `config/mysql/sets.toml`).
//!
//! A named config is a small diff on the shipped base, named as the seeds
//! name theirs (`z12a`, `bl1_sync1_dwDO`), so a result can be read next to
//! theirs and the diff is short enough to store with it. Some settings exist
//! only in one family or from some version on (`innodb_doublewrite =
//! DETECT_ONLY` is MySQL 8.0.30+): a config says so, and [`MyNamedConfig::supports`]
//! refuses such a target before any server starts.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::binaries::Flavor;
use crate::server::postgres::named::{ConfigSet, parse_named, scalar_text};

const CONFIGS_TOML: &str = include_str!("../../../config/mysql/configs.toml");
const SETS_TOML: &str = include_str!("../../../config/mysql/sets.toml");

/// The config a managed MySQL/MariaDB target gets without `+NAME`.
pub const DEFAULT_CONFIG: &str = "base";

/// A shipped named MySQL/MariaDB configuration.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MyNamedConfig {
    #[serde(skip)]
    pub name: String,
    /// One line saying what it changes.
    pub about: String,
    /// The families that have every setting, with their first version
    /// (`{ mysql = "8.0.30" }`); empty: every family and version.
    #[serde(default)]
    pub needs: BTreeMap<String, String>,
    /// A family's first version that no longer has one of the settings.
    #[serde(default)]
    pub removed_in: BTreeMap<String, String>,
    /// The setting `needs` / `removed_in` are about, for messages.
    #[serde(default)]
    pub limited_by: Option<String>,
    /// What to use where it does not run, for messages.
    #[serde(default)]
    pub instead: Option<String>,
    /// A complete file per version range (`config/mysql/seeds/`, see
    /// [`super::seeds`]) instead of a diff on the base.
    #[serde(default)]
    pub complete: bool,
    /// name → value, in name order.
    #[serde(deserialize_with = "option_values")]
    pub settings: Vec<(String, String)>,
}

/// TOML scalars as option-file text (`1`, `"ROW"`, `true` → `ON`).
fn option_values<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<(String, String)>, D::Error> {
    let table = toml::Table::deserialize(d)?;
    table
        .into_iter()
        .map(|(k, v)| {
            let text = match v {
                toml::Value::Boolean(b) => Some(if b { "ON" } else { "OFF" }.to_string()),
                other => scalar_text(&other),
            };
            text.map(|t| (k.clone(), t)).ok_or(k)
        })
        .collect::<Result<_, String>>()
        .map_err(|k| serde::de::Error::custom(format!("option {k} is not a string or number")))
}

/// Every shipped MySQL/MariaDB config, by name.
pub fn my_named_configs() -> &'static [MyNamedConfig] {
    static ALL: OnceLock<Vec<MyNamedConfig>> = OnceLock::new();
    ALL.get_or_init(|| {
        parse_named(
            CONFIGS_TOML,
            "config/mysql/configs.toml",
            |c: &mut MyNamedConfig, n| c.name = n,
        )
    })
}

/// Every shipped MySQL/MariaDB config set, by name.
pub fn my_config_sets() -> &'static [ConfigSet] {
    static ALL: OnceLock<Vec<ConfigSet>> = OnceLock::new();
    ALL.get_or_init(|| {
        parse_named(
            SETS_TOML,
            "config/mysql/sets.toml",
            |c: &mut ConfigSet, n| c.name = n,
        )
    })
}

/// The shipped config `name`.
pub fn my_named_config(name: &str) -> Option<&'static MyNamedConfig> {
    my_named_configs().iter().find(|c| c.name == name)
}

/// The shipped config set `name`.
pub fn my_config_set(name: &str) -> Option<&'static ConfigSet> {
    my_config_sets().iter().find(|c| c.name == name)
}

/// The names of the shipped configs, `base` first.
pub fn my_config_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = my_named_configs().iter().map(|c| c.name.as_str()).collect();
    names.sort_by_key(|n| (*n != DEFAULT_CONFIG, *n));
    names
}

/// The shipped config `name`, or an error listing the known ones.
pub fn resolve_my_config(name: &str) -> Result<&'static MyNamedConfig, String> {
    my_named_config(name).ok_or_else(|| {
        let names = my_config_names();
        format!(
            "unknown MySQL/MariaDB config '{name}'{}: use one of {}",
            crate::util::suggest::did_you_mean(name, names.iter().copied()),
            names.join(", ")
        )
    })
}

/// `10.11.19` → `[10, 11, 19]` (parts that do not parse count as 0).
fn version_parts(v: &str) -> Vec<u32> {
    v.split('.')
        .map(|p| {
            p.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or(0)
        })
        .collect()
}

/// Whether version `have` is `want` or later (`8.0.30` ≤ `8.4.7`).
pub fn version_at_least(have: &str, want: &str) -> bool {
    let (h, w) = (version_parts(have), version_parts(want));
    for i in 0..h.len().max(w.len()) {
        let (a, b) = (
            h.get(i).copied().unwrap_or(0),
            w.get(i).copied().unwrap_or(0),
        );
        if a != b {
            return a > b;
        }
    }
    true
}

impl MyNamedConfig {
    /// Whether `flavor` at `version` has every setting; the error says which
    /// family and versions do, what the config sets, and what to use instead.
    pub fn supports(&self, flavor: Flavor, version: &str) -> Result<(), String> {
        self.check_support(flavor, version)
            .map_err(|e| match &self.instead {
                Some(instead) => format!("{e}: {instead}"),
                None => e,
            })
    }

    fn check_support(&self, flavor: Flavor, version: &str) -> Result<(), String> {
        let family = flavor.as_str();
        let title = flavor.title();
        let sets = self.limited_by.clone().unwrap_or_else(|| {
            let parts: Vec<String> = self
                .settings
                .iter()
                .map(|(n, v)| format!("{n} = {v}"))
                .collect();
            parts.join(", ")
        });
        if !self.needs.is_empty() {
            let Some(first) = self.needs.get(family) else {
                let who: Vec<String> = self
                    .needs
                    .iter()
                    .map(|(f, v)| format!("{} {v} or later", family_title(f)))
                    .collect();
                return Err(format!(
                    "config {} needs {} (it sets {sets}), and this is {title} {version}",
                    self.name,
                    who.join(" or ")
                ));
            };
            if !version_at_least(version, first) {
                return Err(format!(
                    "config {} needs {title} {first} or later (it sets {sets}), and this is {title} {version}",
                    self.name
                ));
            }
        }
        if let Some(gone) = self.removed_in.get(family)
            && version_at_least(version, gone)
        {
            return Err(format!(
                "config {} sets {sets}, which {title} {gone} and later no longer have, and this is {title} {version}",
                self.name
            ));
        }
        Ok(())
    }

    /// The lines it adds to the option file (after the profile's sizes).
    pub fn text(&self) -> String {
        if self.settings.is_empty() {
            return String::new();
        }
        let mut text = format!("# --- config {}: {} ---\n", self.name, self.about);
        for (name, value) in &self.settings {
            text.push_str(&format!("{name} = {value}\n"));
        }
        text
    }
}

/// `MySQL` for `mysql`, as messages name families.
fn family_title(family: &str) -> &str {
    match family {
        "mysql" => "MySQL",
        "mariadb" => "MariaDB",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_configs_and_sets_are_consistent() {
        let names = my_config_names();
        assert_eq!(names[0], "base");
        assert!(my_named_config("base").unwrap().settings.is_empty());
        assert!(names.contains(&"binlog") && names.contains(&"z12a"));
        let dwdo = my_named_config("bl1_sync0_dwDO").unwrap();
        let get = |c: &MyNamedConfig, n: &str| {
            c.settings
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            get(dwdo, "innodb_doublewrite").as_deref(),
            Some("DETECT_ONLY")
        );
        assert_eq!(
            get(dwdo, "innodb_flush_log_at_trx_commit").as_deref(),
            Some("2")
        );
        assert_eq!(get(dwdo, "sync_binlog").as_deref(), Some("0"));
        assert_eq!(get(dwdo, "log_bin").as_deref(), Some("binlog"));
        let bl0 = my_named_config("bl0_sync1_dw0").unwrap();
        assert_eq!(get(bl0, "log_bin"), None);
        assert_eq!(get(bl0, "innodb_doublewrite").as_deref(), Some("OFF"));
        assert_eq!(my_config_set("my-durability").unwrap().configs.len(), 12);
        assert_eq!(
            my_config_set("my-durability-nodo").unwrap().configs.len(),
            8
        );
        for set in my_config_sets() {
            assert!(set.name.starts_with("my-"), "{}", set.name);
            for c in &set.configs {
                assert!(
                    my_named_config(c).is_some(),
                    "set {} names unknown {c}",
                    set.name
                );
            }
        }
        for c in my_named_configs() {
            assert!(!c.about.contains('\n'), "{}", c.name);
            let limited = !c.needs.is_empty() || !c.removed_in.is_empty();
            assert_eq!(limited, c.limited_by.is_some(), "{}", c.name);
            assert_eq!(limited, c.instead.is_some(), "{}", c.name);
            for family in c.needs.keys().chain(c.removed_in.keys()) {
                assert!(
                    ["mysql", "mariadb"].contains(&family.as_str()),
                    "{}",
                    c.name
                );
            }
        }
        assert!(
            resolve_my_config("z99")
                .unwrap_err()
                .starts_with("unknown MySQL/MariaDB config 'z99': use one of base, binlog,")
        );
    }

    #[test]
    fn versions_and_families_limit_where_a_config_runs() {
        assert!(version_at_least("8.0.30", "8.0.30"));
        assert!(version_at_least("8.4.7", "8.0.30"));
        assert!(!version_at_least("8.0.29", "8.0.30"));
        assert!(version_at_least("10.11.19", "10.4"));
        assert!(!version_at_least("10.11.19", "11.0"));
        let dwdo = my_named_config("bl0_sync1_dwDO").unwrap();
        assert!(dwdo.supports(Flavor::Mysql, "8.4.7").is_ok());
        let e = dwdo.supports(Flavor::Mysql, "8.0.28").unwrap_err();
        assert!(
            e.starts_with("config bl0_sync1_dwDO needs MySQL 8.0.30 or later (it sets innodb_doublewrite = DETECT_ONLY"),
            "{e}"
        );
        assert!(
            e.ends_with("and this is MySQL 8.0.28: on MariaDB and MySQL before 8.0.30 use the dw0/dw1 configs (--config-set my-durability-nodo)"),
            "{e}"
        );
        let e = dwdo.supports(Flavor::MariaDb, "10.11.19").unwrap_err();
        assert!(
            e.contains("needs MySQL 8.0.30 or later") && e.contains("this is MariaDB 10.11.19"),
            "{e}"
        );
        let z12a = my_named_config("z12a").unwrap();
        assert!(z12a.supports(Flavor::MariaDb, "10.11.19").is_ok());
        assert!(z12a.supports(Flavor::MariaDb, "10.2.11").is_ok());
        assert!(z12a.supports(Flavor::Mysql, "5.6.51").is_ok());
        assert!(z12a.supports(Flavor::Mysql, "5.6.6").is_err());
        let e = z12a.supports(Flavor::MariaDb, "11.4.5").unwrap_err();
        assert!(e.contains("innodb_flush_method = O_DIRECT_NO_FSYNC, which MariaDB 11.0 and later no longer have"), "{e}");
        assert!(
            my_named_config("bl1_sync1_dw1")
                .unwrap()
                .supports(Flavor::MariaDb, "10.4.1")
                .is_ok()
        );
        let text = dwdo.text();
        assert!(text.starts_with("# --- config bl0_sync1_dwDO: "), "{text}");
        assert!(
            text.contains("\ninnodb_doublewrite = DETECT_ONLY\n"),
            "{text}"
        );
        assert_eq!(my_named_config("base").unwrap().text(), "");
    }
}
