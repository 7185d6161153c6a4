//! The lease file and its flock.
//!
//! # Invariants
//! - A lease file is created in place with `O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`,
//!   mode 0600 whatever the umask (`fchmod`), never truncated, never followed.
//! - Consumers hold it `LOCK_SH`; the retirer tries `LOCK_EX|LOCK_NB` on a fresh
//!   open, never upgrading a shared lock in place (a failed upgrade drops the
//!   shared lock: flock(2) says a conversion first removes the existing
//!   lock).
//! - Nothing here ever calls `LOCK_UN`: a lock ends when its descriptor closes.
//!   `LOCK_UN` on an inherited open file description would free every copy.
//! - The file is identified by (device, inode) and must have one link; it is
//!   unlinked only at the end of retire, under the exclusive lock.

use std::fs::{self, File, TryLockError};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::{IoResultExt, Result};
use crate::model::evidence::LockOutcome;
use crate::model::reason::{self, Hold};
use crate::model::record::FileId;
use crate::plan;

/// Creates a new lease file at `path` (which must not exist): 0600, regular,
/// one link. Returns the open file (read-write, close-on-exec) and its identity.
pub fn create(path: &Path) -> Result<(File, FileId)> {
    let f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .at_do("cannot create lease file", path)?;
    // The umask may have removed bits, never added them; fchmod makes it exact.
    rustix::fs::fchmod(&f, rustix::fs::Mode::from_raw_mode(0o600)).at_do("cannot chmod", path)?;
    let seen = crate::os::fs::fstat(&f).ok_or_else(|| crate::error::Error::Io {
        action: "cannot fstat",
        path: path.to_path_buf(),
        source: std::io::Error::last_os_error(),
    })?;
    let id = FileId {
        path: crate::model::record::utf8_path(path)?,
        dev: seen.dev,
        ino: seen.ino,
        btime: crate::os::fs::birth(&f.metadata().ok()),
    };
    Ok((f, id))
}

/// Opens the recorded lease file afresh after checking it by name, without
/// following symlinks and without blocking on a FIFO, then checks it again
/// through the descriptor. Returns a new open file description.
pub fn open_checked(lease: &FileId, uid: u32) -> Result<File, Hold> {
    let path = lease.path();
    plan::check_lease_seen(lease.id(), uid, crate::os::fs::lstat(&path))?;
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(open_existing_flags())
        .open(&path)
        .map_err(|e| {
            Hold::new(
                reason::HoldReason::LeaseIdentity,
                format!("cannot open lease file `{}`: {e}", path.display()),
            )
        })?;
    plan::check_lease_seen(lease.id(), uid, crate::os::fs::fstat(&f))?;
    if !lease.same_birth(crate::os::fs::birth(&f.metadata().ok())) {
        return Err(Hold::new(
            reason::HoldReason::LeaseIdentity,
            format!(
                "lease file `{}` was recreated: same inode number, another birth time",
                path.display()
            ),
        ));
    }
    Ok(f)
}

/// The `open(2)` flags of every open of an existing lease file: never follow
/// a symlink in its last component (`O_NOFOLLOW`: `ELOOP`), never wait for a
/// writer if it has become a FIFO (`O_NONBLOCK`), never make a terminal the
/// controlling one (`O_NOCTTY`). `open_checked` also refuses a symlink or a
/// FIFO by `lstat` before it opens, so these flags only matter if the name is
/// swapped between that check and the open; a unit test judges them alone.
fn open_existing_flags() -> i32 {
    libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY
}

