//! The state root and the directories under it, created and checked as
//! private (0700, ours, not a symlink, on a filesystem with working flock).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, IoResultExt, Result};
use crate::os::atomic::{check_private_dir, ensure_private_dir};
use crate::policy::Policy;

/// statfs(2) `f_type` values of network filesystems whose flock is not
/// host-local or not trustworthy (linux/magic.h; cargo#2615 on NFS).
const NETWORK_FS: [u64; 4] = [0x6969, 0x517B, 0xFF53_4D42, 0xFE53_4D42];

/// The private directory holding registry, leases, archives and the audit log
/// (SPEC/Words "state root"), with the policy it is operated under: the
/// CLI resolves the policy once (config files, environment, flags) and
/// opens the state root with it, so every operation that holds the state
/// root (through its [`crate::store::registry::Registry`]) reads the same
/// policy, and no global does.
#[derive(Debug, Clone)]
pub struct StateRoot {
    path: PathBuf,
    policy: Arc<Policy>,
}

impl StateRoot {
    /// Returns where the state root is: `$LEASE_HOME`, else
    /// `$XDG_STATE_HOME/lease`, else `~/.local/state/lease`. Relative values are
    /// a usage error (they would change meaning with the current directory).
    pub fn locate() -> Result<PathBuf> {
        Self::locate_with(|k| std::env::var_os(k))
    }

    /// [`StateRoot::locate`] with the environment read through `var`.
    fn locate_with(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<PathBuf> {
        let nonempty = |k: &str| var(k).filter(|v| !v.is_empty());
        let path = if let Some(p) = nonempty("LEASE_HOME") {
            PathBuf::from(p)
        } else if let Some(p) = nonempty("XDG_STATE_HOME") {
            PathBuf::from(p).join("lease")
        } else if let Some(h) = nonempty("HOME") {
            PathBuf::from(h).join(".local/state/lease")
        } else {
            return Err(Error::Usage(
                "cannot find the state root: set LEASE_HOME or HOME".into(),
            ));
        };
        if !path.is_absolute() {
            return Err(Error::Usage(format!(
                "state root `{}` is not an absolute path",
                path.display()
            )));
        }
        refuse_newline("state root", &path)?;
        Ok(lexically_normal(&path))
    }

    /// Opens the state root, creating it (0700) and its subdirectories if needed.
    ///
    /// # Errors
    /// [`Error::UnsafeDir`] (reason `lease-dir-unsafe`) if it or a subdirectory
    /// is a symlink, not ours, open to group or others, reached through a
    /// symlinked ancestor, or on NFS/SMB.
    pub fn open_or_create(policy: &Arc<Policy>) -> Result<StateRoot> {
        let path = Self::locate()?;
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).at_do("cannot create", parent)?;
        }
        let root = StateRoot {
            path,
            policy: Arc::clone(policy),
        };
        ensure_private_dir(&root.path, true)?;
        check_local_fs(&root.path)?;
        for sub in [
            root.records(),
            root.leases(),
            root.archives(),
            root.scratch(),
            root.locks(),
        ] {
            ensure_private_dir(&sub, false)?;
        }
        let wt = root.worktrees();
        if wt.parent() == Some(root.path.as_path()) {
            ensure_private_dir(&wt, false)?;
        } else {
            // A configured root elsewhere: its parents are created as usual,
            // it is 0700, and no ancestor may be a symlink.
            if let Some(parent) = wt.parent() {
                fs::create_dir_all(parent).at_do("cannot create", parent)?;
            }
            ensure_private_dir(&wt, true)?;
        }
        Ok(root)
    }

    /// Opens an existing state root for reading; `Ok(None)` if there is none yet.
    pub fn open_existing(policy: &Arc<Policy>) -> Result<Option<StateRoot>> {
        Self::open_existing_at(Self::locate()?, policy)
    }

    /// [`StateRoot::open_existing`] at `path`.
    fn open_existing_at(path: PathBuf, policy: &Arc<Policy>) -> Result<Option<StateRoot>> {
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).at(&path),
            Ok(_) => {}
        }
        check_private_dir(&path, true)?;
        Ok(Some(StateRoot {
            path,
            policy: Arc::clone(policy),
        }))
    }

    /// Wraps a path already known to be a checked state root.
    pub(crate) fn at(path: PathBuf, policy: &Arc<Policy>) -> StateRoot {
        StateRoot {
            path,
            policy: Arc::clone(policy),
        }
    }

    /// The state root itself.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// The policy this state root is operated under (resolved once by the
    /// CLI; [`crate::policy::resolve`]).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }
    /// `records/`: one `<id>.json` and `<id>.lock` per worktree.
    pub fn records(&self) -> PathBuf {
        self.path.join("records")
    }
    /// `records/removed/`: the records of removed worktrees (tombstones),
    /// moved out of `records/` ([`crate::store::registry::Registry::shelve`])
    /// so commands that skip them never read them; their `<id>.lock` stays
    /// in `records/`. Made on the first move.
    pub fn removed_records(&self) -> PathBuf {
        self.records().join("removed")
    }
    /// `leases/`: one `<id>.lease` per worktree.
    pub fn leases(&self) -> PathBuf {
        self.path.join("leases")
    }
    /// `archives/`: `<id>/<n>.bundle`.
    pub fn archives(&self) -> PathBuf {
        self.path.join("archives")
    }
    /// `scratch/`: temporary bare repositories of archive and verify steps.
    pub fn scratch(&self) -> PathBuf {
        self.path.join("scratch")
    }
    /// `locks/`: per-repository creation locks.
    pub fn locks(&self) -> PathBuf {
        self.path.join("locks")
    }
    /// The worktree root: config `worktree_root`, else `worktrees/`.
    pub fn worktrees(&self) -> PathBuf {
        worktree_root_of(&self.path, &self.policy)
    }
    /// `audit.jsonl`: the append-only audit log.
    pub fn audit_log(&self) -> PathBuf {
        self.path.join("audit.jsonl")
    }
}

