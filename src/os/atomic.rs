//! Private directories, atomic durable writes, private lock files and free
//! space: the filesystem calls the state root and the metrics file rely on
//! (ARCHITECTURE.md floor 3).

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use crate::error::{Error, IoResultExt, Result};

/// Creates `path` with mode 0700 if it does not exist (an existing one is
/// checked, not changed).
pub fn make_private_dir(path: &Path) -> Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).at_do("cannot create directory", path),
    }
}

/// Checks that `path` is a directory (not a symlink), owned by us, with no
/// group or other permissions; with `canonical`, also that no ancestor is a
/// symlink (the path equals its canonical form).
pub fn check_private_dir(path: &Path, canonical: bool) -> Result<()> {
    let meta = fs::symlink_metadata(path).at(path)?;
    check_private_meta(path, &meta, canonical)
}

/// [`make_private_dir`] then [`check_private_dir`] in one `lstat` when the
/// directory exists (every call but the first in a state root's life):
/// `mkdir` runs only when the `lstat` finds nothing (one made meanwhile by
/// another process is accepted, as `make_private_dir` accepts it, then
/// checked).
///
/// # Errors
/// [`Error::Io`] if `path` cannot be `lstat`ed or created;
/// [`Error::UnsafeDir`] if it fails a check of [`check_private_dir`].
pub fn ensure_private_dir(path: &Path, canonical: bool) -> Result<()> {
    let meta = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            make_private_dir(path)?;
            fs::symlink_metadata(path).at(path)?
        }
        found => found.at(path)?,
    };
    check_private_meta(path, &meta, canonical)
}

/// [`check_private_dir`] on `meta`, the `lstat` of `path`. The canonical
/// check needs no `realpath(3)` (one `readlink` per component): `path` is
/// canonical exactly when it is spelled plainly ([`is_plain_absolute`]) and
/// neither it (`meta`) nor any ancestor is a symlink, and every ancestor is
/// `lstat`ed anyway for its owner and mode.
fn check_private_meta(path: &Path, meta: &fs::Metadata, canonical: bool) -> Result<()> {
    let unsafe_dir = |problem: String| Error::UnsafeDir {
        path: path.to_path_buf(),
        problem,
    };
    if !meta.file_type().is_dir() {
        return Err(unsafe_dir("not a directory (a symlink or a file)".into()));
    }
    let me = crate::os::process::euid();
    if meta.uid() != me {
        return Err(unsafe_dir(format!("owned by uid {}", meta.uid())));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(unsafe_dir(format!(
            "mode {:o} lets others in; want 0700",
            meta.mode() & 0o7777
        )));
    }
    if !canonical {
        return Ok(());
    }
    let through_symlink =
        || unsafe_dir("reached through a symlink or `..`; use its physical path".into());
    if !is_plain_absolute(path) {
        return Err(through_symlink());
    }
    for a in path.ancestors().skip(1) {
        let m = fs::symlink_metadata(a).at(a)?;
        if !m.file_type().is_dir() {
            return Err(through_symlink());
        }
        if !is_safe_ancestor(m.uid(), m.mode(), me) {
            return Err(unsafe_dir(format!(
                "its ancestor `{}` (uid {}, mode {:o}) lets others rename it away",
                a.display(),
                m.uid(),
                m.mode() & 0o7777
            )));
        }
    }
    Ok(())
}

/// True if `path` is absolute with only plain names after the root, spelled
/// as [`Path::components`] would rebuild it: no `..`, no `.`, no doubled or
/// trailing `/`. `lstat` follows a symlink named with a trailing `/` or
/// `/.` (path_resolution(7)), and `components` drops both, so they must not
/// pass: only symlinks could then make the path differ from its canonical
/// form, and every component is `lstat`ed for that.
fn is_plain_absolute(path: &Path) -> bool {
    use std::path::Component;
    let mut c = path.components();
    c.next() == Some(Component::RootDir)
        && c.all(|c| matches!(c, Component::Normal(_)))
        && path
            .components()
            .collect::<std::path::PathBuf>()
            .as_os_str()
            == path.as_os_str()
}

