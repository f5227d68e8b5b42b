//! `--config-set`: a shipped set of named configs that multiplies each
//! target, one target per config, for the family (PostgreSQL or
//! MySQL/MariaDB) the set is written for.

use super::{TargetSpec, join_target_settings, split_target_settings};
use crate::server::postgres::named::config_set;

/// A shipped config set: its configs and the family of targets it is for.
fn find_config_set(name: &str) -> Result<(&'static [String], ConfigFamily), String> {
    if let Some(set) = config_set(name) {
        return Ok((&set.configs, ConfigFamily::Postgres));
    }
    if let Some(set) = crate::server::mysql::named::my_config_set(name) {
        return Ok((&set.configs, ConfigFamily::Mysql));
    }
    let names: Vec<&str> = crate::server::postgres::named::config_sets()
        .iter()
        .map(|s| s.name.as_str())
        .chain(
            crate::server::mysql::named::my_config_sets()
                .iter()
                .map(|s| s.name.as_str()),
        )
        .collect();
    Err(format!(
        "unknown config set '{name}'{}: use one of {}",
        crate::util::suggest::did_you_mean(name, names.iter().copied()),
        names.join(", ")
    ))
}

/// Which targets a config set configures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ConfigFamily {
    Postgres,
    Mysql,
}

impl ConfigFamily {
    fn of(spec: &TargetSpec) -> Option<ConfigFamily> {
        match spec {
            TargetSpec::ManagedPostgres { .. } => Some(ConfigFamily::Postgres),
            TargetSpec::ManagedMysql { .. } => Some(ConfigFamily::Mysql),
            _ => None,
        }
    }

    /// What a set of this family is for, and the sets of the other one.
    fn mismatch(self, set: &str, target: &str, spec: &TargetSpec) -> String {
        let is = match spec {
            TargetSpec::ManagedPostgres { .. } => "PostgreSQL",
            TargetSpec::ManagedMysql { flavor, .. } => flavor.title(),
            _ => "SQLite",
        };
        let (for_whom, others): (&str, Vec<&str>) = match self {
            ConfigFamily::Postgres => (
                "PostgreSQL targets",
                crate::server::mysql::named::my_config_sets()
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect(),
            ),
            ConfigFamily::Mysql => (
                "MySQL/MariaDB targets",
                crate::server::postgres::named::config_sets()
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect(),
            ),
        };
        let fix = match ConfigFamily::of(spec) {
            Some(_) => format!("use one of {}", others.join(", ")),
            None => "SQLite targets name their config after + (wal, wal-full, delete)".into(),
        };
        format!("--config-set {set} is for {for_whom}, and target '{target}' is {is}: {fix}")
    }
}

