//! Identity observations without following symlinks: what `lstat` and `fstat`
//! see of a path or descriptor, as [`Seen`] values the gates compare.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::plan::Seen;

fn seen(m: &fs::Metadata) -> Seen {
    Seen {
        dev: m.dev(),
        ino: m.ino(),
        uid: m.uid(),
        mode: m.mode(),
        nlink: m.nlink(),
    }
}

/// Returns what `lstat(path)` sees, or `None` if it does not exist or cannot be read.
pub fn lstat(path: &Path) -> Option<Seen> {
    fs::symlink_metadata(path).ok().map(|m| seen(&m))
}

/// Returns what `fstat` sees through an open file.
pub fn fstat(file: &fs::File) -> Option<Seen> {
    file.metadata().ok().map(|m| seen(&m))
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
}
