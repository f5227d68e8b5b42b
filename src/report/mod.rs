//! What a user reads: live progress, the terminal summary; the comparison
//! report (Markdown, HTML, JSON) is built on the stored runs.

pub mod ibench;
pub mod progress;
pub mod terminal;