/// The worktree root for the state root `state` under `policy`: config
/// `worktree_root`, else `<state>/worktrees`.
pub fn worktree_root_of(state: &Path, policy: &Policy) -> PathBuf {
    match &policy.worktree_root {
        Some(r) => r.value.clone(),
        None => state.join("worktrees"),
    }
}

/// Refuses a worktree root under `/tmp`, `/var/tmp` or `$TMPDIR`, which OS
/// cleaners sweep by age (`temp-worktree-root`), unless `allowed`. Paths are
/// compared canonically: a symlink to `/tmp` counts; a root that does not
/// exist yet is judged by its deepest existing ancestor.
pub fn check_not_temp(root: &Path, allowed: bool) -> Result<()> {
    if allowed {
        return Ok(());
    }
    let mut temps: Vec<PathBuf> = vec!["/tmp".into(), "/var/tmp".into()];
    if let Some(t) = std::env::var_os("TMPDIR").map(PathBuf::from)
        && t.is_absolute()
    {
        temps.push(t);
    }
    let temps: Vec<PathBuf> = temps
        .iter()
        .filter_map(|t| fs::canonicalize(t).ok())
        .collect();
    match under_temp(&canonical_prefix(root), &temps) {
        None => Ok(()),
        Some(t) => Err(Error::refused(
            crate::model::reason::HoldReason::TempWorktreeRoot,
            format!(
                "worktree root `{}` is under `{}`, which OS cleaners sweep by age; nothing was created",
                root.display(),
                t.display()
            ),
        )),
    }
}

/// The temp directory of `temps` that `root` lies in (or is), if any.
fn under_temp<'a>(root: &Path, temps: &'a [PathBuf]) -> Option<&'a Path> {
    temps
        .iter()
        .find(|t| t.as_path() != Path::new("/") && root.starts_with(t))
        .map(PathBuf::as_path)
}

