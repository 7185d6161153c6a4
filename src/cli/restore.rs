//! `restore`, `archives` and `archive verify`: requests, rendering and exit
//! codes.

use std::path::PathBuf;

use super::exit;
use crate::error::Result;
use crate::restore::RestoreRequest;

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

pub(super) fn archives(json: bool) -> Result<u8> {
    let list = crate::restore::archives()?;
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&list).expect("a report serializes")
        );
        return Ok(exit::OK);
    }
    if list.is_empty() {
        out!("no archives");
        return Ok(exit::OK);
    }
    out!("ID            TIP           COMMITS  SIZE      RESTORED  REPOSITORY");
    for a in &list {
        out!(
            "{:<12}  {:<12}  {:>7}  {:>8}  {:>8}  {}",
            &a.id[..12.min(a.id.len())],
            &a.tip[..12.min(a.tip.len())],
            a.commits,
            match (a.size, a.kind.as_str()) {
                (Some(s), _) => s.to_string(),
                (None, "remote") => "remote".to_string(),
                (None, _) => "missing".to_string(),
            },
            a.receipts.len(),
            a.repository
        );
    }
    Ok(exit::OK)
}

pub(super) fn verify(id: &str, json: bool) -> Result<u8> {
    let rec = crate::restore::verify(id)?;
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
            &rec.id[..12.min(rec.id.len())],
            a.map(|a| a.location.as_str()).unwrap_or("-")
        );
    }
    Ok(exit::OK)
}

pub(super) fn drop(id: &str, unreachable_ok: bool, json: bool) -> Result<u8> {
    let r = crate::restore::drop(id, unreachable_ok)?;
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&r).expect("a report serializes")
        );
    } else {
        out!(
            "dropped the {} archive of {} (`{}`, {} tip(s))",
            r.kind,
            &r.id[..12.min(r.id.len())],
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
