//! Reason codes and dispositions: what a refusal or a retire says, in the
//! words of SPEC "Reason codes" and docs/reason-codes.md.

use serde::{Deserialize, Serialize};

/// A stable, kebab-case reason code (SPEC "Reason codes"; docs/reason-codes.md).
///
/// A code never carries data: the pid, path or git message goes in a `detail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
#[allow(missing_docs)]
pub enum HoldReason {
    NotTerminal,
    LauncherAlive,
    Retained,
    RetireInProgress,
    ConsumerAlive,
    InUse,
    NotRecorded,
    NotRegistered,
    GitLocked,
    LeasedElsewhere,
    CwdInsideTarget,
    PathIdentity,
    RootIdentity,
    PathEscape,
    ProtectedPath,
    MountInside,
    SpecialFile,
    Uninventoriable,
    NestedRepo,
    Dirty,
    Untracked,
    Ignored,
    HiddenIndex,
    OpInProgress,
    Submodule,
    UniqueCommitsUnarchived,
    ArchiveUnverified,
    ArchiveInsideTree,
    LeaseIdentity,
    LeaseMissing,
    LeaseInsecure,
    LeaseDirUnsafe,
    LockUnsupported,
    RepoConfigExecutes,
    UnsafeRepo,
    RepoMissing,
    GitFailed,
    Unprovable,
    NotWritable,
    RootInsideWorktree,
    PathOccupied,
    BranchMoved,
    AlreadyRestored,
    ArchiveUnreachable,
    ArchivePushFailed,
    BranchUnproven,
    BranchCheckedOut,
    TempWorktreeRoot,
    FilterUnverifiable,
    TeardownFailed,
}

impl HoldReason {
    /// Returns the kebab-case code, as in JSON and docs.
    pub fn code(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .expect("a unit variant serializes as a string")
    }

    /// True for the holds that only say the lease is in use now
    /// (`consumer-alive`, `launcher-alive`, `retire-in-progress`): the
    /// consumers a `retire --when-free` intent waits for. Every other
    /// reason is about the tree or the evidence, and an intent never
    /// overrides it.
    pub fn is_busy(self) -> bool {
        matches!(
            self,
            HoldReason::ConsumerAlive | HoldReason::LauncherAlive | HoldReason::RetireInProgress
        )
    }

    /// Returns what the user should do next, in one line.
    pub fn next_action(self) -> &'static str {
        use HoldReason::*;
        match self {
            NotTerminal => "wait for the command to exit, or `lease show ID`",
            LauncherAlive => "the launcher still runs; wait for it or signal its pid",
            Retained => "`lease release ID` first",
            RetireInProgress => "another retire runs; retry when it ends",
            ConsumerAlive | InUse => {
                "a process still uses the worktree; see `lease show ID` for holders and retry when they exit"
            }
            NotRecorded => "`lease adopt PATH` records it; then retire it again",
            NotRegistered => {
                "the path is not a registered git worktree; `lease repair PATH` if it was"
            }
            GitLocked => "`git worktree unlock PATH` if the lock is stale",
            LeasedElsewhere => {
                "another lease record holds git's lock on it: run the command in the detail (in that state root)"
            }
            CwdInsideTarget => "run lease from outside the worktree",
            Dirty => "commit or stash the changes in the worktree, then retry",
            Untracked | Ignored => "commit, move or delete the listed files, then retry",
            HiddenIndex => {
                "clear skip-worktree/assume-unchanged (`git update-index --no-skip-worktree`) and commit the edits"
            }
            OpInProgress => "finish or abort the rebase/merge/cherry-pick/bisect in the worktree",
            Submodule => "deinit the submodule (`git submodule deinit`) after pushing its commits",
            UniqueCommitsUnarchived | ArchiveUnverified | ArchiveInsideTree => {
                "check space and permissions under the state root, then retry"
            }
            LeaseIdentity | LeaseMissing | LeaseInsecure => {
                "the lease file was changed; inspect it and the record with `lease show ID`"
            }
            LeaseDirUnsafe => "make the state root a 0700 directory owned by you, not a symlink",
            LockUnsupported => "put the state root on a local filesystem that supports flock",
            GitFailed => "run the git command in the detail by hand to see why it failed",
            RepoMissing => "the repository is gone or moved; nothing can be proven",
            RootInsideWorktree => "set LEASE_HOME outside every checkout of the repository",
            TempWorktreeRoot => {
                "set `worktree_root` (or LEASE_HOME) outside /tmp, /var/tmp and $TMPDIR, or allow it with --allow-temp-root"
            }
            PathOccupied => "choose a path that does not exist",
            BranchMoved => {
                "let restore pick `<branch>-restored-<id prefix>`, or name a new --branch"
            }
            AlreadyRestored => {
                "the archive was restored before (see its receipts); pass --again for another copy"
            }
            ArchiveUnreachable => {
                "push the commits to the trusted remote's default branch, or pass --unreachable-ok to drop them for good"
            }
            ArchivePushFailed => {
                "check the trusted remote accepts pushes to refs/lease/archive/*, or retire with --archive bundle"
            }
            BranchUnproven => {
                "push the branch (or merge it) first; `git branch -D` it yourself if it is truly unwanted"
            }
            BranchCheckedOut => "the branch is checked out in another worktree; it was kept",
            RepoConfigExecutes => {
                "remove the repository config key named in the detail, or do that step by hand"
            }
            FilterUnverifiable => {
                "add the config line in the detail to your lease config to let lease run that filter as your git config defines it, or commit the change"
            }
            TeardownFailed => {
                "fix the teardown command (config `teardown`, its output is in the detail), then retire again: it runs again until it succeeds"
            }
            NotWritable => {
                "make the listed directories writable (`chmod u+w`), or, as root, clear the listed attributes (`chattr -i -a PATH`), then retry"
            }
            _ => "inspect the worktree; see docs/reason-codes.md",
        }
    }
}

/// One refusal: a reason code plus what was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hold {
    /// The reason code.
    pub reason: HoldReason,
    /// What was found (paths, pids, git output), for people.
    pub detail: String,
}

impl Hold {
    /// Builds a hold.
    pub fn new(reason: HoldReason, detail: impl Into<String>) -> Self {
        Hold {
            reason,
            detail: detail.into(),
        }
    }
}

/// How one retire ended (SPEC invariant 6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Disposition {
    /// The worktree is gone; a tombstone records it.
    Removed,
    /// A dry run found every gate open.
    WouldRemove,
    /// A named owner keeps it.
    Retained,
    /// A gate refused now.
    Held,
    /// `retire --when-free` with the lease held: the content gates pass
    /// now and the intent is recorded; the last consumer to leave, or the
    /// next reap, retires the worktree (or holds it, with reasons).
    Pending,
}
