//! Opening files lease does not trust to be what their names say: records,
//! lock files, the orphans file, the audit log, bundles and config files.
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
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

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
    if let Some(e) = not_regular(fs::symlink_metadata(path)?.file_type()) {
        return Err(e);
    }
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(UNTRUSTED_OPEN_FLAGS)
        .open(path)
        .map_err(symlink_is_invalid)?;
    check_regular(&f)?;
    Ok(f)
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
    let f = open_regular(path)?;
    if f.metadata()?.len() > limit {
        return Err(too_large(limit));
    }
    let mut buf = Vec::new();
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
}