/// Takes a shared lock without blocking. `Ok(false)` means a retire holds it
/// exclusively right now.
///
/// A busy lock is tried once more after [`PROBE_GRACE`]: the end of a
/// session probes the lease with `LOCK_EX|LOCK_NB` for the microseconds
/// between a flock(2) and a close(2) ([`held_by_another`]), and a join or
/// launch that lands in them must not be refused as if a retire held it. A
/// retire holds the lock through its gates, far longer.
pub fn try_shared(f: &File) -> std::io::Result<bool> {
    match f.try_lock_shared() {
        Ok(()) => return Ok(true),
        Err(TryLockError::WouldBlock) => {}
        Err(TryLockError::Error(e)) => return Err(e),
    }
    std::thread::sleep(PROBE_GRACE);
    match f.try_lock_shared() {
        Ok(()) => Ok(true),
        Err(TryLockError::WouldBlock) => Ok(false),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

/// How long [`try_shared`] waits before its second try: many times the
/// few microseconds [`held_by_another`] holds its probe, even on a loaded
/// machine.
pub const PROBE_GRACE: std::time::Duration = std::time::Duration::from_millis(5);

/// Returns true if some other open file description may hold a flock on
/// `lease` right now, false only if none does: a fresh open (with the
/// checks of [`open_checked`], as `uid`) is granted `LOCK_EX|LOCK_NB` and
/// closed at once. A busy lock, a lock error or a lease file that fails
/// its checks all give true (the caller then looks closer). Never blocks;
/// holds the exclusive lock only between one flock(2) and one close(2).
///
/// What the end of a `lease exec` session asks once its own descriptors
/// are closed, instead of reading `/proc/locks`: a read of that file takes
/// the kernel's flock table lock for writing (`percpu_down_write` in
/// fs/locks.c), which waits for an RCU grace period unless another writer
/// passed moments before: 6 to 20 ms measured on Linux 6.18 for a read
/// that no other preceded (a launch), 0.01 ms for one right after another
/// (back-to-back benchmarks), and other flock(2) calls wait while it
/// lists the table. flock(2) answers the same question for this one file: its
/// exclusive lock is granted only when no other open file description
/// holds one. [`try_shared`] tries again after [`PROBE_GRACE`], so a join
/// that meets the probe is not refused.
pub fn held_by_another(lease: &FileId, uid: u32) -> bool {
    let Ok(f) = open_checked(lease, uid) else {
        return true;
    };
    !matches!(try_exclusive(&f), LockOutcome::Acquired)
}

/// Takes a shared lock, waiting for a running retire to finish deciding.
pub fn shared(f: &File) -> std::io::Result<()> {
    f.lock_shared()
}

/// Tries `LOCK_EX|LOCK_NB` on `f`, which must be a fresh open (never one that
/// holds a shared lock). A lock error is reported as such, never as "free".
pub fn try_exclusive(f: &File) -> LockOutcome {
    // Test knob: a filesystem whose flock fails (NFS, ENOLCK, EOPNOTSUPP).
    #[cfg(feature = "fault-injection")]
    if std::env::var_os("LEASE_FI_LOCK_ERROR").is_some() {
        return LockOutcome::Error("injected: No locks available (ENOLCK)".into());
    }
    match f.try_lock() {
        Ok(()) => LockOutcome::Acquired,
        Err(TryLockError::WouldBlock) => LockOutcome::Busy,
        Err(TryLockError::Error(e)) => LockOutcome::Error(e.to_string()),
    }
}

/// Gate 3 on a fresh open: identity by name, `LOCK_EX|LOCK_NB`, then
/// identity again through the locked descriptor and by name (a deleted and
/// recreated lease file is a new inode that anyone can lock). Returns the
/// open file holding the exclusive lock; closing it releases the lock.
pub fn try_exclusive_checked(lease: &FileId, uid: u32) -> Result<File, Hold> {
    let path = lease.path();
    let before = crate::os::fs::lstat(&path);
    let f = open_checked(lease, uid)?;
    let outcome = try_exclusive(&f);
    let fd_after = crate::os::fs::fstat(&f);
    let name_after = crate::os::fs::lstat(&path);
    plan::gate_lease(lease.id(), uid, before, &outcome, fd_after, name_after)?;
    Ok(f)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::reason::HoldReason;

    #[test]
    fn create_is_private_and_exclusive() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.lease");
        let (f, id) = create(&p).unwrap();
        assert!(create(&p).is_err(), "O_EXCL refuses an existing file");
        let uid = crate::os::process::euid();
        let g = open_checked(&id, uid).unwrap();
        assert!(try_shared(&f).unwrap());
        assert_eq!(
            try_exclusive(&g),
            LockOutcome::Busy,
            "a shared holder blocks the retirer"
        );
        drop(f);
        until_free(|| try_exclusive(&g) == LockOutcome::Acquired);
    }

    /// Retries `acquire` every 5 ms until it returns true, for 10 s at
    /// most: another test's child, forked but not yet exec'd, may still
    /// hold a copy of a descriptor this test dropped for a moment
    /// (close-on-exec closes it only at exec).
    fn until_free(mut acquire: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !acquire() {
            assert!(std::time::Instant::now() < deadline, "never free");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[test]
    fn shared_holds_off_the_retirer_and_exclusive_holds_off_consumers() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.lease");
        let (f, id) = create(&p).unwrap();
        let uid = crate::os::process::euid();
        shared(&f).unwrap();
        assert_eq!(
            try_exclusive_checked(&id, uid).unwrap_err().reason,
            HoldReason::ConsumerAlive
        );
        drop(f);
        let mut x = None;
        until_free(|| {
            x = try_exclusive_checked(&id, uid).ok();
            x.is_some()
        });
        let c = open_checked(&id, uid).unwrap();
        assert!(!try_shared(&c).unwrap(), "the retirer holds it exclusively");
        drop(x);
    }

    #[test]
    fn the_end_probe_sees_any_other_holder_and_a_busy_shared_lock_is_tried_again() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.lease");
        let (f, id) = create(&p).unwrap();
        let uid = crate::os::process::euid();
        assert!(!held_by_another(&id, uid), "nobody holds it");
        // Any other open file description with a lock, shared or not.
        let other = open_checked(&id, uid).unwrap();
        assert!(try_shared(&other).unwrap());
        assert!(held_by_another(&id, uid), "a shared holder");
        drop(other);
        // A lease file that fails its checks counts as held (look closer).
        let moved = FileId {
            ino: id.ino + 1,
            ..id.clone()
        };
        assert!(held_by_another(&moved, uid), "another inode by that name");
        // An exclusive lock held past the grace (a retire's) is refused on
        // the second try too; the probe's own lasts microseconds.
        let x = open_checked(&id, uid).unwrap();
        until_free(|| try_exclusive(&x) == LockOutcome::Acquired);
        let joiner = open_checked(&id, uid).unwrap();
        let asked = std::time::Instant::now();
        assert!(!try_shared(&joiner).unwrap(), "a retire holds it");
        assert!(
            asked.elapsed() >= PROBE_GRACE,
            "tried again after the grace"
        );
        drop(x);
        drop(joiner);
        drop(f);
    }

    #[test]
    fn an_existing_lease_is_opened_without_following_a_symlink_or_blocking() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.lease");
        let (_f, _id) = create(&p).unwrap();
        let link = t.path().join("swapped.lease");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let open = |path: &Path| {
            fs::OpenOptions::new()
                .read(true)
                .custom_flags(open_existing_flags())
                .open(path)
        };
        // A name swapped for a symlink after the lstat check is not followed.
        assert_eq!(open(&link).unwrap_err().raw_os_error(), Some(libc::ELOOP));
        // The descriptor is non-blocking (a FIFO swapped in would not wait
        // for a writer); F_GETFL reports the file status flags open set.
        let f = open(&p).unwrap();
        let fl = rustix::fs::fcntl_getfl(&f).unwrap();
        assert!(fl.contains(rustix::fs::OFlags::NONBLOCK), "{fl:?}");
    }

    #[test]
    fn open_checked_refuses_a_recreated_file() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.lease");
        let (_f, id) = create(&p).unwrap();
        fs::remove_file(&p).unwrap();
        assert_eq!(
            open_checked(&id, crate::os::process::euid())
                .unwrap_err()
                .reason,
            HoldReason::LeaseMissing
        );
        let (_g, _) = create(&p).unwrap();
        assert_eq!(
            open_checked(&id, crate::os::process::euid())
                .unwrap_err()
                .reason,
            HoldReason::LeaseIdentity
        );
    }
}
