//! What a run records about the database server each target ran on.

use serde::{Deserialize, Serialize};

/// What the store records about the server a target ran on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// The target spec as the user wrote it (`pg@system`, `postgres://…`).
    pub spec: String,
    /// Short label for tables (`pg15.quick`).
    pub label: String,
    /// `postgres`, `mariadb`, `mysql` or `sqlite`.
    pub dbms: String,
    /// What the server says it is (`SELECT version()`).
    pub version: String,
    /// The numeric version, e.g. `15.18`.
    pub version_number: String,
    /// Named config, if any (`quick`, `cx10b`).
    pub config_name: Option<String>,
    /// The configuration file text tidemark wrote (empty for external servers).
    pub config_text: String,
    /// Effective non-default settings, name → value, as the server reports them.
    pub settings: Vec<(String, String)>,
    /// Whether tidemark started this server (false: an external URL).
    pub managed: bool,
    /// Where the binaries came from, the data dir, and other facts.
    pub extra: serde_json::Value,
}
