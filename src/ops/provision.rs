//! Provisioning at creation (SPEC "Provisioned files, disk, and hygiene"):
//! ignored files the new worktree needs (`.env`, local config) copied in
//! from the main worktree, heavy directories (`node_modules`) symlinked to
//! the main worktree's copy, each recorded so that a retire knows an
//! unchanged one is not work.
//!
//! # Invariants
//! - Only paths git ignores are copied: those `git ls-files --others
//!   --ignored --exclude-standard` lists in the main worktree that also
//!   match `.worktreeinclude` (gitignore syntax, at the main worktree's top)
//!   or a config `provision` pattern, matched by git itself (`--exclude-from`,
//!   `--exclude`), never by a parser of lease's own.
//! - A config `provision` pattern that matches a tracked file, a
//!   `provision_symlink` entry that names a tracked path, and any entry
//!   with a `..` component or an absolute path are usage errors, found
//!   before anything is created ([`plan`]).
//! - Copies are made with `FICLONE` where the filesystem can (btrfs, xfs),
//!   else by reading and writing ([`crate::os::fs::clone_or_copy`]); never
//!   through a symlink: a destination whose parent in the new worktree is
//!   not a plain directory is skipped and said.
//! - Each provisioned path is recorded with its type and sha256 (a file)
//!   or link text (a symlink).

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoResultExt, Result};
use crate::git::{RepoGit, ops};
use crate::model::record::Provisioned;

/// The name of the include file at the main worktree's top (Claude Code's
/// convention, also read by worktrunk).
pub const INCLUDE_FILE: &str = ".worktreeinclude";

/// What [`plan`] found to provision, before the worktree exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The main worktree's top directory (the source).
    pub main: PathBuf,
    /// Ignored files to copy, relative to the top, raw bytes, sorted.
    pub files: Vec<Vec<u8>>,
    /// Config `provision_symlink` entries present in the main worktree.
    pub symlinks: Vec<String>,
}

/// Finds what to provision from the main worktree of the repository whose
/// common git dir is `common`. `None` when there is nothing to do (no
/// main worktree, no `.worktreeinclude`, no config entries).
///
/// # Errors
/// [`Error::Usage`] for an entry that escapes the repository or names a
/// tracked path (nothing was created yet); git's failure otherwise.
pub fn plan(policy: &crate::policy::Policy, rg: &RepoGit, common: &Path) -> Result<Option<Plan>> {
    let patterns = policy.provision.value.clone();
    let links = policy.provision_symlink.value.clone();
    let entries = ops::worktrees(rg, common)?;
    let Some(main) = entries.first().filter(|e| !e.bare).map(|e| e.path()) else {
        return Ok(None);
    };
    let include = main.join(INCLUDE_FILE);
    let has_include = fs::symlink_metadata(&include).is_ok_and(|m| m.file_type().is_file());
    if !has_include && patterns.is_empty() && links.is_empty() {
        return Ok(None);
    }
    for p in patterns.iter().chain(links.iter()) {
        crate::policy::check_provision_entry(p).map_err(Error::Usage)?;
    }
    for p in &patterns {
        if let Some(t) = ops::tracked_matching(rg, &main, p)?.first() {
            return Err(Error::Usage(format!(
                "config `provision` entry `{p}` matches the tracked file `{}`; provision copies only files git ignores",
                crate::model::fmt::lossless(t)
            )));
        }
    }
    for l in &links {
        if let Some(t) = ops::tracked_under(rg, &main, l)?.first() {
            return Err(Error::Usage(format!(
                "config `provision_symlink` entry `{l}` names the tracked path `{}`; symlink only ignored directories",
                crate::model::fmt::lossless(t)
            )));
        }
    }
    let ignored = ops::ignored_files(rg, &main)?;
    let included = ops::untracked_matching(
        rg,
        &main,
        has_include.then_some(include.as_path()),
        &patterns,
    )?;
    let files = crate::plan::provisioned_files(&ignored, &included, &links);
    let symlinks = links
        .into_iter()
        .filter(|l| fs::symlink_metadata(main.join(l)).is_ok())
        .collect();
    Ok(Some(Plan {
        main,
        files,
        symlinks,
    }))
}

