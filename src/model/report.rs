//! What commands return for the CLI to render: plain, serializable data.

use serde::Serialize;

use crate::model::reason::{Disposition, Hold, HoldReason};
use crate::model::record::{Archive, BranchCleanup, Tombstone};

/// The outcome of retiring one target.
#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    /// The record id, if the target is recorded.
    pub id: Option<String>,
    /// The worktree's path.
    pub worktree: Option<String>,
    /// What happened.
    pub disposition: Disposition,
    /// Reason codes (empty unless held or retained).
    pub reasons: Vec<HoldReason>,
    /// What was found, one line per reason.
    pub detail: Vec<String>,
    /// What to do next.
    pub next: Option<String>,
    /// Commits that exist only in the worktree and were (or would be) archived.
    pub unique_commits: u64,
    /// The verified archive, if one was made.
    pub archive: Option<Archive>,
    /// What proved commits durable in gate 6: `remote` (the trusted
    /// remote's default-branch tracking ref), `local` (no trusted remote:
    /// the repository's own default branch, SPEC "Words: durable"), or
    /// absent when nothing is durable (everything unique was archived).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub durable: Option<String>,
    /// The tombstone, if removed.
    pub tombstone: Option<Tombstone>,
    /// `--delete-branch`: what happened to the task branch (a kept branch
    /// carries its reason code; the exit status is then 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<BranchCleanup>,
    /// Filter drivers of config `trusted_filters` that the status probe
    /// ran, as the user's git config defines them (SPEC "Truthful content
    /// probes").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<crate::model::evidence::TrustedFilter>,
    /// An error lease hit while deciding (the target then counts as failed, exit 3).
    pub error: Option<String>,
    /// What the walk measured, by class, when gate 5 ran (or, for `lease
    /// du`, whenever the tree was walked). Not part of the retire report's
    /// JSON: `lease du` prints it.
    #[serde(skip)]
    pub usage: Option<crate::model::disk::DiskUsage>,
}

impl TargetReport {
    /// A report for `id`/`worktree` with the given disposition and nothing else.
    pub fn new(id: Option<String>, worktree: Option<String>, disposition: Disposition) -> Self {
        TargetReport {
            id,
            worktree,
            disposition,
            reasons: Vec::new(),
            detail: Vec::new(),
            next: None,
            unique_commits: 0,
            archive: None,
            durable: None,
            tombstone: None,
            branch: None,
            filters: Vec::new(),
            error: None,
            usage: None,
        }
    }

    /// Marks it held with `holds`.
    pub fn held(mut self, holds: &[Hold]) -> Self {
        self.disposition = Disposition::Held;
        self.reasons = holds.iter().map(|h| h.reason).collect();
        self.detail = holds.iter().map(|h| h.detail.clone()).collect();
        self.next = holds.first().map(|h| h.reason.next_action().to_string());
        self
    }
}

/// The outcome of `lease retire`.
#[derive(Debug, Clone, Serialize)]
pub struct RetireReport {
    /// True for `--dry-run`: nothing was changed.
    pub dry_run: bool,
    /// The git binary used.
    pub git: GitInfo,
    /// One entry per target.
    pub targets: Vec<TargetReport>,
}

/// The git binary a report's probes used (SPEC "Sanitized git").
#[derive(Debug, Clone, Serialize)]
pub struct GitInfo {
    /// Its absolute path.
    pub path: String,
    /// What `git --version` printed.
    pub version: String,
}
