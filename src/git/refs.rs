//! Remotes and their tracking refs: which remote lease trusts, and its
//! default-branch tracking ref, the durable ref of gate 6 (SPEC "durable").

use std::path::Path;

use crate::error::{Error, Result};
use crate::git::{RepoGit, ops};
use crate::model::reason::HoldReason;

/// The trusted remote (SPEC/Words): `configured` (config
/// `trusted_remote`) if set, and none if no such remote exists; else
/// `origin` if it exists, else the upstream remote of `branch`, else none.
/// Read in the common git dir (`git remote`, `git for-each-ref`).
pub fn trusted_remote(
    rg: &RepoGit,
    common: &Path,
    configured: Option<&str>,
    branch: Option<&str>,
) -> Result<Option<String>> {
    let remotes = ops::remotes(rg, common)?;
    if let Some(t) = configured {
        // Configured: that remote or none (then nothing is durable).
        return Ok(remotes.iter().any(|r| r == t).then(|| t.to_string()));
    }
    if remotes.iter().any(|r| r == "origin") {
        return Ok(Some("origin".to_string()));
    }
    let Some(b) = branch else {
        return Ok(None);
    };
    let up = ops::upstream_remote(rg, common, b)?;
    Ok(Some(up).filter(|r| !r.is_empty() && remotes.contains(r)))
}

/// The trusted remote's default-branch tracking ref and its commit (SPEC
/// "durable"): `refs/remotes/<r>/HEAD`, else `main`, else `master`. Refs are
/// read in the common git dir: a per-worktree ref is never durable.
///
/// With no trusted remote, the repository's own default branch plays that
/// part (`durable: local`): the branch the main worktree's HEAD names, else
/// `main`, else `master`, never `own_branch` (the retired worktree's
/// branch), as [`crate::plan::local_durable_candidates`] orders them. It is
/// the bundle's prerequisite, so an archive costs what is unique to the
/// worktree, never the repository's history.
pub fn durable_ref(
    rg: &RepoGit,
    common: &Path,
    remote: Option<&str>,
    own_branch: Option<&str>,
) -> Result<Option<(String, String)>> {
    let Some(remote) = remote else {
        let head = ops::main_head_ref(rg, common)?;
        for r in crate::plan::local_durable_candidates(head.as_deref(), own_branch) {
            if let Some(oid) = ops::resolve_commit(rg, common, &r)? {
                return Ok(Some((r, oid)));
            }
        }
        return Ok(None);
    };
    for name in ["HEAD", "main", "master"] {
        let r = format!("refs/remotes/{remote}/{name}");
        // A symbolic tracking ref counts only if it stays among the
        // remote's own tracking refs (not, say, `refs/worktree/wip`).
        if let Some(target) = ops::symbolic_ref(rg, common, &r)?
            && !target.starts_with(&format!("refs/remotes/{remote}/"))
        {
            continue;
        }
        if let Some(oid) = ops::resolve_commit(rg, common, &r)? {
            return Ok(Some((r, oid)));
        }
    }
    Ok(None)
}

/// The fetch URL of remote `name` as git resolves it (`url.*.insteadOf`
/// applied), for fetch, ls-remote and push by URL. Refused
/// (`archive-push-failed`) when the repository configures any
/// `url.*.pushInsteadOf`: a push could then go elsewhere than the
/// readback, and nothing would be proven.
pub fn remote_url(rg: &RepoGit, common: &Path, name: &str) -> Result<String> {
    if ops::has_push_rewrites(rg, common)? {
        return Err(Error::refused(
            HoldReason::ArchivePushFailed,
            "the repository configures url.*.pushInsteadOf; a push could reach another repository than the readback",
        ));
    }
    let url = ops::remote_get_url(rg, common, name)?;
    if url.is_empty() {
        return Err(Error::refused(
            HoldReason::ArchivePushFailed,
            format!("remote `{name}` has no URL"),
        ));
    }
    Ok(url)
}
