//! `retire --delete-branch`, and branch hygiene: after a removal, delete the
//! task branch only on proof (SPEC issue 5, "branch cleanup only after
//! proof"). A branch lease named itself (`lease/<id prefix>`,
//! [`plan::lease_named_branch`]) goes through the same proof without being
//! asked (SPEC "Provisioned files, disk, and hygiene"); kept, it does not
//! make the retire a hold.
//!
//! # Invariants
//! - The branch is checked out in no worktree (`git worktree list
//!   --porcelain -z`, read after the removal): `branch-checked-out`.
//! - Its tip is proven: every commit reachable from it is reachable from
//!   the durable ref or from the tips of the archive this retire verified
//!   (bundle or read-back archival refs): `branch-unproven` otherwise.
//! - Deleted with `git update-ref -d refs/heads/<b> <old tip>`: the old-value
//!   guard refuses if the branch moved since the proof; never `branch -D`.
//! - A kept branch does not undo the removal: the worktree is removed, the
//!   report says why the branch was kept, and the exit status is 1.

use std::path::PathBuf;

use super::{Engine, Locked, Reach};
use crate::error::Result;
use crate::git::{self, ops};
use crate::model::reason::{Hold, HoldReason};
use crate::model::record::{Archive, BranchCleanup};
use crate::plan;

impl Engine {
    /// Deletes the record's branch if proven; returns what happened, or
    /// `None` when the record names no branch.
    pub(super) fn clean_branch(
        &self,
        locked: &Locked,
        reach: &Reach,
        archive: Option<&Archive>,
        automatic: bool,
    ) -> Result<Option<BranchCleanup>> {
        let Some(name) = locked.rec.branch.clone() else {
            return Ok(None);
        };
        let repo = PathBuf::from(&locked.rec.repo);
        let rg = &locked.rg;
        let full = format!("refs/heads/{name}");
        let Some(tip) = ops::resolve_commit(rg, &repo, &full)? else {
            return Ok(Some(BranchCleanup {
                name,
                old_tip: None,
                deleted: false,
                reason: None,
                detail: "the branch no longer exists".into(),
                automatic,
            }));
        };
        let kept = |h: Hold| BranchCleanup {
            name: name.clone(),
            old_tip: Some(tip.clone()),
            deleted: false,
            reason: Some(h.reason),
            detail: h.detail,
            automatic,
        };
        let list = ops::worktree_list(rg, &repo)?;
        let checked_out: Vec<String> = git::parse::parse_worktrees(&list)
            .into_iter()
            .filter_map(|e| e.branch)
            .map(|b| {
                String::from_utf8_lossy(b.strip_prefix(b"refs/heads/").unwrap_or(&b)).into_owned()
            })
            .collect();
        let outcome = if let Err(h) = plan::gate_branch_free(&name, &checked_out) {
            kept(h)
        } else {
            let mut proven: Vec<String> = Vec::new();
            if let Some((_, d)) = &reach.durable {
                proven.push(d.clone());
            }
            if let Some(a) = archive {
                proven.extend(a.refs.values().cloned());
                if let Some(r) = &a.remote {
                    proven.extend(r.refs.values().cloned());
                }
            }
            let unproven = ops::unreached(
                rg,
                &repo,
                std::slice::from_ref(&tip),
                &proven,
                ops::Shared::None,
            )?;
            if let Err(h) = plan::gate_branch_proven(&name, &tip, &unproven) {
                kept(h)
            } else {
                let del = ops::delete_ref(rg, &repo, &full, &tip)?;
                if del.ok {
                    BranchCleanup {
                        name: name.clone(),
                        old_tip: Some(tip.clone()),
                        deleted: true,
                        reason: None,
                        detail: format!("deleted `{full}` (was {tip})"),
                        automatic,
                    }
                } else {
                    kept(Hold::new(
                        HoldReason::GitFailed,
                        format!("git update-ref -d: {}", del.error()),
                    ))
                }
            }
        };
        let event = if outcome.deleted {
            "branch-deleted"
        } else {
            "branch-kept"
        };
        let reasons: Vec<HoldReason> = outcome.reason.into_iter().collect();
        let detail = vec![full, tip, outcome.detail.clone()];
        self.reg.update(&locked.rec.id, |r| {
            r.audit(event, reasons, detail);
            Ok(())
        })?;
        Ok(Some(outcome))
    }
}
