//! The one way a record becomes `removed` (SPEC invariant 6: a `removed`
//! record carries the tombstone of what was removed and why).
//!
//! Five operations end a record: a retire that removed its worktree, a
//! launcher whose creation made nothing, the reaper finishing a creation or
//! a removal that a crash cut short, and `lease repair` of a worktree whose
//! directory was deleted by hand. Each writes its own tombstone (its
//! evidence differs); this module is the only code that writes it into the
//! record, moves the record to `removed`, and unlinks the lease file
//! afterwards, in that order: a crash between the two leaves a `removed`
//! record beside its lease file, which the leftovers reaper deletes
//! (`ops/reap/leftovers.rs`), never a lease file missing under a record
//! that still promises one.

use std::fs;

use crate::error::Result;
use crate::model::record::{Record, State, Tombstone};
use crate::store::registry::Registry;

/// Why the caller may unlink the lease file once the record is `removed`.
#[derive(Debug, Clone, Copy)]
pub enum LeaseProof<'a> {
    /// The caller holds the lease exclusively (a retire's gate 3, the
    /// reaper's lock): no consumer holds it, and none can take it before
    /// the file is gone. The descriptor is the proof; it is not used.
    Exclusive(&'a fs::File),
    /// This process created the lease file for a worktree that was never
    /// made: no command ran under it.
    NeverUsed,
    /// Nothing proves the lease free (the caller could not take it): the
    /// file stays, and the leftovers reaper decides later.
    Unproven,
}

/// Moves record `id` of `reg` to `removed` with `tombstone`, under the
/// record's lock, and then unlinks its lease file when `lease` allows.
///
/// `check` sees the record as it is under the lock. It returns `Ok(false)`
/// when the record is no longer what the caller judged (nothing is written
/// and the lease file stays), or takes the legal states before `removed`
/// itself (`lease repair` of an `active` record) and returns `Ok(true)`.
/// The move to `removed` is [`Record::set_state`]'s, so an illegal one (a
/// record that is `removed` already) is an error and nothing is written;
/// each transition is audited by the registry.
///
/// Returns whether the record was written.
///
/// # Errors
/// `check`'s error, an illegal transition, or the registry's write error;
/// in each case the record and the lease file are unchanged.
pub fn remove_record(
    reg: &Registry,
    id: &str,
    tombstone: Tombstone,
    lease: LeaseProof<'_>,
    check: impl FnOnce(&mut Record) -> Result<bool>,
) -> Result<bool> {
    let mut lease_file = None;
    let wrote = reg.update(id, |r| {
        if !check(r)? {
            return Ok(false);
        }
        lease_file = r.lease.as_ref().map(|l| l.path());
        r.tombstone = Some(tombstone);
        r.set_state(State::Removed)?;
        Ok(true)
    })?;
    if let Some(path) = lease_file.filter(|_| wrote && !matches!(lease, LeaseProof::Unproven)) {
        // Best effort: a file that stays is a leftover the reaper deletes
        // once it proves nobody holds it.
        let _ = fs::remove_file(path);
    }
    Ok(wrote)
}