/// Targets after `--config-set`: each target once per config of the set,
/// target by target, keeping its own settings. The set must be for the
/// target's family.
pub(super) fn expand_config_set(
    targets: &[String],
    set: Option<&str>,
) -> Result<Vec<String>, String> {
    let Some(name) = set else {
        return Ok(targets.to_vec());
    };
    let (configs, family) = find_config_set(name)?;
    let mut out = Vec::new();
    for text in targets {
        let (spec_text, own) = split_target_settings(text)?;
        let (bare, allocator) = crate::server::allocator::split_allocator(&spec_text);
        let spec = TargetSpec::parse(bare)?;
        if !spec.is_managed() {
            return Err(format!(
                "--config-set {name} configures servers tidemark starts, but target '{text}' is external: drop one of them"
            ));
        }
        if ConfigFamily::of(&spec) != Some(family) {
            return Err(family.mismatch(name, text, &spec));
        }
        if let Some(c) = spec.config() {
            return Err(format!(
                "target '{text}' names config '{c}' and --config-set {name} gives configs too: drop one of them"
            ));
        }
        let tail = allocator
            .map(|a| format!("+{}", a.name()))
            .unwrap_or_default();
        for c in configs {
            out.push(join_target_settings(&format!("{bare}+{c}{tail}"), &own));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::tests::input;
    use super::super::*;

    #[test]
    fn config_sets_expand_each_target_keeping_its_settings() {
        let mut i = input();
        i.targets = vec!["pg@18.4:io_workers=8".into(), "pg@system".into()];
        i.config_set = Some("pg-io-method".into());
        i.settings = vec!["work_mem=8MB".into()];
        let p = Plan::build(i).unwrap();
        let specs: Vec<&str> = p.targets.iter().map(|t| t.spec_text.as_str()).collect();
        assert_eq!(
            specs,
            [
                "pg@18.4+cx10b:io_workers=8",
                "pg@18.4+cx10cw4:io_workers=8",
                "pg@18.4+cx10d:io_workers=8",
                "pg@system+cx10b",
                "pg@system+cx10cw4",
                "pg@system+cx10d"
            ]
        );
        let first = &p.targets[0];
        assert_eq!(first.own_settings, [("io_workers".into(), "8".into())]);
        assert_eq!(first.settings[0], ("work_mem".into(), "8MB".into()));
        assert_eq!(first.settings.len(), 2);
        let mut i = input();
        i.config_set = Some("pg-durability".into());
        assert_eq!(Plan::build(i).unwrap().targets.len(), 12);
    }

    #[test]
    fn mysql_config_sets_expand_to_the_seeds_matrix() {
        let mut i = input();
        i.targets = vec![
            "mysql@/opt/mysql-8.4.7:innodb_io_capacity=500".into(),
            "mariadb@system".into(),
        ];
        i.config_set = Some("my-durability".into());
        let p = Plan::build(i).unwrap();
        let specs: Vec<&str> = p.targets.iter().map(|t| t.spec_text.as_str()).collect();
        let mut want = Vec::new();
        for head in ["mysql@/opt/mysql-8.4.7", "mariadb@system"] {
            for bl in 0..2 {
                for sync in 0..2 {
                    for dw in ["0", "1", "DO"] {
                        let own = if head.starts_with("mysql") {
                            ":innodb_io_capacity=500"
                        } else {
                            ""
                        };
                        want.push(format!("{head}+bl{bl}_sync{sync}_dw{dw}{own}"));
                    }
                }
            }
        }
        assert_eq!(specs, want);
        assert_eq!(
            p.targets[2].spec.config(),
            Some("bl0_sync0_dwDO"),
            "the config is the target's"
        );
        assert_eq!(
            p.targets[0].own_settings,
            [("innodb_io_capacity".into(), "500".into())]
        );
        let mut i = input();
        i.targets = vec!["mariadb@10.2+jemalloc".into()];
        i.config_set = Some("my-flush-method".into());
        let p = Plan::build(i).unwrap();
        let specs: Vec<&str> = p.targets.iter().map(|t| t.spec_text.as_str()).collect();
        assert_eq!(
            specs,
            ["mariadb@10.2+z12a+jemalloc", "mariadb@10.2+z12b+jemalloc"]
        );
        assert_eq!(
            p.targets[1].allocator,
            Some(crate::server::allocator::Allocator::Jemalloc)
        );
        let mut i = input();
        i.targets = vec!["mariadb".into()];
        i.config_set = Some("my-durability-nodo".into());
        let p = Plan::build(i).unwrap();
        assert_eq!(p.targets.len(), 8);
        assert!(p.targets.iter().all(|t| !t.spec_text.contains("dwDO")));
        // The wrong family, SQLite and external servers are one-line errors.
        for (target, set, want) in [
            (
                "mariadb@system",
                "pg-durability",
                "--config-set pg-durability is for PostgreSQL targets, and target 'mariadb@system' is MariaDB: use one of my-binlog,",
            ),
            (
                "pg@system",
                "my-durability",
                "--config-set my-durability is for MySQL/MariaDB targets, and target 'pg@system' is PostgreSQL: use one of pg-durability",
            ),
            (
                "sqlite:/tmp/x.db",
                "my-binlog",
                "target 'sqlite:/tmp/x.db' is SQLite: SQLite targets name",
            ),
            ("mysql://u@h/d", "my-binlog", "is external"),
            (
                "mariadb+binlog",
                "my-durability",
                "names config 'binlog' and --config-set",
            ),
        ] {
            let mut i = input();
            i.targets = vec![target.into()];
            i.config_set = Some(set.into());
            let e = Plan::build(i).unwrap_err();
            assert!(e.contains(want), "{e}");
            assert!(!e.contains('\n'));
        }
    }
}
