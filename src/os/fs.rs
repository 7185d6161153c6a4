//! What a path or a descriptor is, seen without following a symlink
//! (`lstat`, `fstat`, as the [`Seen`] values the gates compare), and opening
//! files lease does not trust to be what their names say: records, lock
//! files, the orphans file, the audit log, bundles and config files.
//!
//! # Invariants (SPEC "Bad input and faults")
//! - Nothing is opened through a symlink at its last component
//!   (`O_NOFOLLOW`), and nothing waits on open (`O_NONBLOCK`: a FIFO with no
//!   writer would block a plain `open(O_RDONLY)` forever; `O_NOCTTY`: a
//!   terminal device never becomes lease's controlling terminal).
//! - Only regular files are read: the name is `lstat`ed first, so a FIFO,
//!   socket or device is refused without being opened at all, and the open
//!   descriptor is `fstat`ed again (the name may have been replaced between
//!   the two).
//! - A whole-file read stops at a bound the caller names (bytes); a file
//!   longer than that is refused, never read without end.
//!
//! Every refusal is an [`io::Error`] of kind [`io::ErrorKind::InvalidData`]
//! whose message says what is there ("is a FIFO, not a regular file"), so
//! callers report the file as corrupt; a missing file stays
//! [`io::ErrorKind::NotFound`].

use std::fs::{self, File};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use crate::model::evidence::Seen;

/// The flags every untrusted open adds to its access mode.
pub const UNTRUSTED_OPEN_FLAGS: i32 = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;

/// What a non-regular file type is, for a message: `a FIFO`, `a symbolic
/// link`, ... (`None` for a regular file).
pub fn special_kind(t: fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_symlink() {
        Some("a symbolic link")
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else {
        Some("not a regular file")
    }
}

/// The refusal for a file of type `t` that is not regular.
fn not_regular(t: fs::FileType) -> Option<io::Error> {
    special_kind(t).map(|k| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("is {k}, not a regular file"),
        )
    })
}

/// Opens `path` read-only if and only if it is a regular file: `lstat`
/// first (nothing special is ever opened), then an `O_NOFOLLOW|O_NONBLOCK|
/// O_NOCTTY` open, then `fstat` of the descriptor, which must still be a
/// regular file.
///
/// # Errors
/// `NotFound` when nothing is there; `InvalidData` for a symlink, FIFO,
/// socket, device or directory; any other error of `open`.
pub fn open_regular(path: &Path) -> io::Result<File> {
    open_regular_with_meta(path).map(|(f, _)| f)
}

/// [`open_regular`], also returning the descriptor's `fstat` (the one that
/// found it a regular file), so a reader needs no second `fstat` for its
/// length.
///
/// # Errors
/// As [`open_regular`].
fn open_regular_with_meta(path: &Path) -> io::Result<(File, fs::Metadata)> {
    if let Some(e) = not_regular(fs::symlink_metadata(path)?.file_type()) {
        return Err(e);
    }
    open_then_check(path)
}

/// The `O_NOFOLLOW|O_NONBLOCK|O_NOCTTY` read-only open of `path` and the
/// `fstat` of its descriptor, which must be a regular file: the part of
/// [`open_regular`] after its `lstat`.
fn open_then_check(path: &Path) -> io::Result<(File, fs::Metadata)> {
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(UNTRUSTED_OPEN_FLAGS)
        .open(path)
        .map_err(symlink_is_invalid)?;
    let meta = f.metadata()?;
    if let Some(e) = not_regular(meta.file_type()) {
        return Err(e);
    }
    Ok((f, meta))
}

/// Refuses an open file that is not a regular file (a name replaced by a
/// FIFO or device between an `lstat` and the `open`, or a lock file lease
/// created with `O_CREAT` that already existed as something else).
///
/// # Errors
/// `InvalidData` naming what it is; the error of `fstat`.
pub fn check_regular(f: &File) -> io::Result<()> {
    match not_regular(f.metadata()?.file_type()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `O_NOFOLLOW` on a symlink fails with `ELOOP`: that is a refusal, said
/// in words.
pub fn symlink_is_invalid(e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "is a symbolic link, not a regular file",
        )
    } else {
        e
    }
}

