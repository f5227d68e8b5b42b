//! Server connection limits for the plan's client counts: managed servers
//! get a `max_connections` that fits the largest count of a sweep, and a
//! user's own smaller setting is refused before anything starts.

use super::TargetPlan;

/// Connections tidemark opens beside the clients (admin, size queries,
/// the samplers' and housekeeping's), kept free on every server.
pub const RESERVED_CONNECTIONS: u32 = 20;

/// The `max_connections` the base configurations give (PostgreSQL's; the
/// MariaDB/MySQL base allows more): a plan that needs more sizes it.
const BASE_MAX_CONNECTIONS: u32 = 200;

/// The server-side connections a plan whose largest client count is
/// `largest` needs.
pub fn needed(largest: u32) -> u32 {
    largest.saturating_add(RESERVED_CONNECTIONS)
}

/// Sizes `max_connections` of the managed PostgreSQL and MySQL/MariaDB
/// targets for `largest` clients: when the base's limit is too small the
/// setting goes first among the run-wide `-c` settings (so a user's own
/// wins), and a user's own that is too small is an error naming it.
pub fn size_max_connections(targets: &mut [TargetPlan], largest: u32) -> Result<(), String> {
    let need = needed(largest);
    for t in targets.iter_mut() {
        if !t.spec.starts_server() {
            continue;
        }
        let given = t
            .settings
            .iter()
            .rev()
            .find(|(name, _)| name.eq_ignore_ascii_case("max_connections"));
        match given {
            Some((_, value)) => {
                let v: u32 = value.trim().parse().map_err(|_| {
                    format!(
                        "target {}: max_connections = {value} is not a number: give a count",
                        t.spec_text
                    )
                })?;
                if v < need {
                    return Err(format!(
                        "target {}: max_connections = {v} is below the {need} connections --threads needs ({largest} clients + {RESERVED_CONNECTIONS} reserved): raise max_connections or lower --threads",
                        t.spec_text
                    ));
                }
            }
            None if need > BASE_MAX_CONNECTIONS => {
                t.settings
                    .insert(0, ("max_connections".to_string(), need.to_string()));
            }
            None => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::target::TargetSpec;

    fn target(spec: &str, settings: &[(&str, &str)]) -> TargetPlan {
        let own: Vec<(String, String)> = settings
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        TargetPlan {
            spec_text: spec.into(),
            spec: TargetSpec::parse(spec).unwrap(),
            settings: own.clone(),
            own_settings: own,
            allocator: None,
        }
    }

    #[test]
    fn large_sweeps_raise_the_managed_limit_small_ones_keep_the_base() {
        let mut t = vec![target("pg@system", &[]), target("mariadb@system", &[])];
        size_max_connections(&mut t, 64).unwrap();
        assert!(t.iter().all(|t| t.settings.is_empty()));
        size_max_connections(&mut t, 1024).unwrap();
        for t in &t {
            assert_eq!(t.settings, [("max_connections".into(), "1044".into())]);
            assert!(t.own_settings.is_empty(), "run-wide, not the target's own");
        }
    }

    #[test]
    fn a_users_too_small_limit_is_refused_naming_the_setting() {
        let mut t = vec![target("pg@system", &[("max_connections", "100")])];
        let e = size_max_connections(&mut t, 256).unwrap_err();
        assert!(
            e.contains("max_connections = 100") && e.contains("276"),
            "{e}"
        );
        let mut t = vec![target("pg@system", &[("max_connections", "2000")])];
        size_max_connections(&mut t, 1024).unwrap();
        assert_eq!(t[0].settings.len(), 1, "the user's own is kept, none added");
    }
}
