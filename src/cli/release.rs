//! `lease release ID`: let a retained worktree be retired again.

use super::exit;
use super::hold::{print_hold, root_for_record};
use crate::error::Result;

/// The arguments of `lease release`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Record id, unique prefix of 8+ hex digits, or worktree top directory.
    pub(super) id: String,
    /// Print JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease release`.
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    release(ctx, &a.id, a.json)
}

pub(super) fn release(ctx: &crate::ops::Ctx, id: &str, json: bool) -> Result<u8> {
    let reg = root_for_record(ctx, id)?;
    let id = super::target::resolve_id(&reg, id)?;
    let r = crate::ops::hold::release(&reg, &id).map_err(super::target::about(Some(&reg), &id))?;
    print_hold(&r, json);
    Ok(exit::OK)
}