/// Reads `path` whole if it is a regular file ([`open_regular`]) of at most
/// `limit` bytes.
///
/// # Errors
/// As [`open_regular`]; `InvalidData` ("is larger than N bytes") when it
/// holds more than `limit` bytes, found by `fstat` or while reading (a file
/// that grows under the read is still cut at `limit + 1` bytes).
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let (f, meta) = open_regular_with_meta(path)?;
    read_bounded(f, meta.len(), limit)
}

/// [`read_regular`] of a name that a directory listing has just reported
/// as a regular file (`d_type` `DT_REG`, readdir(3)): that report stands
/// in for the `lstat` before the open, which says no more (either is
/// checked before the open, never atomically with it). The open
/// (`O_NOFOLLOW|O_NONBLOCK|O_NOCTTY`) and the `fstat` of the descriptor,
/// which must be a regular file of at most `limit` bytes, decide as
/// before. One `statx` less per file, for registry scans.
///
/// # Errors
/// As [`read_regular`].
pub fn read_listed_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let (f, meta) = open_then_check(path)?;
    read_bounded(f, meta.len(), limit)
}

/// Reads open file `f` whose `fstat` said `len` bytes, to its end but at
/// most `limit` bytes (`InvalidData` beyond).
fn read_bounded(f: File, len: u64, limit: u64) -> io::Result<Vec<u8>> {
    if len > limit {
        return Err(too_large(limit));
    }
    // Room for the whole file and one byte more: two reads, the second
    // seeing the end (from an empty Vec, read_to_end grows it from 32
    // bytes, 9 reads for a 3 KiB record).
    let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    f.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(buf)
}

fn too_large(limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("is larger than {limit} bytes, the bound for this file"),
    )
}

fn seen(m: &fs::Metadata) -> Seen {
    Seen {
        dev: m.dev(),
        ino: m.ino(),
        uid: m.uid(),
        mode: m.mode(),
        nlink: m.nlink(),
    }
}

/// Returns a file's birth time in nanoseconds since the epoch, if the
/// filesystem records one (statx `STATX_BTIME`, which std reads).
pub fn birth(meta: &Option<fs::Metadata>) -> Option<u64> {
    let created = meta.as_ref()?.created().ok()?;
    let d = created.duration_since(std::time::UNIX_EPOCH).ok()?;
    u64::try_from(d.as_nanos()).ok().filter(|&n| n > 0)
}

/// Returns what `lstat(path)` sees, or `None` if it does not exist or cannot be read.
pub fn lstat(path: &Path) -> Option<Seen> {
    fs::symlink_metadata(path).ok().map(|m| seen(&m))
}

/// Returns what `fstat` sees through an open file.
pub fn fstat(file: &fs::File) -> Option<Seen> {
    file.metadata().ok().map(|m| seen(&m))
}

/// Returns what `fstat` sees through a raw directory descriptor.
pub fn fstat_fd(fd: &OwnedFd) -> Option<Seen> {
    rustix::fs::fstat(fd).ok().map(|st| {
        #[allow(clippy::unnecessary_cast)]
        Seen {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            uid: st.st_uid,
            mode: st.st_mode as u32,
            nlink: st.st_nlink as u64,
        }
    })
}

/// Returns what `stat` (following symlinks) sees of `path`.
pub fn stat(path: &Path) -> Option<Seen> {
    fs::metadata(path).ok().map(|m| seen(&m))
}

/// True if `a` and `b` are the same file: both `stat` (following symlinks)
/// and show the same device and inode, as test(1)'s `-ef` (POSIX
/// `test`, XCU "test"). `/proc/self/fd/N` names the open file of this
/// process's descriptor N (proc(5)), unlinked or not.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// True if this process may execute `path`: access(2) with `X_OK` on the
/// real uid, as test(1)'s `-x` (true for a searchable directory too).
pub fn executable(path: &Path) -> bool {
    rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_ok()
}

