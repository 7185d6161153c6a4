//! What git keeps in a linked worktree's admin directory
//! (`$GIT_COMMON_DIR/worktrees/<name>/`), read as files: the `.git` file and
//! `gitdir` that link a worktree and its admin directory, the per-worktree
//! ref namespaces, and git's worktree lock.
//!
//! git stores the lock as `$GIT_COMMON_DIR/worktrees/<name>/locked`,
//! holding the reason and a newline (git-worktree(1) "lock"; git 2.47
//! `builtin/worktree.c` writes it with `write_file`, `worktree.c`
//! `worktree_lock_reason` reads it back trimmed). While it is there a foreign
//! `git worktree prune` keeps the registration, and `git worktree remove`,
//! forced once or not at all, refuses with `cannot remove a locked working
//! tree, lock reason: REASON` (`git worktree remove -f -f` is needed to
//! override it), so the reason says what a person should run instead.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::model::evidence::LockSeen;

/// Per-worktree ref namespaces git deletes with the worktree (git-worktree(1) REFS).
pub const PRIVATE_REFS: &[&str] = &["refs/worktree/", "refs/bisect/", "refs/rewritten/"];

/// Returns the admin directory if `<wt>/.git` is a regular file naming
/// `<repo>/worktrees/<name>` whose `gitdir` file names `<wt>/.git`.
pub fn linked_admin(repo: &Path, wt: &Path) -> Option<PathBuf> {
    let dotgit = wt.join(".git");
    if !fs::symlink_metadata(&dotgit).ok()?.file_type().is_file() {
        return None;
    }
    let text = crate::os::fs::read_small(&dotgit)?;
    let admin = PathBuf::from(std::ffi::OsStr::from_bytes(text.strip_prefix(b"gitdir: ")?));
    let admin = if admin.is_absolute() {
        admin
    } else {
        wt.join(admin)
    };
    let admin = fs::canonicalize(&admin).ok()?;
    if admin.parent()? != repo.join("worktrees") {
        return None;
    }
    let back = crate::os::fs::read_small(&admin.join("gitdir"))?;
    let back = PathBuf::from(std::ffi::OsStr::from_bytes(&back));
    (back == dotgit).then_some(admin)
}

/// The largest `packed-refs` [`head_commit_direct`] reads (bytes); a larger
/// one leaves the answer to git.
const PACKED_REFS_LIMIT: u64 = 8 << 20;

/// The commit HEAD names in the linked worktree whose admin directory is
/// `admin`, read from git's files without a git process or libgit2 (exec's
/// outcome, SPEC "Record"): `<admin>/HEAD` is a commit id (detached) or
/// `ref: refs/heads/...`, which is a loose ref under `common` or a line of
/// `<common>/packed-refs` (gitrepository-layout(5)). `Some(None)`: the
/// branch has no commit yet (unborn). `None` when the files cannot tell
/// (the reftable backend, a symbolic ref to a symbolic ref, anything
/// unexpected): the caller asks git. It does not peel: a branch names a
/// commit (git refuses to point one at anything else).
pub fn head_commit_direct(common: &Path, admin: &Path) -> Option<Option<String>> {
    let is_oid = |b: &[u8]| {
        matches!(b.len(), 40 | 64) && b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
    };
    if fs::symlink_metadata(common.join("reftable")).is_ok() {
        return None;
    }
    let head = crate::os::fs::read_small(&admin.join("HEAD"))?;
    if is_oid(&head) {
        return Some(Some(String::from_utf8(head).ok()?));
    }
    let name = std::str::from_utf8(head.strip_prefix(b"ref: ")?)
        .ok()?
        .trim_end();
    let safe = name.starts_with("refs/heads/")
        && name
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
    if !safe {
        return None;
    }
    match crate::os::fs::read_small(&common.join(name)) {
        Some(loose) if is_oid(&loose) => return Some(Some(String::from_utf8(loose).ok()?)),
        Some(_) => return None,
        None if fs::symlink_metadata(common.join(name)).is_ok() => return None,
        None => {}
    }
    let packed = match crate::os::fs::read_regular(&common.join("packed-refs"), PACKED_REFS_LIMIT) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(None),
        Err(_) => return None,
    };
    for line in packed.split(|b| *b == b'\n') {
        let Some(oid) = line
            .strip_suffix(name.as_bytes())
            .and_then(|l| l.strip_suffix(b" "))
        else {
            continue;
        };
        if is_oid(oid) {
            return Some(Some(String::from_utf8(oid.to_vec()).ok()?));
        }
    }
    Some(None)
}