/// Returns true if an ancestor directory cannot be used by another user to
/// move our directory away: owned by root or us (`me`, the effective uid), and not writable by group
/// or others unless sticky (`/tmp`'s 1777: only owners may rename there).
fn is_safe_ancestor(uid: u32, mode: u32, me: u32) -> bool {
    let owner_ok = uid == 0 || uid == me;
    let writable_by_others = mode & 0o022 != 0;
    let sticky = mode & 0o1000 != 0;
    owner_ok && (!writable_by_others || sticky)
}

/// Opens `path` as a lock file, creating it private (mode 0600) if missing,
/// never through a symlink at its last component (`O_NOFOLLOW`), never
/// waiting on open (`O_NONBLOCK`), and only if it is a regular file; then
/// takes `LOCK_EX` on it, waiting for the holder. The lock lasts while the
/// returned file is open.
///
/// # Errors
/// [`Error::Io`] naming `path` if it cannot be opened, is a symlink, FIFO,
/// device or anything but a regular file ([`crate::os::fs`]), or cannot be
/// locked.
pub fn lock_private(path: &Path) -> Result<fs::File> {
    open_lock_file(path, true, true)?
        .ok_or_else(|| Error::Environment(format!("lock file `{}` is missing", path.display())))
        .and_then(|f| {
            f.lock().at_do("cannot lock", path)?;
            Ok(f)
        })
}

/// Opens the lock file `path` for reading, and for writing with `write`
/// (`create`: making it 0600 if missing; else `Ok(None)` when it is
/// missing), with
/// `O_NOFOLLOW|O_NONBLOCK|O_NOCTTY`, refusing anything but a regular file:
/// an existing name is `lstat`ed first, so a FIFO or device is never
/// opened, and the descriptor is checked again.
pub fn open_lock_file(path: &Path, create: bool, write: bool) -> Result<Option<fs::File>> {
    match fs::symlink_metadata(path) {
        Ok(m) => {
            if let Some(kind) = crate::os::fs::special_kind(m.file_type()) {
                return Err(Error::Io {
                    action: "cannot use",
                    path: path.to_path_buf(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("is {kind}, not a regular file"),
                    ),
                });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !create {
                return Ok(None);
            }
        }
        Err(e) => return Err(e).at_do("cannot open", path),
    }
    let opened = fs::OpenOptions::new()
        .read(true)
        .write(write || create)
        .create(create)
        .truncate(false)
        .mode(0o600)
        .custom_flags(crate::os::fs::UNTRUSTED_OPEN_FLAGS | libc::O_CLOEXEC)
        .open(path);
    let f = match opened {
        Ok(f) => f,
        Err(e) if !create && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(crate::os::fs::symlink_is_invalid(e)).at_do("cannot open", path),
    };
    crate::os::fs::check_regular(&f).at_do("cannot use", path)?;
    Ok(Some(f))
}

/// Writes `bytes` to `path` atomically and durably: a temporary file in the
/// same directory (0600), fsync, rename over `path`, fsync of the directory.
/// After a crash `path` holds the old or the new content, never a mixture.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_mode(path, bytes, 0o600)
}

/// Writes `bytes` to `path` like [`write_atomic`], with file mode `mode`
/// (before the umask): for output other users read, such as the metrics file
/// node_exporter's textfile collector scrapes.
pub fn write_atomic_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    write_atomic_with(path, bytes, mode, true)
}

/// Writes `bytes` to `path` atomically but without an fsync: a temporary
/// file in the same directory (0600), renamed over `path`. After a crash of
/// the process `path` holds the old or the new content, never a mixture;
/// after a power loss it may hold either, or (on a filesystem that does not
/// order a rename after the data it replaces) an empty file, which lease
/// then reports as a corrupt record. For the writes SPEC invariant 7 lets
/// go unsynced: a session's start and end (docs/record.md "Durability").
pub fn write_atomic_unsynced(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, bytes, 0o600, false)
}