/// Returns true if and only if `path` is absolute and equals its canonical,
/// physical form: no symlinked component, no `.` or `..`, no doubled slash.
pub fn is_canonical(path: &Path) -> bool {
    path.is_absolute() && fs::canonicalize(path).is_ok_and(|c| c == path)
}

/// Returns true if and only if this process's current directory is `dir` or below it.
pub fn cwd_inside(dir: &Path) -> bool {
    std::env::current_dir()
        .ok()
        .and_then(|c| fs::canonicalize(c).ok())
        .is_some_and(|c| c.starts_with(dir))
}

/// Returns true if and only if users other than us can reach `path`: every
/// ancestor grants search permission to others (or to a group).
pub fn traversable_by_others(path: &Path) -> bool {
    path.ancestors().skip(1).all(|a| {
        fs::metadata(a)
            .is_ok_and(|m| m.mode() & 0o011 != 0 || m.uid() != crate::os::process::euid())
    })
}

/// Reads a small text file (at most 8 KiB) without following a symlink at
/// its last component (`O_NOFOLLOW`) or blocking on a FIFO (`O_NONBLOCK`),
/// trimming trailing newlines. `None` if it cannot be opened or read: the
/// callers (git's admin files: `gitdir`, `.git`, `locked`) treat that as
/// "not proven".
pub(crate) fn read_small(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let mut buf = Vec::new();
    f.by_ref().take(8192).read_to_end(&mut buf).ok()?;
    while buf.last() == Some(&b'\n') {
        buf.pop();
    }
    Some(buf)
}

/// How [`clone_or_copy`] copied a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyHow {
    /// `FICLONE` (ioctl_ficlone(2)): the filesystem shares the extents
    /// (btrfs, xfs with reflink, bcachefs); no data is written.
    Reflink,
    /// Read and written (the filesystem cannot clone, or across filesystems).
    Copy,
}

impl std::fmt::Display for CopyHow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CopyHow::Reflink => "reflink",
            CopyHow::Copy => "copy",
        })
    }
}

/// Copies `from`'s content into the empty file `to`: first `FICLONE`
/// (ioctl_ficlone(2); it fails with `EOPNOTSUPP`, `EXDEV` or `EINVAL`
/// where the filesystems cannot share extents), else an ordinary copy
/// from the start of `from`.
///
/// # Errors
/// The copy's read or write error.
pub fn clone_or_copy(from: &mut File, to: &mut File) -> io::Result<CopyHow> {
    if rustix::fs::ioctl_ficlone(&*to, &*from).is_ok() {
        return Ok(CopyHow::Reflink);
    }
    use std::io::Seek;
    from.rewind()?;
    to.set_len(0)?;
    to.rewind()?;
    io::copy(from, to)?;
    Ok(CopyHow::Copy)
}

