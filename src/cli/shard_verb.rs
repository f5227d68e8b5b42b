//! `tidemark shard`: the verb a sharded step's coordinator starts once per
//! shard (`run --client-hosts`); its work is `orchestrate::shards`.

use clap::Args;

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
    #[arg(long)]
    pub step: i64,
    /// This shard's number (0-based).
    #[arg(long)]
    pub shard: u32,
    /// End when standard input closes (a shard started over ssh).
    #[arg(long)]
    pub lifeline: bool,
}