fn write_atomic_with(path: &Path, bytes: &[u8], mode: u32, durable: bool) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::Usage(format!("`{}` has no parent", path.display())))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let written = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .at_do("cannot create", &tmp)?;
        crate::os::fault::write().at_do("cannot write", &tmp)?;
        f.write_all(bytes).at_do("cannot write", &tmp)?;
        // A failed fsync ends the attempt: the page may be gone, and retrying
        // can report success for data that never reached the disk
        // (PostgreSQL's "fsyncgate"), so there is no retry.
        if durable {
            let what = format!("the new content of `{}`", path.display());
            fsync(&f, &tmp, &what).at_do("cannot fsync", &tmp)?;
        }
        drop(f);
        fs::rename(&tmp, path).at_do("cannot rename into", path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written?;
    if durable {
        sync_dir(dir, &format!("the rename into `{}`", path.display()))
    } else {
        Ok(())
    }
}

/// Fsyncs `f`, open on `path`, and logs at trace level that `what` (such
/// as "the new content of `<record>`") is durable now: every fsync lease
/// makes goes through here or [`sync_dir`] (docs/record.md "Durability"
/// lists them). The event says `ok = false` when the fsync failed.
///
/// # Errors
/// The error of fsync(2).
pub fn fsync(f: &fs::File, path: &Path, what: &str) -> std::io::Result<()> {
    let r = f.sync_all();
    tracing::trace!(path = %path.display(), durable = what, ok = r.is_ok(), "fsync");
    r
}

/// Fsyncs directory `dir` so `what`, a rename, create or unlink in it, is
/// durable, and logs it at trace level like [`fsync`].
///
/// # Errors
/// `Error::Io` naming `dir` if it cannot be opened or fsynced.
pub fn sync_dir(dir: &Path, what: &str) -> Result<()> {
    fs::File::open(dir)
        .and_then(|d| fsync(&d, dir, what))
        .at_do("cannot fsync directory", dir)
}

/// Free bytes for unprivileged users on the filesystem of `path` (statvfs(3)
/// `f_bavail * f_frsize`), 0 if unknown.
pub fn free_bytes(path: &Path) -> u64 {
    if crate::os::fault::disk_full() {
        return 0;
    }
    if let Some(free) = crate::os::fault::fake_free() {
        return free;
    }
    rustix::fs::statvfs(path).map_or(0, |s| s.f_bavail.saturating_mul(s.f_frsize))
}

/// Total bytes of the filesystem of `path` (statvfs(3) `f_blocks *
/// f_frsize`, saturating), or `None` if it cannot be read.
pub fn total_bytes(path: &Path) -> Option<u64> {
    rustix::fs::statvfs(path)
        .ok()
        .map(|s| s.f_blocks.saturating_mul(s.f_frsize))
}

