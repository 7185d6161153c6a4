//! `lease du`: the disk each worktree holds, by class, and what a retire
//! would reclaim now (SPEC "Provisioned files, disk, and hygiene").
//!
//! One walk per worktree: the retire engine's own, in its read-only
//! assessment mode ([`Engine::assessing`]), which runs every gate that needs
//! no exclusive lease and walks the tree whatever holds it; its status probe
//! classifies the walk's bytes. Nothing in the worktree changes and the
//! lease is never locked; the record keeps the measured size (key `size`).

use crate::error::Result;
use crate::model::disk::{DiskUsage, Size};
use crate::model::reason::{Disposition, HoldReason};
use crate::model::record::State;
use crate::ops::retire::Engine;

/// What `lease du` found for one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    /// The record id.
    pub id: String,
    /// The worktree's path, if the record has one.
    pub worktree: Option<String>,
    /// The record's state.
    pub state: State,
    /// Bytes by class; `None` when the tree could not be walked (a gate
    /// before the walk held: the reasons say which).
    pub usage: Option<DiskUsage>,
    /// When it was measured (RFC 3339 UTC), with `usage`.
    pub at: Option<String>,
    /// What a retire would reclaim now, in bytes: the whole tree and admin
    /// directory when no gate would hold, else 0.
    pub reclaim: u64,
    /// The gates that would hold a retire now (empty when it would remove).
    pub reasons: Vec<HoldReason>,
    /// One line per reason (what the retire's dry run says otherwise).
    pub detail: Vec<String>,
    /// An error that kept lease from assessing it.
    pub error: Option<String>,
}

/// Measures record `id` with `engine` (an [`Engine::assessing`] engine)
/// and keeps the measured size on the record (an ordinary record update
/// under its record lock; no audit line, the worktree and the lease are
/// not touched). A record that is not there any more is an error.
///
/// # Errors
/// The record cannot be read, or its size cannot be written.
pub fn measure(engine: &Engine, id: &str) -> Result<Measured> {
    let rec = engine.registry().get(id)?;
    let report = engine.retire(id);
    let at = report.usage.map(|_| crate::model::fmt::now());
    if let (Some(u), Some(at)) = (&report.usage, &at) {
        let size = Size {
            bytes: u.total(),
            at: at.clone(),
        };
        engine.registry().update(id, |r| {
            r.size = Some(size);
            Ok(())
        })?;
    }
    let removes = report.disposition == Disposition::WouldRemove;
    Ok(Measured {
        id: id.to_string(),
        worktree: rec.worktree.as_ref().map(|w| w.path.clone()),
        state: rec.state,
        usage: report.usage,
        at,
        reclaim: match (&report.usage, removes) {
            (Some(u), true) => u.total(),
            _ => 0,
        },
        reasons: report.reasons,
        detail: if removes { Vec::new() } else { report.detail },
        error: report.error,
    })
}