/// What follows the machine part of a reason lease writes: read by a person
/// in git's refusal, and where [`parse_lock_reason`] ends the state root.
const NOTE: &str = " (in use under lease; remove it with: ";

/// Returns the lock reason lease writes for record `id` of `state_root`:
/// `lease <id> <state root>` (the part SPEC fixes and
/// [`parse_lock_reason`] reads), then a note git shows to a person who runs
/// `git worktree remove` by hand, naming the command to run instead.
pub fn lock_reason(id: &str, state_root: &Path) -> String {
    let root = state_root.to_string_lossy();
    format!(
        "lease {id} {root}{NOTE}LEASE_HOME={} lease retire {id})",
        crate::plan::shell_quote(&root)
    )
}

/// Reads a lock reason lease wrote: `Some((id, state root))` when it starts
/// `lease <32 lowercase hex> /`; the root runs to the note lease appends,
/// or to the end (a reason of SPEC's bare form). `None` for any other
/// reason.
pub fn parse_lock_reason(reason: &str) -> Option<(String, String)> {
    let rest = reason.trim().strip_prefix("lease ")?;
    let (id, rest) = rest.split_at_checked(32)?;
    if !id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let root = rest.strip_prefix(' ')?;
    let root = root.rfind(NOTE).map_or(root, |i| &root[..i]);
    root.starts_with('/')
        .then(|| (id.to_string(), root.to_string()))
}

/// Judges git's lock on a registration (`locked`: the reason from
/// `git worktree list --porcelain -z`, `None` when unlocked) against record
/// `id` of `state_root`. A lease lock whose root is spelled differently but
/// reaches the same directory (device and inode) is this root.
pub fn classify_lock(locked: Option<&str>, id: &str, state_root: &Path) -> LockSeen {
    classify_lock_with(locked, id, state_root, |named| {
        same_dir(state_root, Path::new(named))
    })
}

/// [`classify_lock`] with the "same directory" test supplied (unit tests).
fn classify_lock_with(
    locked: Option<&str>,
    id: &str,
    state_root: &Path,
    same_root: impl Fn(&str) -> bool,
) -> LockSeen {
    let Some(reason) = locked else {
        return LockSeen::Unlocked;
    };
    match parse_lock_reason(reason) {
        Some((named, root)) => {
            let this_root = Path::new(&root) == state_root || same_root(&root);
            if named == id && this_root {
                LockSeen::Ours
            } else {
                LockSeen::Lease { id: named, root }
            }
        }
        None => LockSeen::Other(reason.to_string()),
    }
}