/// The filesystem type of the directory `path` (statfs(2) `f_type`, the
/// magic numbers of linux/magic.h).
///
/// # Errors
/// [`Error::Io`] naming `path` if it cannot be opened or statfs fails.
pub fn fs_magic(path: &Path) -> Result<u64> {
    let dir = fs::File::open(path).at_do("cannot open", path)?;
    let st = rustix::fs::fstatfs(&dir).at(path)?;
    #[allow(clippy::unnecessary_cast)]
    Ok(st.f_type as u64)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_private_dir_is_canonical_only_without_symlinks_or_dots_on_its_way() {
        let t = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(t.path()).unwrap();
        if !is_safe_ancestor_path(&base) {
            crate::testing::skip("the temporary directory's ancestors are not safe ones here");
            return;
        }
        let real = base.join("real");
        ensure_private_dir(&real, true).unwrap();
        assert!(real.is_dir(), "created");
        ensure_private_dir(&real, true).unwrap();
        check_private_dir(&real, true).unwrap();
        let inner = real.join("inner");
        make_private_dir(&inner).unwrap();
        check_private_dir(&inner, true).unwrap();
        std::os::unix::fs::symlink(&real, base.join("link")).unwrap();
        let unsafe_ = |p: &Path| {
            matches!(
                check_private_dir(p, true),
                Err(Error::UnsafeDir { ref problem, .. }) if problem.contains("physical path")
            )
        };
        // An ancestor that is a symlink, and a `..` component.
        assert!(unsafe_(&base.join("link/inner")), "symlinked ancestor");
        assert!(unsafe_(&inner.join("../inner")), "a `..` component");
        // Not canonical-checked: the same directory passes by its own lstat.
        check_private_dir(&base.join("link/inner"), false).unwrap();
        // The last component a symlink is not a directory at all.
        assert!(matches!(
            check_private_dir(&base.join("link"), false),
            Err(Error::UnsafeDir { ref problem, .. }) if problem.contains("not a directory")
        ));
        // A trailing `/` or `/.` makes lstat follow the last symlink.
        assert!(unsafe_(&base.join("link/")), "a trailing slash");
        assert!(unsafe_(&base.join("link/.")), "a trailing `/.`");
        assert!(!is_plain_absolute(Path::new("relative/dir")));
        assert!(!is_plain_absolute(Path::new("/a/./b")));
        assert!(!is_plain_absolute(Path::new("/a//b")));
        assert!(!is_plain_absolute(Path::new("/a/../b")));
        assert!(is_plain_absolute(Path::new("/a/b")));
        assert!(is_plain_absolute(Path::new("/")));
    }

    /// True if every ancestor of `dir` passes [`is_safe_ancestor`].
    fn is_safe_ancestor_path(dir: &Path) -> bool {
        dir.ancestors().all(|a| {
            fs::symlink_metadata(a)
                .is_ok_and(|m| is_safe_ancestor(m.uid(), m.mode(), crate::os::process::euid()))
        })
    }

    #[test]
    fn lock_private_creates_0600_and_never_follows_a_symlink() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("x.lock");
        let f = lock_private(&path).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        drop(f);
        let target = t.path().join("target");
        let link = t.path().join("link.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(lock_private(&link).is_err());
        assert!(!target.exists(), "nothing created through the symlink");
    }

    #[test]
    fn private_dir_checks() {
        let t = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(t.path()).unwrap();
        let d = base.join("d");
        make_private_dir(&d).unwrap();
        check_private_dir(&d, true).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o750)).unwrap();
        assert!(matches!(
            check_private_dir(&d, true),
            Err(Error::UnsafeDir { .. })
        ));
        fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
        let link = base.join("link");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert!(matches!(
            check_private_dir(&link, false),
            Err(Error::UnsafeDir { .. })
        ));
        let via = link.join("sub");
        make_private_dir(&d.join("sub")).unwrap();
        assert!(matches!(
            check_private_dir(&via, true),
            Err(Error::UnsafeDir { .. })
        ));
        check_private_dir(&via, false).unwrap();
    }

    #[test]
    fn atomic_write_replaces() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("r.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(
            fs::read_dir(t.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    #[test]
    fn ancestors() {
        for me in [0, 1000] {
            assert!(is_safe_ancestor(0, 0o40755, me));
            assert!(is_safe_ancestor(0, 0o41777, me), "sticky /tmp");
            assert!(
                !is_safe_ancestor(0, 0o40777, me),
                "world-writable, not sticky"
            );
            assert!(!is_safe_ancestor(0, 0o40775, me), "group-writable");
            assert!(!is_safe_ancestor(4242, 0o40755, me), "someone else's");
        }
        assert!(is_safe_ancestor(1000, 0o40755, 1000), "our own");
        assert!(!is_safe_ancestor(1000, 0o40755, 1001), "another user's");
    }

    #[test]
    fn make_private_dir_creates_0700_and_leaves_an_existing_one_alone() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("d");
        make_private_dir(&d).unwrap();
        assert_eq!(fs::metadata(&d).unwrap().mode() & 0o7777, 0o700);
        fs::set_permissions(&d, fs::Permissions::from_mode(0o750)).unwrap();
        make_private_dir(&d).unwrap();
        assert_eq!(
            fs::metadata(&d).unwrap().mode() & 0o7777,
            0o750,
            "checked elsewhere, not changed"
        );
        assert!(make_private_dir(&t.path().join("missing/d")).is_err());
    }
}
