//! One typed function per git subcommand lease runs, built on the
//! sanitized builder of [`crate::git`] (ARCHITECTURE.md "git/ops.rs").
//!
//! First residents: `git worktree add --lock`, `lock` and `unlock`, for
//! git's own worktree lock that lease keeps on every worktree whose record
//! is not `removed` (SPEC "A lease every tool can see"; the reason it
//! writes: [`crate::git::admin::lock_reason`]).

use std::path::Path;

use crate::error::Result;
use crate::git::{Cmd, Output, RepoGit};

/// What `git worktree add` checks out.
#[derive(Debug, Clone, Copy)]
pub enum Checkout<'a> {
    /// An existing branch (short name).
    Branch(&'a str),
    /// A new branch at `base`, made with `--no-track` so the shared config
    /// is not written (SPEC "Commands").
    NewBranch {
        /// The short branch name.
        branch: &'a str,
        /// The commit it starts at.
        base: &'a str,
    },
}

/// Runs `git worktree add -q --lock --reason REASON` of `checkout` into
/// `wt`, with `c` the git to run it (the user's own, for exec, or a
/// sanitized one). Returns the output whatever the exit status: a non-zero
/// exit may still have left a registered (and locked) worktree, when a
/// `post-checkout` hook failed (git 2.47 runs the hook after the worktree
/// is complete and keeps it).
pub fn worktree_add(mut c: Cmd, wt: &Path, checkout: Checkout, reason: &str) -> Result<Output> {
    c.args(["worktree", "add", "-q", "--lock", "--reason", reason]);
    match checkout {
        Checkout::Branch(b) => c.arg("--").arg(wt).arg(b),
        Checkout::NewBranch { branch, base } => {
            c.args(["--no-track", "-b", branch, "--"]).arg(wt).arg(base)
        }
    };
    c.output()
}

/// Runs `git worktree lock --reason REASON -- WT` in `common`. Fails if the
/// worktree is already locked (git keeps the first reason).
pub fn worktree_lock(rg: &RepoGit, common: &Path, wt: &Path, reason: &str) -> Result<()> {
    rg.cmd(common)
        .args(["worktree", "lock", "--reason", reason, "--"])
        .arg(wt)
        .run()
        .map(drop)
}

/// Runs `git worktree unlock -- WT` in `common`. Fails if it is not locked.
pub fn worktree_unlock(rg: &RepoGit, common: &Path, wt: &Path) -> Result<()> {
    rg.cmd(common)
        .args(["worktree", "unlock", "--"])
        .arg(wt)
        .run()
        .map(drop)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::git::admin::lock_reason;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn lock_and_unlock_write_and_remove_git_s_locked_file() {
        let git = crate::git::Git::resolve().unwrap();
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("r");
        std::fs::create_dir(&repo).unwrap();
        git.plain(&repo).args(["init", "-q"]).run().unwrap();
        git.plain(&repo)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["commit", "-q", "--allow-empty", "-m", "i"])
            .run()
            .unwrap();
        let common = repo.join(".git");
        let rg = git.repo(&common).unwrap();
        let wt = t.path().join("w");
        let reason = lock_reason(ID, Path::new("/s/root"));
        let out = worktree_add(
            rg.cmd(&common),
            &wt,
            Checkout::NewBranch {
                branch: "w",
                base: "HEAD",
            },
            &reason,
        )
        .unwrap();
        assert!(out.ok, "{out:?}");
        let locked = common.join("worktrees/w/locked");
        assert_eq!(
            std::fs::read_to_string(&locked).unwrap(),
            format!("{reason}\n")
        );
        worktree_unlock(&rg, &common, &wt).unwrap();
        assert!(!locked.exists());
        assert!(worktree_unlock(&rg, &common, &wt).is_err(), "not locked");
        worktree_lock(&rg, &common, &wt, &reason).unwrap();
        assert_eq!(
            std::fs::read_to_string(&locked).unwrap(),
            format!("{reason}\n")
        );
        assert!(
            worktree_lock(&rg, &common, &wt, "another").is_err(),
            "git keeps the first lock"
        );
    }
}
