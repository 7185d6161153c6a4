//! What commands return for the CLI to render: plain, serializable data.

use serde::Serialize;

use crate::plan::{Disposition, Hold, HoldReason};
use crate::registry::{Archive, BranchCleanup, Tombstone};

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
    pub filters: Vec<crate::git::TrustedFilter>,
    /// An error lease hit while deciding (the target then counts as failed, exit 3).
    pub error: Option<String>,
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

/// Formats path bytes losslessly: UTF-8 as is; otherwise an escaped form
/// followed by the raw bytes in base64 (SPEC/Record).
pub fn lossless(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let escaped: String = bytes.escape_ascii().to_string();
            format!("{escaped} (base64:{})", base64(bytes))
        }
    }
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lossless_paths() {
        assert_eq!(lossless(b"a b"), "a b");
        assert_eq!(lossless(b"\xffx"), "\\xffx (base64:/3g=)");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"fo"), "Zm8=");
    }
}