/// Provisions `plan` into the new worktree `wt`: returns what was
/// provisioned, and a note per path that was skipped (it never fails the
/// creation: a missing provisioned file is no loss).
pub fn apply(plan: &Plan, wt: &Path) -> (Vec<Provisioned>, Vec<String>) {
    let mut done = Vec::new();
    let mut notes = Vec::new();
    for rel in &plan.files {
        match copy_one(&plan.main, wt, rel) {
            Ok(p) => done.push(p),
            Err(e) => notes.push(format!(
                "not provisioned `{}`: {e}",
                crate::model::fmt::lossless(rel)
            )),
        }
    }
    for l in &plan.symlinks {
        let target = plan.main.join(l);
        let at = wt.join(l);
        let made = parent_is_plain(wt, l.as_bytes()).and_then(|()| {
            std::os::unix::fs::symlink(&target, &at).at_do("cannot create the symlink", &at)
        });
        match made {
            Ok(()) => done.push(Provisioned {
                path: l.clone(),
                kind: "symlink".into(),
                how: "symlink".into(),
                sha256: None,
                target: Some(target.to_string_lossy().into_owned()),
            }),
            Err(e) => notes.push(format!("not provisioned `{l}`: {e}")),
        }
    }
    (done, notes)
}

/// Fails unless every ancestor of `rel` below `wt` is a directory (not a
/// symlink) or absent; creates the absent ones (0755).
fn parent_is_plain(wt: &Path, rel: &[u8]) -> Result<()> {
    let rel = Path::new(std::ffi::OsStr::from_bytes(rel));
    let mut at = wt.to_path_buf();
    let parents: Vec<_> = rel
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .collect();
    for c in parents {
        at.push(c);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => {
                return Err(Error::Usage(format!(
                    "`{}` is not a directory in the new worktree (a symlink?); lease never writes through it",
                    at.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fs::DirBuilder::new()
                    .mode(0o755)
                    .create(&at)
                    .at_do("cannot create", &at)?;
            }
            Err(e) => return Err(e).at(&at),
        }
    }
    Ok(())
}

/// Copies one ignored file (or symlink) from `main` to `wt`.
fn copy_one(main: &Path, wt: &Path, rel: &[u8]) -> Result<Provisioned> {
    let rel_path = Path::new(std::ffi::OsStr::from_bytes(rel));
    let src = main.join(rel_path);
    let dst = wt.join(rel_path);
    let shown = crate::model::fmt::lossless(rel);
    parent_is_plain(wt, rel)?;
    let meta = fs::symlink_metadata(&src).at(&src)?;
    if meta.file_type().is_symlink() {
        let text = fs::read_link(&src).at(&src)?;
        std::os::unix::fs::symlink(&text, &dst).at_do("cannot create the symlink", &dst)?;
        return Ok(Provisioned {
            path: shown,
            kind: "symlink".into(),
            how: "symlink".into(),
            sha256: None,
            target: Some(text.to_string_lossy().into_owned()),
        });
    }
    let mut from = crate::os::fs::open_regular(&src).at(&src)?;
    let mut to = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(meta.permissions().mode() & 0o7777)
        .open(&dst)
        .at_do("cannot create", &dst)?;
    let how = crate::os::fs::clone_or_copy(&mut from, &mut to).at_do("cannot copy into", &dst)?;
    crate::os::atomic::fsync(&to, &dst, "the provisioned copy").at_do("cannot fsync", &dst)?;
    let sha = crate::ops::retire::fd_sha256(&mut from).at(&src)?;
    Ok(Provisioned {
        path: shown,
        kind: "file".into(),
        how: how.to_string(),
        sha256: Some(sha),
        target: None,
    })
}

/// Whether the provisioned path `p` is still what was provisioned in `wt`:
/// a file with the same sha256 (read from an `O_NOFOLLOW|O_NONBLOCK`
/// descriptor), a symlink with the same link text. Anything else (gone,
/// another type, unreadable) is changed.
pub fn unchanged(wt: &Path, p: &Provisioned) -> bool {
    let at = wt.join(&p.path);
    let Ok(m) = fs::symlink_metadata(&at) else {
        return false;
    };
    match p.kind.as_str() {
        "symlink" => {
            m.file_type().is_symlink()
                && fs::read_link(&at)
                    .ok()
                    .map(|t| t.to_string_lossy().into_owned())
                    == p.target
        }
        "file" => {
            let Ok(mut f) = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&at)
            else {
                return false;
            };
            if !f.metadata().is_ok_and(|m| m.file_type().is_file()) {
                return false;
            }
            crate::ops::retire::fd_sha256(&mut f).ok() == p.sha256
        }
        _ => false,
    }
}