/// True if `a` and `b` are the same existing directory (device and inode).
fn same_dir(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.is_dir() && (x.dev(), x.ino()) == (y.dev(), y.ino()),
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn head_is_read_from_git_files_or_left_to_git() {
        let t = tempfile::tempdir().unwrap();
        let common = t.path().join("repo.git");
        let admin = common.join("worktrees/w");
        fs::create_dir_all(common.join("refs/heads/feat")).unwrap();
        fs::create_dir_all(&admin).unwrap();
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let c = "c".repeat(64);
        let head = |text: &str| {
            fs::write(admin.join("HEAD"), text).unwrap();
            head_commit_direct(&common, &admin)
        };
        // Detached (sha1 and sha256), a loose branch, a packed one, unborn.
        assert_eq!(head(&format!("{a}\n")), Some(Some(a.clone())));
        assert_eq!(head(&format!("{c}\n")), Some(Some(c.clone())));
        fs::write(common.join("refs/heads/feat/x"), format!("{b}\n")).unwrap();
        assert_eq!(head("ref: refs/heads/feat/x\n"), Some(Some(b.clone())));
        fs::write(
            common.join("packed-refs"),
            format!("# pack-refs with: peeled fully-peeled sorted \n{a} refs/heads/main\n{b} refs/heads/mainline\n"),
        )
        .unwrap();
        assert_eq!(head("ref: refs/heads/main\n"), Some(Some(a.clone())));
        assert_eq!(head("ref: refs/heads/mainline\n"), Some(Some(b.clone())));
        assert_eq!(
            head("ref: refs/heads/ain\n"),
            Some(None),
            "a suffix is not a name"
        );
        assert_eq!(head("ref: refs/heads/unborn\n"), Some(None));
        // What the files cannot tell is left to git.
        for text in [
            "ref: refs/heads/../../x\n",
            "ref: refs/tags/v1\n",
            "ref: HEAD\n",
            "garbage\n",
            "AAAA\n",
        ] {
            assert_eq!(head(text), None, "{text}");
        }
        fs::write(common.join("refs/heads/sym"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(head("ref: refs/heads/sym\n"), None, "a symbolic branch");
        fs::create_dir(common.join("reftable")).unwrap();
        assert_eq!(head(&format!("{a}\n")), None, "the reftable backend");
    }

    #[test]
    fn a_reason_names_lease_the_record_and_the_root_then_what_to_run() {
        let r = lock_reason(ID, Path::new("/home/me/.local/state/lease"));
        assert!(
            r.starts_with(&format!("lease {ID} /home/me/.local/state/lease (")),
            "{r}"
        );
        assert!(
            r.contains(&format!(
                "LEASE_HOME=/home/me/.local/state/lease lease retire {ID}"
            )),
            "{r}"
        );
        assert!(!r.contains('\n'), "one line, as git prints it");
        assert_eq!(
            parse_lock_reason(&r),
            Some((ID.to_string(), "/home/me/.local/state/lease".to_string()))
        );
        // A root with spaces and the note's own words round-trips too.
        let odd = "/srv/a (in use under lease; b";
        assert_eq!(
            parse_lock_reason(&lock_reason(ID, Path::new(odd))),
            Some((ID.to_string(), odd.to_string()))
        );
    }

    #[test]
    fn only_a_lease_shaped_reason_parses() {
        let bare = format!("lease {ID} /s/root\n");
        assert_eq!(
            parse_lock_reason(&bare),
            Some((ID.to_string(), "/s/root".to_string()))
        );
        for r in [
            String::new(),
            "usb disk".to_string(),
            "lease me alone".to_string(),
            format!("lease {} /s", ID.to_uppercase()),
            format!("lease {ID}"),
            format!("lease {ID} "),
            format!("lease {ID} relative/root"),
            format!("lease {ID}x /s"),
            format!("lease {} /s", &ID[..31]),
        ] {
            assert_eq!(parse_lock_reason(&r), None, "{r:?}");
        }
    }

    #[test]
    fn a_lock_is_ours_only_for_this_record_and_this_root() {
        let root = Path::new("/s/root");
        let never = |_: &str| false;
        let mine = lock_reason(ID, root);
        assert_eq!(
            classify_lock_with(None, ID, root, never),
            LockSeen::Unlocked
        );
        assert_eq!(
            classify_lock_with(Some(&mine), ID, root, never),
            LockSeen::Ours
        );
        let other_id = "f".repeat(32);
        assert_eq!(
            classify_lock_with(Some(&mine), &other_id, root, never),
            LockSeen::Lease {
                id: ID.into(),
                root: "/s/root".into()
            }
        );
        let elsewhere = lock_reason(ID, Path::new("/t/root"));
        assert_eq!(
            classify_lock_with(Some(&elsewhere), ID, root, never),
            LockSeen::Lease {
                id: ID.into(),
                root: "/t/root".into()
            }
        );
        // The same directory by another spelling is this root.
        assert_eq!(
            classify_lock_with(Some(&elsewhere), ID, root, |r| r == "/t/root"),
            LockSeen::Ours
        );
        assert_eq!(
            classify_lock_with(Some(""), ID, root, never),
            LockSeen::Other(String::new())
        );
        assert_eq!(
            classify_lock_with(Some("usb disk"), ID, root, never),
            LockSeen::Other("usb disk".into())
        );
    }

    #[test]
    fn same_dir_is_by_identity() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("d");
        std::fs::create_dir(&d).unwrap();
        std::os::unix::fs::symlink(&d, t.path().join("l")).unwrap();
        assert!(same_dir(&d, &t.path().join("l")));
        assert!(same_dir(&d, &t.path().join("d/../d")));
        assert!(!same_dir(&d, t.path()));
        assert!(!same_dir(&d, &t.path().join("none")));
        std::fs::write(t.path().join("f"), b"").unwrap();
        assert!(
            !same_dir(&t.path().join("f"), &t.path().join("f")),
            "a file is no state root"
        );
    }
}