/// `path` with its deepest existing ancestor canonicalized (symlinks
/// resolved) and the rest appended as is.
fn canonical_prefix(path: &Path) -> PathBuf {
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    let mut cur = path;
    loop {
        if let Ok(c) = fs::canonicalize(cur) {
            let mut out = c;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match (cur.parent(), cur.file_name()) {
            (Some(p), Some(n)) => {
                rest.push(n);
                cur = p;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Refuses a state root on a network filesystem, where flock is not host-local.
fn check_local_fs(path: &Path) -> Result<()> {
    let magic = crate::os::atomic::fs_magic(path)?;
    if NETWORK_FS.contains(&magic) {
        return Err(Error::refused(
            crate::model::reason::HoldReason::LockUnsupported,
            format!(
                "state root `{}` is on a network filesystem (statfs magic {magic:#x}); flock there is not trustworthy",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// Removes a scratch repository that lease made under `<state root>/scratch`.
/// Refuses anything else: a path outside `scratch/`, or one that is not a
/// private directory of ours (so never through a symlink).
pub fn remove_scratch(root: &StateRoot, path: &Path) -> Result<()> {
    if path.parent() != Some(root.scratch().as_path()) {
        return Err(Error::Usage(format!(
            "`{}` is not a scratch repository of lease",
            path.display()
        )));
    }
    check_private_dir(path, false)?;
    // The state root is the user's private 0700 directory (SPEC threat model);
    // std's recursive delete does not follow symlinks below its start.
    fs::remove_dir_all(path).at_do("cannot remove", path) // forbid: allow remove_dir_all
}

/// `path` with `//`, `/./` and a trailing `/` removed, lexically (SPEC "Bad
/// input and faults": `LEASE_HOME` is normalized before use). `..` is kept
/// as it is: only the filesystem knows what it names, and the canonical
/// check of [`check_private_dir`] refuses it. Every path lease builds under
/// the state root then has the one spelling git prints for it; without
/// this, `LEASE_HOME=/x//state` made every created worktree hold
/// `not-registered` (its recorded path never matched `git worktree list`).
pub fn lexically_normal(path: &Path) -> PathBuf {
    path.components().collect()
}

/// Refuses a path with a newline in it (SPEC "Bad input and faults": a
/// target path containing a newline is a usage error): git prints paths
/// one per line outside `-z` formats (`rev-parse --git-common-dir`), so
/// `/r/a<newline>/b` would be read back as `/r/a`, another repository.
/// `what` names the path in the message (`repository`, `worktree`, ...).
pub fn refuse_newline(what: &str, path: &Path) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    if path.as_os_str().as_bytes().contains(&b'\n') {
        return Err(Error::Usage(format!(
            "{what} path `{}` contains a newline; lease refuses such paths (rename it)",
            crate::model::fmt::escape_controls(&path.to_string_lossy())
        )));
    }
    Ok(())
}

/// Returns the UTF-8 form of a path that will be stored in a record; paths
/// stored in records must be UTF-8 (SPEC/Record).
pub fn utf8(path: &Path) -> Result<String> {
    Ok(crate::model::record::utf8_path(path)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::os::atomic::make_private_dir;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn temp_roots() {
        let temps = vec![PathBuf::from("/tmp"), PathBuf::from("/home/u/tmp")];
        assert_eq!(
            under_temp(Path::new("/tmp/x/worktrees"), &temps),
            Some(Path::new("/tmp"))
        );
        assert_eq!(
            under_temp(Path::new("/tmp"), &temps),
            Some(Path::new("/tmp"))
        );
        assert_eq!(
            under_temp(Path::new("/home/u/tmp/w"), &temps),
            Some(Path::new("/home/u/tmp"))
        );
        assert_eq!(under_temp(Path::new("/tmpfoo/w"), &temps), None);
        assert_eq!(under_temp(Path::new("/srv/w"), &temps), None);
        // TMPDIR=/ must not make every root a temp root.
        assert_eq!(under_temp(Path::new("/srv/w"), &[PathBuf::from("/")]), None);
        // A symlink into a temp dir counts; a missing tail is kept.
        let t = tempfile::tempdir().unwrap();
        let real = fs::canonicalize(t.path()).unwrap();
        let link = real.join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(
            canonical_prefix(&link.join("a/b")),
            real.join("a/b"),
            "resolved through the symlink"
        );
        assert!(check_not_temp(&link.join("w"), false).is_err() || !real.starts_with("/tmp"));
        assert!(check_not_temp(&link.join("w"), true).is_ok());
    }

    #[test]
    fn the_state_root_comes_from_lease_home_then_xdg_then_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        const ALL: [(&str, &str); 3] = [
            ("LEASE_HOME", "/l"),
            ("XDG_STATE_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(StateRoot::locate_with(env(&ALL)).unwrap(), Path::new("/l"));
        assert_eq!(
            StateRoot::locate_with(env(&[
                ("LEASE_HOME", ""),
                ("XDG_STATE_HOME", "/x"),
                ("HOME", "/h")
            ]))
            .unwrap(),
            Path::new("/x/lease"),
            "an empty variable is unset"
        );
        assert_eq!(
            StateRoot::locate_with(env(&[("XDG_STATE_HOME", ""), ("HOME", "/h")])).unwrap(),
            Path::new("/h/.local/state/lease")
        );
        // Lexically normal, whatever the spelling: byte for byte what git prints.
        for spelled in ["/l//s", "/l/./s", "/l/s/", "//l/s//", "/l/././s/."] {
            let pairs: &'static [(&'static str, &'static str)] =
                Box::leak(vec![("LEASE_HOME", spelled)].into_boxed_slice());
            let got = StateRoot::locate_with(env(pairs)).unwrap();
            assert_eq!(got.as_os_str(), "/l/s", "{spelled}");
        }
        let e = StateRoot::locate_with(env(&[("LEASE_HOME", "/l/a\nb")])).unwrap_err();
        assert!(
            matches!(&e, Error::Usage(m) if m.contains("newline")),
            "{e}"
        );
        assert!(matches!(
            StateRoot::locate_with(env(&[("HOME", "")])),
            Err(Error::Usage(_))
        ));
        for relative in [
            &[("LEASE_HOME", "l")][..],
            &[("XDG_STATE_HOME", "x")],
            &[("HOME", "h")],
        ] {
            let e = StateRoot::locate_with(env(relative)).unwrap_err();
            assert!(
                matches!(&e, Error::Usage(m) if m.contains("not an absolute path")),
                "{e}"
            );
        }
    }

    #[test]
    fn an_existing_state_root_is_opened_checked_and_a_missing_one_is_none() {
        let t = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(t.path()).unwrap();
        assert!(
            StateRoot::open_existing_at(
                base.join("none"),
                &std::sync::Arc::new(crate::policy::defaults())
            )
            .unwrap()
            .is_none()
        );
        let root = base.join("state");
        make_private_dir(&root).unwrap();
        let opened = StateRoot::open_existing_at(
            root.clone(),
            &std::sync::Arc::new(crate::policy::defaults()),
        )
        .unwrap()
        .unwrap();
        assert_eq!(opened.path(), root);
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(matches!(
            StateRoot::open_existing_at(
                root.clone(),
                &std::sync::Arc::new(crate::policy::defaults())
            ),
            Err(Error::UnsafeDir { .. })
        ));
        // Not "none": a state root lease cannot look at is an error.
        fs::write(base.join("file"), "").unwrap();
        assert!(
            StateRoot::open_existing_at(
                base.join("file/state"),
                &std::sync::Arc::new(crate::policy::defaults())
            )
            .is_err()
        );
    }

    #[test]
    fn the_state_root_layout() {
        let r = StateRoot::at(
            PathBuf::from("/s"),
            &std::sync::Arc::new(crate::policy::defaults()),
        );
        let got = [
            r.records(),
            r.leases(),
            r.archives(),
            r.scratch(),
            r.locks(),
            r.worktrees(),
            r.audit_log(),
        ];
        let want = [
            "records",
            "leases",
            "archives",
            "scratch",
            "locks",
            "worktrees",
            "audit.jsonl",
        ];
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g, &Path::new("/s").join(w));
        }
    }

    #[test]
    fn temp_roots_are_refused_unless_allowed() {
        for temp in ["/tmp/lease-test/worktrees", "/var/tmp/lease-test/worktrees"] {
            let e = check_not_temp(Path::new(temp), false).unwrap_err();
            assert_eq!(
                e.reason(),
                Some(crate::model::reason::HoldReason::TempWorktreeRoot),
                "{temp}"
            );
            assert!(check_not_temp(Path::new(temp), true).is_ok());
        }
        assert!(check_not_temp(Path::new("/srv/lease-test/worktrees"), false).is_ok());
    }

    #[test]
    fn a_local_state_root_passes_the_network_filesystem_check() {
        let t = tempfile::tempdir().unwrap();
        check_local_fs(t.path()).unwrap();
        assert!(check_local_fs(&t.path().join("missing")).is_err());
    }

    #[test]
    fn remove_scratch_removes_only_a_private_directory_in_scratch() {
        let t = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(t.path()).unwrap();
        let root = StateRoot::at(
            base.join("state"),
            &std::sync::Arc::new(crate::policy::defaults()),
        );
        fs::create_dir_all(root.scratch()).unwrap();
        let keep = base.join("keep");
        make_private_dir(&keep).unwrap();
        fs::write(keep.join("k"), "k").unwrap();
        // Outside scratch/, and a symlink inside it to a directory elsewhere.
        assert!(remove_scratch(&root, &keep).is_err());
        std::os::unix::fs::symlink(&keep, root.scratch().join("link")).unwrap();
        assert!(remove_scratch(&root, &root.scratch().join("link")).is_err());
        assert!(remove_scratch(&root, &root.scratch().join("link/k")).is_err());
        assert!(keep.join("k").exists());
        let s = root.scratch().join("repo");
        make_private_dir(&s).unwrap();
        fs::write(s.join("f"), "f").unwrap();
        remove_scratch(&root, &s).unwrap();
        assert!(!s.exists());
    }
}
