//! The plan's targets from what the user wrote: config sets expanded,
//! each target's own settings and allocator split off, and the mistakes
//! (settings or an allocator for a server tidemark does not start) refused
//! in one line.

use super::sets::expand_config_set;
use super::{DEFAULT_TARGET, PlanInput, TargetPlan, TargetSpec, split_target_settings};
use crate::util::redact::redact_url_passwords;

/// The targets of `input` (the default target when none is given), each
/// with the run-wide `settings` followed by its own.
pub(super) fn build(
    input: &PlanInput,
    settings: &[(String, String)],
) -> Result<Vec<TargetPlan>, String> {
    let target_texts = if input.targets.is_empty() {
        vec![DEFAULT_TARGET.to_string()]
    } else {
        input.targets.clone()
    };
    let mut targets = Vec::new();
    for text in expand_config_set(&target_texts, input.config_set.as_deref())? {
        let (spec_text, own) = split_target_settings(&text)?;
        let (bare, allocator) = crate::server::allocator::split_allocator(&spec_text);
        let spec = TargetSpec::parse(bare)?;
        if let Some(a) = allocator
            && !spec.starts_server()
        {
            return Err(format!(
                "target '{spec_text}': +{} preloads an allocator into a server tidemark starts; an external server or SQLite is not started by tidemark: drop +{}",
                a.name(),
                a.name()
            ));
        }
        let mut all = settings.to_vec();
        all.extend(own.iter().cloned());
        if !all.is_empty() && !spec.is_managed() {
            return Err(format!(
                "-c/--set applies to servers tidemark starts, but target '{}' is external: drop the -c options or change the server's own configuration",
                redact_url_passwords(&text)
            ));
        }
        targets.push(TargetPlan {
            // Shown and stored: the URL's password stays in `spec`.
            spec_text: redact_url_passwords(&text),
            spec,
            settings: all,
            own_settings: own,
            allocator,
        });
    }
    Ok(targets)
}
