//! `lease adopt PATH`: record an unrecorded linked worktree.

use super::exit;
use crate::error::Result;
use crate::model::record::Owner;

/// The arguments of `lease adopt`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The worktree's top directory (as `git worktree list` names it).
    pub(super) path: std::path::PathBuf,
    /// Owner as KIND:NAME (default: config `owner` or $LEASE_OWNER, else manual:USER).
    #[arg(long, value_name = "KIND:NAME")]
    pub(super) owner: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease adopt`.
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    adopt(ctx, &a.path, a.owner.as_deref(), a.json)
}

pub(super) fn adopt(
    ctx: &crate::ops::Ctx,
    path: &std::path::Path,
    owner: Option<&str>,
    json: bool,
) -> Result<u8> {
    let owner = owner.map(Owner::parse).transpose()?;
    let r = crate::ops::launcher::adopt_only(ctx, path, owner)?;
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&r).expect("a report serializes")
        );
    } else {
        out!(
            "adopted `{}` as {} ({}); `lease retire {}` takes it through the gates",
            r.worktree,
            r.id,
            r.state.name(),
            &r.id[..8]
        );
    }
    Ok(exit::OK)
}