/// Renames `from` to `to` only if `to` does not exist (renameat2
/// `RENAME_NOREPLACE`, Linux 3.15): a verified bundle is never replaced by
/// name.
///
/// # Errors
/// `EEXIST` if `to` exists (nothing moves); `EINVAL` on a filesystem without
/// the flag; any other rename error.
pub fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        from,
        rustix::fs::CWD,
        to,
        rustix::fs::RenameFlags::NOREPLACE,
    )
    .map_err(std::io::Error::from)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rustix::fs::{Mode, OFlags};
    use std::os::unix::fs::PermissionsExt;

    fn make_fifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
    }

    #[test]
    fn read_small_never_follows_a_symlink_or_waits_on_a_fifo() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("gitdir");
        fs::write(&file, b"/r/.git/worktrees/w\n\n").unwrap();
        assert_eq!(read_small(&file).unwrap(), b"/r/.git/worktrees/w");
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_small(&link), None, "a symlink is not followed");
        let fifo = t.path().join("fifo");
        make_fifo(&fifo);
        // With no writer, a blocking open would wait forever.
        assert_eq!(read_small(&fifo).unwrap(), b"");
        fs::write(&file, vec![b'x'; 10_000]).unwrap();
        assert_eq!(read_small(&file).unwrap().len(), 8192, "at most 8 KiB");
        assert_eq!(read_small(&t.path().join("none")), None);
    }

    #[test]
    fn a_listed_regular_file_is_still_refused_when_it_is_not_one() {
        // read_listed_regular trusts a listing's d_type instead of an
        // lstat: what the name holds when it is opened still decides,
        // without waiting on a FIFO or following a symlink.
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("r.json");
        fs::write(&file, b"{}").unwrap();
        assert_eq!(read_listed_regular(&file, 2).unwrap(), b"{}");
        let too_big = read_listed_regular(&file, 1).unwrap_err();
        assert_eq!(too_big.kind(), io::ErrorKind::InvalidData, "{too_big}");
        let link = t.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let fifo = t.path().join("fifo.json");
        make_fifo(&fifo);
        for (path, what) in [(&link, "symbolic link"), (&fifo, "FIFO")] {
            let e = read_listed_regular(path, 1 << 20).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
            assert!(e.to_string().contains(what), "{e}");
        }
        let gone = read_listed_regular(&t.path().join("none"), 1).unwrap_err();
        assert_eq!(gone.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn canonical_refuses_symlinks_and_dots() {
        let t = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(t.path()).unwrap();
        fs::create_dir(base.join("d")).unwrap();
        std::os::unix::fs::symlink(base.join("d"), base.join("l")).unwrap();
        assert!(is_canonical(&base.join("d")));
        assert!(!is_canonical(&base.join("l")));
        assert!(!is_canonical(&base.join("d/../d")));
        assert!(!is_canonical(Path::new("d")));
        assert!(lstat(&base.join("l")).is_some_and(|s| !s.is_dir()));
    }

    #[test]
    fn birth_is_the_creation_time_when_the_filesystem_records_one() {
        use std::time::{Duration, SystemTime, UNIX_EPOCH};
        let ns = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64;
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("f");
        // The kernel stamps with its coarse clock, up to a tick behind.
        let before = ns(SystemTime::now() - Duration::from_secs(1));
        fs::write(&f, "x").unwrap();
        let after = ns(SystemTime::now() + Duration::from_secs(1));
        assert_eq!(birth(&None), None);
        let meta = fs::symlink_metadata(&f).ok();
        if meta.as_ref().unwrap().created().is_err() {
            // No STATX_BTIME here: unknown, never a made-up time.
            assert_eq!(birth(&meta), None);
            return;
        }
        let b = birth(&meta).unwrap();
        assert!(before <= b && b <= after, "{before} <= {b} <= {after}");
    }

    #[test]
    fn stat_follows_a_symlink_and_lstat_and_fstat_see_what_they_are_given() {
        let t = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(t.path()).unwrap();
        fs::create_dir(base.join("d")).unwrap();
        std::os::unix::fs::symlink(base.join("d"), base.join("l")).unwrap();
        let d = lstat(&base.join("d")).unwrap();
        assert!(d.is_dir());
        assert_eq!(stat(&base.join("l")), Some(d));
        assert_ne!(lstat(&base.join("l")), Some(d));
        assert_eq!(stat(&base.join("missing")), None);
        let fd = rustix::fs::open(
            base.join("d"),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        assert_eq!(fstat_fd(&fd), Some(d));
        assert_eq!(fstat(&fs::File::open(base.join("d")).unwrap()), Some(d));
    }

    #[test]
    fn cwd_inside_compares_the_physical_current_directory() {
        // Tests share one current directory (the crate's), never a temp dir.
        let t = tempfile::tempdir().unwrap();
        assert!(cwd_inside(Path::new("/")));
        assert!(cwd_inside(&fs::canonicalize(".").unwrap()));
        assert!(!cwd_inside(&fs::canonicalize(t.path()).unwrap()));
    }

    #[test]
    fn traversable_by_others_needs_search_permission_on_every_ancestor() {
        let t = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(t.path()).unwrap();
        let open = base.join("open");
        let closed = base.join("closed");
        for (d, mode) in [(&open, 0o755), (&closed, 0o700)] {
            fs::create_dir_all(d.join("wt")).unwrap();
            fs::set_permissions(d, fs::Permissions::from_mode(mode)).unwrap();
        }
        fs::set_permissions(&base, fs::Permissions::from_mode(0o711)).unwrap();
        // Only the ancestors count, not the worktree itself.
        fs::set_permissions(open.join("wt"), fs::Permissions::from_mode(0o700)).unwrap();
        let all_searchable = base
            .ancestors()
            .all(|a| fs::metadata(a).is_ok_and(|m| m.mode() & 0o011 != 0));
        assert_eq!(traversable_by_others(&open.join("wt")), all_searchable);
        assert!(!traversable_by_others(&closed.join("wt")));
        fs::set_permissions(&closed, fs::Permissions::from_mode(0o710)).unwrap();
        assert_eq!(traversable_by_others(&closed.join("wt")), all_searchable);
        assert!(all_searchable, "the test needs a temp dir others can reach");
    }

    fn kind_of(r: io::Result<Vec<u8>>) -> (io::ErrorKind, String) {
        let e = r.unwrap_err();
        (e.kind(), e.to_string())
    }

    #[test]
    fn reads_a_regular_file_up_to_its_bound() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        fs::write(&p, b"12345").unwrap();
        assert_eq!(read_regular(&p, 5).unwrap(), b"12345");
        let (k, m) = kind_of(read_regular(&p, 4));
        assert_eq!(k, io::ErrorKind::InvalidData);
        assert!(m.contains("larger than 4 bytes"), "{m}");
        let (k, _) = kind_of(read_regular(&t.path().join("none"), 5));
        assert_eq!(k, io::ErrorKind::NotFound, "absence is not corruption");
    }

    #[test]
    fn a_fifo_a_symlink_a_device_and_a_directory_are_refused_at_once() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .unwrap();
        let target = t.path().join("target");
        fs::write(&target, b"x").unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for (p, what) in [
            (fifo.as_path(), "a FIFO"),
            (link.as_path(), "a symbolic link"),
            (Path::new("/dev/zero"), "a character device"),
            (t.path(), "a directory"),
        ] {
            let (k, m) = kind_of(read_regular(p, 1 << 20));
            assert_eq!(k, io::ErrorKind::InvalidData, "{what}");
            assert!(m.contains(what), "{what}: {m}");
        }
    }

    #[test]
    fn a_symlink_opened_without_the_lstat_is_still_refused() {
        let t = tempfile::tempdir().unwrap();
        let target = t.path().join("target");
        fs::write(&target, b"x").unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = fs::OpenOptions::new()
            .read(true)
            .custom_flags(UNTRUSTED_OPEN_FLAGS)
            .open(&link)
            .map_err(symlink_is_invalid)
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        // A FIFO opened non-blocking (the lstat raced): fstat refuses it.
        let fifo = t.path().join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .unwrap();
        let f = fs::OpenOptions::new()
            .read(true)
            .custom_flags(UNTRUSTED_OPEN_FLAGS)
            .open(&fifo)
            .unwrap();
        assert!(
            check_regular(&f)
                .unwrap_err()
                .to_string()
                .contains("a FIFO")
        );
    }

    #[test]
    fn a_bundle_is_never_renamed_over_another() {
        let t = tempfile::tempdir().unwrap();
        let (tmp, bundle) = (t.path().join(".2.bundle.tmp"), t.path().join("2.bundle"));
        fs::write(&tmp, b"new").unwrap();
        fs::write(&bundle, b"verified").unwrap();
        let e = rename_no_replace(&tmp, &bundle).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&bundle).unwrap(), b"verified");
        assert!(tmp.exists(), "nothing moved");
        fs::remove_file(&bundle).unwrap();
        rename_no_replace(&tmp, &bundle).unwrap();
        assert_eq!(fs::read(&bundle).unwrap(), b"new");
    }
}
