//! `lease restore ID`: bring back an archived worktree.

use super::exit;
use crate::error::Result;
use crate::restore::RestoreRequest;
use std::path::PathBuf;

pub(super) fn restore(
    id: String,
    to: Option<PathBuf>,
    branch: Option<String>,
    again: bool,
    json: bool,
) -> Result<u8> {
    let r = crate::restore::restore(&RestoreRequest {
        id,
        to,
        branch,
        again,
    })?;
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&r).expect("a report serializes")
        );
    } else {
        out!(
            "restored {} into `{}` on branch `{}` at {} (new record {})",
            &r.from[..12.min(r.from.len())],
            r.worktree,
            r.branch,
            r.head,
            &r.id[..12.min(r.id.len())]
        );
    }
    Ok(exit::OK)
}
