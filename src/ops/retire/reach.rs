//! Gate 6's evidence (SPEC "Gates", "Words: durable"): the durable ref,
//! HEAD and the private tips, and the commits reachable from the tips but
//! not from the durable ref.

use crate::error::Result;
use crate::git::ops;
use crate::git::refs::{durable_ref, trusted_remote};
use std::path::{Path, PathBuf};

use super::{Engine, Locked, Reach, configured_remote};

impl Engine {
    /// Gate 6's evidence: the durable ref, HEAD and the private tips, and the
    /// commits reachable from the tips but not from the durable ref.
    pub(super) fn probe_reachability(&self, locked: &Locked) -> Result<Reach> {
        let (rg, wt, rec) = (&locked.rg, locked.wt.as_path(), &locked.rec);
        // Before anything reads the tracking refs: `--fetch` updates them.
        let confirmed = if self.fetch {
            self.confirm_remote(locked)?
        } else {
            Vec::new()
        };
        let reader = crate::git::libgit2::Reader::open(Path::new(&rec.repo));
        let head = self.head(locked)?;
        // The in-process reader answers for `origin` only: when config names
        // another trusted remote, or the reader cannot tell, the CLI does.
        let origin_trusted = self
            .reg
            .root()
            .policy()
            .trusted_remote
            .as_ref()
            .is_none_or(|t| t.value == "origin");
        let fast = reader
            .as_ref()
            .filter(|_| origin_trusted)
            .and_then(crate::git::libgit2::Reader::durable_origin);
        let (remote, durable) = match fast {
            Some(d) => (Some("origin".to_string()), d),
            None => {
                let remote = trusted_remote(
                    rg,
                    Path::new(&rec.repo),
                    configured_remote(self.reg.root().policy()).as_deref(),
                    rec.branch.as_deref(),
                )?;
                let durable = durable_ref(
                    rg,
                    Path::new(&rec.repo),
                    remote.as_deref(),
                    rec.branch.as_deref(),
                )?;
                (remote, durable)
            }
        };
        let mut tips: Vec<(String, String)> = Vec::new();
        if !head.is_empty() {
            tips.push((format!("refs/lease/{}/head", rec.id), head.clone()));
        }
        for (oid, name) in ops::private_refs(rg, wt)? {
            let rest = name.strip_prefix("refs/").unwrap_or(&name);
            tips.push((format!("refs/lease/{}/private/{rest}", rec.id), oid));
        }
        // ORIG_HEAD is per worktree and dies with it (reset, rebase, merge).
        if let Some(orig) = ops::resolve_commit(rg, wt, "ORIG_HEAD")? {
            tips.push((format!("refs/lease/{}/orig-head", rec.id), orig));
        }
        // Every commit a reflog of this worktree mentions, old and new side
        // (`reflog show --format=%H` gives only the new one). Shared branch
        // reflogs come along: archiving a little more is safe and cheap.
        if let Some(reflog) = ops::reflog_commits(rg, wt)? {
            for (n, oid) in reflog.into_iter().enumerate() {
                tips.push((format!("refs/lease/{}/reflog/{n}", rec.id), oid));
            }
        }
        // HEAD must be durable (SPEC gate 6). A private tip (reflogs,
        // refs/worktree|bisect|rewritten, ORIG_HEAD) needs archiving only
        // if nothing that survives the removal reaches it: not the durable
        // ref, and no branch, tag, tracking ref or stash, which are shared.
        let head_tip: Vec<String> = tips
            .first()
            .filter(|_| !head.is_empty())
            .map(|(_, o)| o.clone())
            .into_iter()
            .collect();
        let private: Vec<String> = tips
            .iter()
            .skip(head_tip.len())
            .map(|(_, o)| o.clone())
            .collect();
        let not_durable = |revs: &[String], shared_too: bool| -> Result<Vec<String>> {
            if revs.is_empty() {
                return Ok(Vec::new());
            }
            let hide: Vec<String> = durable
                .iter()
                .map(|(_, d)| d.clone())
                .chain(confirmed.iter().cloned())
                .collect();
            if let Some(v) = reader
                .as_ref()
                .and_then(|r| r.not_reachable(revs, &hide, shared_too))
            {
                return Ok(v);
            }
            let mut seen: Vec<String> = Vec::new();
            for oid in revs {
                if !seen.contains(oid) {
                    seen.push(oid.clone());
                }
            }
            let shared = if shared_too {
                ops::Shared::RefsAndStash
            } else {
                ops::Shared::None
            };
            ops::unreached(rg, wt, &seen, &hide, shared)
        };
        let mut unique = not_durable(&head_tip, false)?;
        for oid in not_durable(&private, true)? {
            if !unique.contains(&oid) {
                unique.push(oid);
            }
        }
        // Keep one ref per non-durable tip commit.
        let mut kept: Vec<(String, String)> = Vec::new();
        for (name, oid) in tips {
            if unique.contains(&oid) && !kept.iter().any(|(_, o)| *o == oid) {
                kept.push((name, oid));
            }
        }
        Ok(Reach {
            head,
            durable,
            remote,
            tips: kept,
            unique,
            confirmed: confirmed.len(),
        })
    }

    /// The worktree's HEAD commit (`rev-parse --verify -q HEAD^{commit}`;
    /// empty if unborn), read in process where [`crate::git::libgit2`] can.
    pub(super) fn head(&self, locked: &Locked) -> Result<String> {
        let common = PathBuf::from(&locked.rec.repo);
        if let Some(h) =
            crate::git::libgit2::Reader::open(&common).and_then(|r| r.head_commit(&locked.admin))
        {
            return Ok(h.unwrap_or_default());
        }
        // Unborn: git prints nothing and the head is empty.
        Ok(ops::resolve_commit(&locked.rg, &locked.wt, "HEAD")?.unwrap_or_default())
    }
}
