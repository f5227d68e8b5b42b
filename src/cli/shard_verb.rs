//! `tidemark shard`: the verb a sharded step's coordinator starts once per
//! shard (`run --client-hosts`); its work is `orchestrate::shards`.

use clap::Args;

/// Runs the verb: one shard, or the store check.
pub fn run(a: &ShardArgs) -> anyhow::Result<i32> {
    use crate::orchestrate::shards;
    match (a.step, a.shard) {
        (Some(step), Some(shard)) if !a.check_store => {
            shards::run_shard(&a.store, step, shard, a.lifeline)
        }
        _ => shards::check_store(&a.store).map(|()| 0),
    }
}

/// `tidemark shard …`: which shard of which sharded step, and the store
/// whose board holds it.
#[derive(Args, Debug)]
pub struct ShardArgs {
    /// The shared PostgreSQL store the coordinator uses.
    #[arg(
        long,
        value_name = "URL",
        env = "TIDEMARK_STORE",
        hide_env_values = true
    )]
    pub store: String,
    /// The sharded step's id on the store's board.
    #[arg(long, required_unless_present = "check_store")]
    pub step: Option<i64>,
    /// This shard's number (0-based).
    #[arg(long, required_unless_present = "check_store")]
    pub shard: Option<u32>,
    /// Only check that this host reaches the store, then exit (the
    /// coordinator's check before any step).
    #[arg(long)]
    pub check_store: bool,
    /// End when standard input closes (a shard started over ssh).
    #[arg(long)]
    pub lifeline: bool,
}
