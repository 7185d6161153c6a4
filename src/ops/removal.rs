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
//! that still promises one. Last, the removed record is shelved: moved to
//! `records/removed/` ([`Registry::shelve`]), out of the directory that
//! every command reading live records scans.

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
    if wrote {
        // Out of the live directory (best effort too: a removed record
        // left live is read as before, and `lease reap --apply` moves it).
        let _ = reg.shelve(id);
    }
    Ok(wrote)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::store::root::StateRoot;

    /// A real state root with one `planned` record and its lease file,
    /// the file held open as a caller's lock would be.
    fn one_record() -> (
        tempfile::TempDir,
        Registry,
        String,
        std::path::PathBuf,
        fs::File,
    ) {
        let t = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(t.path()).unwrap().join("state");
        let root = StateRoot::at(base, &std::sync::Arc::new(crate::policy::defaults()));
        for d in [
            root.path().to_path_buf(),
            root.records(),
            root.leases(),
            root.locks(),
        ] {
            crate::os::atomic::make_private_dir(&d).unwrap();
        }
        let reg = Registry::new(root);
        let mut rec = crate::model::record::sample_record();
        let path = reg.root().leases().join(format!("{}.lease", rec.id));
        let (f, lease) = crate::os::lease::create(&path).unwrap();
        rec.lease = Some(lease);
        reg.create(&mut rec).unwrap();
        (t, reg, rec.id, path, f)
    }

    fn tomb(id: &str) -> Tombstone {
        Tombstone {
            path: String::new(),
            id: id.into(),
            removed_at: crate::model::fmt::now(),
            bytes_reclaimed: 0,
            free_before: 0,
            free_after: 0,
            evidence: serde_json::json!({}),
            branch: None,
        }
    }

    #[test]
    fn a_refused_check_writes_nothing_and_keeps_the_lease_file_even_with_the_lock() {
        let (_t, reg, id, path, f) = one_record();
        let wrote = remove_record(&reg, &id, tomb(&id), LeaseProof::Exclusive(&f), |_| {
            Ok(false)
        })
        .unwrap();
        assert!(!wrote);
        assert_eq!(reg.get(&id).unwrap().state, State::Planned);
        assert!(reg.get(&id).unwrap().tombstone.is_none());
        assert!(path.exists(), "a record that stays keeps its lease file");
    }

    #[test]
    fn a_removal_unlinks_the_lease_file_only_with_a_proof() {
        let (_t, reg, id, path, _f) = one_record();
        assert!(remove_record(&reg, &id, tomb(&id), LeaseProof::Unproven, |_| Ok(true)).unwrap());
        let rec = reg.get(&id).unwrap();
        assert_eq!(rec.state, State::Removed);
        assert_eq!(rec.tombstone.unwrap().id, id);
        assert!(path.exists(), "unproven: the leftovers reaper decides");

        let (_t, reg, id, path, f) = one_record();
        assert!(
            remove_record(&reg, &id, tomb(&id), LeaseProof::Exclusive(&f), |_| Ok(
                true
            ))
            .unwrap()
        );
        assert_eq!(reg.get(&id).unwrap().state, State::Removed);
        assert!(
            !path.exists(),
            "removed under the exclusive lock: the file goes"
        );

        // A record that is removed already cannot be removed again.
        assert!(remove_record(&reg, &id, tomb(&id), LeaseProof::NeverUsed, |_| Ok(true)).is_err());
    }

    #[test]
    fn a_removal_shelves_the_record_and_every_reader_still_finds_it() {
        let (_t, reg, id, _path, f) = one_record();
        let live = reg.root().records().join(format!("{id}.json"));
        let shelved = reg.root().removed_records().join(format!("{id}.json"));
        assert!(live.exists() && !shelved.exists());
        assert!(
            remove_record(&reg, &id, tomb(&id), LeaseProof::Exclusive(&f), |_| Ok(
                true
            ))
            .unwrap()
        );
        assert!(!live.exists(), "out of the live directory");
        assert!(shelved.exists(), "in records/removed/");
        assert_eq!(reg.get(&id).unwrap().state, State::Removed);
        assert!(reg.exists(&id));
        assert_eq!(reg.ids().unwrap(), vec![id.clone()]);
        assert!(reg.live_ids().unwrap().is_empty());
        assert!(reg.scan_live().unwrap().is_empty());
        assert_eq!(reg.scan().unwrap().len(), 1);
        assert_eq!(reg.resolve(&id).unwrap(), id);
        assert_eq!(reg.resolve(&id[..8]).unwrap(), id);
        // An update of the removed record is written where it is.
        reg.update(&id, |r| {
            r.restored_from = Some("elsewhere".into());
            Ok(())
        })
        .unwrap();
        assert!(!live.exists(), "an update does not bring it back");
        assert_eq!(
            reg.get(&id).unwrap().restored_from.as_deref(),
            Some("elsewhere")
        );
        // Its id cannot be created again, shelved or not.
        let mut again = crate::model::record::sample_record();
        again.id = id.clone();
        let e = reg.create(&mut again).unwrap_err();
        assert!(e.to_string().contains("already exists"), "{e}");
        assert!(!live.exists());
        assert!(!reg.shelve(&id).unwrap(), "already shelved");
    }

    #[test]
    fn only_a_removed_record_is_shelved() {
        let (_t, reg, id, _path, _f) = one_record();
        let live = reg.root().records().join(format!("{id}.json"));
        let before = fs::read(&live).unwrap();
        assert!(!reg.shelve(&id).unwrap(), "a planned record stays live");
        assert_eq!(fs::read(&live).unwrap(), before, "unchanged");
        assert!(!reg.root().removed_records().exists(), "nothing made");
        assert_eq!(reg.live_ids().unwrap(), vec![id.clone()]);
        // A corrupt file where a record belongs is left where it is.
        fs::write(&live, b"{corrupt").unwrap();
        assert!(!reg.shelve(&id).unwrap());
        assert_eq!(fs::read(&live).unwrap(), b"{corrupt");
    }
}
