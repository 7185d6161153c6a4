//! `lease archive verify|drop ID`: work with one archive.

use super::exit;
use crate::error::Result;

/// The actions of `lease archive`.
#[derive(Debug, clap::Subcommand)]
pub(super) enum ArchiveCmd {
    /// Re-verify an archive (sha256, unbundle with fsck): exit 0 or 1.
    Verify {
        /// Record id, unique prefix of 8+ hex digits, or worktree top directory.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete an archive (bundle and archive record) once every commit it
    /// holds is reachable from the trusted remote's branches, confirmed
    /// with `git ls-remote`; held `archive-unreachable` otherwise (exit 1).
    ///
    /// Archival refs on the remote are deleted too, with a push guarded by
    /// their recorded commits.
    Drop {
        /// Record id, unique prefix of 8+ hex digits, or worktree top directory.
        id: String,
        /// Drop it even though some commits exist nowhere else (written to the audit log).
        #[arg(long)]
        unreachable_ok: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(super) fn verify(ctx: &crate::ops::Ctx, id: &str, json: bool) -> Result<u8> {
    let id = super::target::id_or_path(ctx, id)?;
    let rec = crate::ops::restore::verify(ctx, &id).map_err(super::target::about(None, &id))?;
    let a = rec.archive.as_ref();
    if json {
        out_raw!(
            "{}",
            serde_json::json!({
                "id": rec.id,
                "verified": true,
                "location": a.map(|a| a.location.clone()),
                "sha256": a.map(|a| a.sha256.clone()),
            })
        );
    } else {
        out!(
            "archive of {} verified: `{}`",
            super::short_id(&rec.id),
            a.map(|a| a.location.as_str()).unwrap_or("-")
        );
    }
    Ok(exit::OK)
}

pub(super) fn drop(
    ctx: &crate::ops::Ctx,
    id: &str,
    unreachable_ok: bool,
    json: bool,
) -> Result<u8> {
    let id = super::target::id_or_path(ctx, id)?;
    let r = crate::ops::restore::drop(ctx, &id, unreachable_ok)
        .map_err(super::target::about(None, &id))?;
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&r).expect("a report serializes")
        );
    } else {
        out!(
            "dropped the {} archive of {} (`{}`, {} tip(s))",
            r.kind,
            super::short_id(&r.id),
            r.location,
            r.tips.len()
        );
        for name in &r.remote_refs_deleted {
            out!("  deleted `{name}` on the remote");
        }
        if !r.unreachable.is_empty() {
            out!(
                "  --unreachable-ok: {} commit(s) reachable from no durable ref are gone: {}",
                r.unreachable.len(),
                r.unreachable.join(", ")
            );
        }
    }
    Ok(exit::OK)
}
