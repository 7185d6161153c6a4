//! `lease restore ID`: bring back an archived worktree.

use super::exit;
use crate::error::Result;
use crate::ops::restore::RestoreRequest;
use std::path::PathBuf;

/// The arguments of `lease restore`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Record id (or unique prefix of 8+ hex digits) or the worktree path of the retired worktree.
    pub(super) id: String,
    /// Where to create the worktree (must not exist).
    #[arg(long, value_name = "PATH")]
    pub(super) to: Option<std::path::PathBuf>,
    /// Branch name to use (held `branch-moved` if it exists elsewhere).
    #[arg(long, value_name = "NAME")]
    pub(super) branch: Option<String>,
    /// Restore again although the archive was restored before.
    #[arg(long)]
    pub(super) again: bool,
    /// Print JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease restore`.
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    restore(ctx, a.id, a.to, a.branch, a.again, a.json)
}

pub(super) fn restore(
    ctx: &crate::ops::Ctx,
    id: String,
    to: Option<PathBuf>,
    branch: Option<String>,
    again: bool,
    json: bool,
) -> Result<u8> {
    let id = super::target::id_or_path(ctx, &id)?;
    let r = crate::ops::restore::restore(
        ctx,
        &RestoreRequest {
            id: id.clone(),
            to,
            branch,
            again,
        },
    )
    .map_err(super::target::about(None, &id))?;
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&r).expect("a report serializes")
        );
    } else {
        out!(
            "restored {} into `{}` on branch `{}` at {} (new record {})",
            super::short_id(&r.from),
            r.worktree,
            r.branch,
            r.head,
            super::short_id(&r.id)
        );
    }
    Ok(exit::OK)
}
