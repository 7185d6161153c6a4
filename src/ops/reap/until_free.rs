//! `lease reap --apply --until-free SIZE` (and exec's `--reap-if-low`):
//! reclaim to a target (SPEC "Provisioned files, disk, and hygiene").
//!
//! The reap runs as a plain `--apply` reap does, with two differences: the
//! records go through it largest estimated reclaim first
//! ([`crate::plan::reclaim_order`]), and a candidate whose filesystem
//! already has SIZE bytes free is not sent to the retire engine
//! ([`crate::plan::target_met`]; its disposition is `not-needed`). Nothing
//! else changes: every candidate that is tried goes through the same
//! engine and the same gates, so `--until-free` never retires what a plain
//! reap would not. Free space is re-read (statvfs(3)) before each candidate,
//! so the stop follows what the removals really freed, not the estimates.

use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use serde::Serialize;

use super::{ReapDisposition, ReapItem};
use crate::model::fmt::lossless;
use crate::model::reason::HoldReason;
use crate::model::record::{Record, State};
use crate::os::atomic::free_bytes;
use crate::policy::parse_size;
use crate::store::registry::Loaded;

/// The clap value parser of `--until-free`: [`parse_size`] (the policy's,
/// shared with `min_free`), with the usage
/// message clap prints (exit 2).
///
/// # Errors
/// A message naming the accepted forms.
pub fn size_arg(s: &str) -> Result<u64, String> {
    parse_size(s).ok_or_else(|| {
        format!(
            "`{s}` is not bytes with an optional unit K, M, G or T (500M, 10G) that fits in 64 bits"
        )
    })
}

/// The estimated bytes retiring `rec` would reclaim: the bytes of the files
/// under its worktree (`st_size`, never following a symlink); 0 for records
/// a reap never retires (`retained`, `retiring`, `removed`) and when the
/// worktree is missing. Only the order of candidates depends on it.
pub(super) fn estimate(l: &Loaded) -> u64 {
    match l {
        Loaded::Ok(rec)
            if matches!(
                rec.state,
                State::Planned | State::Active | State::Terminal | State::Interrupted
            ) =>
        {
            rec.worktree
                .as_ref()
                .map_or(0, |w| super::leftovers::bytes_of(&w.path()))
        }
        _ => 0,
    }
}

/// One filesystem that holds candidates, after the reap.
#[derive(Debug, Clone, Serialize)]
pub struct TargetFs {
    /// A directory on that filesystem (a worktree root).
    pub path: String,
    /// Free bytes now (for unprivileged users, statvfs(3)).
    pub free: u64,
    /// Bytes still missing to reach the target (0 when met).
    pub short_by: u64,
}

/// A record that kept space the target needed: held or retained.
#[derive(Debug, Clone, Serialize)]
pub struct KeptBy {
    /// The record id.
    pub id: String,
    /// Its worktree.
    pub worktree: Option<String>,
    /// Its estimated reclaim in bytes.
    pub bytes: u64,
    /// Why it stayed (reason codes).
    pub reasons: Vec<HoldReason>,
}

/// The `until_free` part of a reap report.
#[derive(Debug, Clone, Serialize)]
pub struct UntilFree {
    /// The target: free bytes wanted on each filesystem holding candidates.
    pub target: u64,
    /// True when every such filesystem reached it.
    pub met: bool,
    /// Each filesystem holding candidates, with how far it stayed from the target.
    pub filesystems: Vec<TargetFs>,
    /// When the target was missed: the records that kept their space, largest first.
    pub kept_by: Vec<KeptBy>,
}

/// How far from `target` the filesystems holding `roots` (worktree roots)
/// stayed after the reap, and which held or retained items kept it there.
pub(super) fn summarize(target: u64, roots: &[PathBuf], items: &[ReapItem]) -> UntilFree {
    let mut seen = BTreeSet::new();
    let mut filesystems = Vec::new();
    for d in roots {
        if let Ok(m) = std::fs::metadata(d)
            && seen.insert(m.dev())
        {
            let free = free_bytes(d);
            filesystems.push(TargetFs {
                path: lossless(d.as_os_str().as_bytes()),
                free,
                short_by: target.saturating_sub(free),
            });
        }
    }
    let met = filesystems.iter().all(|f| f.short_by == 0);
    let mut kept_by: Vec<KeptBy> = if met {
        Vec::new()
    } else {
        items
            .iter()
            .filter(|i| {
                matches!(
                    i.disposition,
                    ReapDisposition::Held | ReapDisposition::Retained
                )
            })
            .map(|i| KeptBy {
                id: i.id.clone(),
                worktree: i.worktree.clone(),
                bytes: i.estimate.unwrap_or(0),
                reasons: i.reasons.clone(),
            })
            .collect()
    };
    kept_by.sort_by_key(|k| std::cmp::Reverse(k.bytes));
    UntilFree {
        target,
        met,
        filesystems,
        kept_by,
    }
}

/// The worktree roots of the records a reap saw (and the state root's own),
/// the filesystems `--until-free` measures.
pub(super) fn roots(worktrees: PathBuf, loaded: &[Loaded]) -> Vec<PathBuf> {
    let mut out = vec![worktrees];
    for l in loaded {
        if let Loaded::Ok(r) = l
            && r.state != State::Removed
        {
            out.push(r.root.path());
        }
    }
    out
}

/// The detail of a candidate left alone because its filesystem reached the target.
pub(super) fn not_needed(rec: &Record, free: u64, target: u64) -> String {
    format!(
        "not retired: `{}` has {free} bytes free, at or above the --until-free target of {target} bytes",
        rec.root.path().display()
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_until_free_parser_names_what_it_refused() {
        assert!(size_arg("1Q").unwrap_err().contains("1Q"));
    }
}
