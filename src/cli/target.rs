//! Naming a target, the same way for every command that takes a record:
//! a record id, a unique prefix of 8 or more hex digits, or a worktree path
//! in any spelling that resolves to its top directory (SPEC "Commands").
//!
//! A path must be normal (no `.` or `..` after a name, no `//`: SPEC
//! invariant 5), or `.` for the current directory; it is then resolved by
//! the kernel (`realpath(3)`, which follows symlinks) only to *find* the
//! record: what lease then acts on
//! is the record's own canonical path, which the retire gates re-resolve
//! without following symlinks (gate 2). A spelling can therefore pick a
//! record, never widen what is removed.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::record::State;
use crate::store::registry::{Loaded, Registry};

/// What a target names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Target {
    /// A record, by its full id.
    Id(String),
    /// An existing directory that is the top of no recorded worktree: its
    /// canonical path, and whether it is a repository's main worktree
    /// (`.git` is a directory there), which no lease command takes.
    Unrecorded {
        /// The canonical path.
        path: PathBuf,
        /// True for a main worktree.
        main: bool,
    },
}

/// Returns a function that puts the record `id` (a full id or a prefix)
/// and, when `reg` has it, its worktree path on an error, so that the
/// error's `next` names them ([`Error::about`]; cli/hint.rs).
pub(super) fn about<'a>(
    reg: Option<&'a Registry>,
    id: &'a str,
) -> impl FnOnce(Error) -> Error + 'a {
    move |e| {
        let path = reg
            .and_then(|r| r.get(id).ok())
            .and_then(|r| r.worktree.as_ref().map(|w| w.path()));
        e.about(id, path.as_deref())
    }
}

/// Returns true if `t` reads as a record id or prefix rather than a path:
/// 8 to 32 hex digits and no file of that name in the current directory.
pub(super) fn looks_like_id(t: &str) -> bool {
    (8..=32).contains(&t.len())
        && t.bytes().all(|b| b.is_ascii_hexdigit())
        && std::fs::symlink_metadata(t).is_err()
}

/// Resolves `t` against `reg` (see the module doc).
///
/// # Errors
/// A usage error (exit 2) for an unknown or ambiguous id, a path with a
/// newline, a path that does not exist and names no record, or a path
/// inside a worktree that is not its top directory.
pub(super) fn resolve(reg: &Registry, t: &str) -> Result<Target> {
    if looks_like_id(t) {
        return reg.resolve(t).map(Target::Id);
    }
    crate::store::root::refuse_newline("worktree", Path::new(t))?;
    if t.is_empty() {
        return Err(Error::Usage(
            "an empty target names nothing; name a record id or a worktree's top directory".into(),
        ));
    }
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Environment(format!("cannot read the current directory: {e}")))?;
    // SPEC invariant 5: `..` (and `.`) after a name is refused, since after
    // a symlinked name it means another directory than it reads; `.` alone
    // is the current directory, which getcwd(3) gives physically.
    let lexical = lexical_absolute(&cwd, t);
    if lexical.is_none() && t != "." && t != "./" {
        return Err(Error::Usage(format!(
            "`{t}` is not a normal path (`.` or `..` after a name, or `//`); name the worktree's top directory"
        )));
    }
    // A directory that is gone (deleted by hand) can still name the
    // record that recorded it, by its absolute spelling.
    let Ok(canon) = std::fs::canonicalize(t) else {
        if let Some(abs) = lexical
            && let Some(id) = recorded_at(reg, &abs, true)?
        {
            return Ok(Target::Id(id));
        }
        return Err(Error::Usage(format!(
            "`{t}` is neither a record id nor an existing path"
        )));
    };
    if let Some(id) = recorded_at(reg, &canon, false)? {
        return Ok(Target::Id(id));
    }
    if let Some(top) = enclosing_worktree(reg, &canon)? {
        return Err(Error::Usage(format!(
            "`{t}` is inside worktree `{}`; name its top directory or its id",
            top.display()
        )));
    }
    let dot_git = std::fs::symlink_metadata(canon.join(".git"));
    if dot_git.is_err() {
        return Err(Error::Usage(format!(
            "`{t}` is not a worktree's top directory (it has no `.git`) and names no record"
        )));
    }
    let main = dot_git.is_ok_and(|m| m.is_dir());
    Ok(Target::Unrecorded { path: canon, main })
}

/// [`resolve`] for a retire-like command (retire, `retire --when-free`,
/// the hosts' hooks): an unrecorded path is a held target report
/// (`not-recorded`, or `protected-path` for a main worktree).
pub(super) fn resolve_target(
    engine: &crate::ops::retire::Engine,
    t: &str,
) -> Result<std::result::Result<String, crate::model::report::TargetReport>> {
    Ok(match resolve(engine.registry(), t)? {
        Target::Id(id) => Ok(id),
        Target::Unrecorded { path, main } => Err(super::retire::unrecorded(t, &path, main)),
    })
}

/// Resolves `t` to a record id: an unrecorded path is a usage error naming
/// what to do (for commands that need a record: show, hold, release, ...).
pub(super) fn resolve_id(reg: &Registry, t: &str) -> Result<String> {
    match resolve(reg, t)? {
        Target::Id(id) => Ok(id),
        Target::Unrecorded { path, main: true } => Err(Error::Usage(format!(
            "`{}` is a repository's main worktree, which lease never records",
            path.display()
        ))),
        Target::Unrecorded { path, main: false } => Err(no_record_at(&path)),
    }
}

/// The usage error for a linked worktree's top directory `path` that no
/// record names, with the `lease adopt` that records it as its `next`.
fn no_record_at(path: &Path) -> Error {
    let adopt = format!(
        "lease adopt {}",
        super::hint::quote(&path.to_string_lossy())
    );
    Error::Usage(format!(
        "`{}` has no lease record (`{adopt}` records a linked worktree)",
        path.display(),
    ))
    .with_next(adopt)
}

/// The usage error for target `t` when there is no state root yet, so no
/// record at all: a linked worktree's top directory (its `.git` a file)
/// gets [`no_record_at`]'s `lease adopt`; anything else "no record matches".
pub(super) fn nothing_recorded(t: &str) -> Error {
    if !looks_like_id(t)
        && let Ok(canon) = std::fs::canonicalize(t)
        && canon.join(".git").is_file()
    {
        return no_record_at(&canon);
    }
    Error::Usage(format!("no record matches `{t}`"))
}

/// Resolves `t` for a command whose library call resolves ids itself
/// (restore, archive): an id or prefix is passed on as it is, a path is
/// resolved to its record's full id here (a removed worktree's path too).
pub(super) fn id_or_path(ctx: &crate::ops::Ctx, t: &str) -> Result<String> {
    if looks_like_id(t) {
        return Ok(t.to_string());
    }
    let Some(root) = ctx.existing_root()? else {
        return Err(Error::Usage(format!("no record matches `{t}`")));
    };
    resolve_id(&Registry::new(root), t)
}

/// The id of the record (not removed, unless `removed_too`) whose worktree
/// path is exactly `path`; with `removed_too`, a live record wins over a
/// removed one, and the newest removed one over older ones.
///
/// The live directory is read first ([`Registry::scan_live`]); removed
/// records (shelved ones too) only when `removed_too` and no live one
/// matched.
fn recorded_at(reg: &Registry, path: &Path, removed_too: bool) -> Result<Option<String>> {
    if let Some(id) = recorded_in(reg.scan_live()?, path, false) {
        return Ok(Some(id));
    }
    if !removed_too {
        return Ok(None);
    }
    Ok(recorded_in(reg.scan()?, path, true))
}

/// [`recorded_at`] over the records of `loaded`.
fn recorded_in(loaded: Vec<Loaded>, path: &Path, removed_too: bool) -> Option<String> {
    let mut removed: Option<(String, String)> = None;
    for l in loaded {
        let Loaded::Ok(r) = l else { continue };
        let Some(w) = &r.worktree else { continue };
        if w.path() != path {
            continue;
        }
        if r.state != State::Removed {
            return Some(r.id.clone());
        }
        if removed_too
            && removed
                .as_ref()
                .is_none_or(|(_, at)| r.created_at.as_str() > at.as_str())
        {
            removed = Some((r.id.clone(), r.created_at.clone()));
        }
    }
    removed.map(|(id, _)| id)
}

/// The top directory of the recorded (not removed) worktree that strictly
/// contains `path`, if any.
fn enclosing_worktree(reg: &Registry, path: &Path) -> Result<Option<PathBuf>> {
    for l in reg.scan_live()? {
        let Loaded::Ok(r) = l else { continue };
        if r.state == State::Removed {
            continue;
        }
        if let Some(w) = &r.worktree {
            let wp = w.path();
            if path != wp && path.starts_with(&wp) {
                return Ok(Some(wp));
            }
        }
    }
    Ok(None)
}

/// The absolute path `t` names from `cwd` (a physical directory, as
/// getcwd(3) returns it), or `None` if `t` is not normal: leading `./` and
/// `../` are resolved against `cwd` (no symlink can hide there), but a `.`
/// or `..` after a name, or an empty component (`//`), is refused, since a
/// symlinked name before `..` would make the lexical and physical paths
/// differ.
pub(super) fn lexical_absolute(cwd: &Path, t: &str) -> Option<PathBuf> {
    let t = t.strip_suffix('/').unwrap_or(t);
    let (mut out, body) = match t.strip_prefix('/') {
        Some(b) => (PathBuf::from("/"), b),
        None => (cwd.to_path_buf(), t),
    };
    let mut parts = body.split('/').peekable();
    while let Some(&c) = parts.peek() {
        match c {
            "." if !t.starts_with('/') => {}
            ".." if !t.starts_with('/') => {
                out.pop();
            }
            _ => break,
        }
        parts.next();
    }
    let mut named = false;
    for c in parts {
        if c.is_empty() || c == "." || c == ".." {
            return None;
        }
        out.push(c);
        named = true;
    }
    named.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_paths() {
        let cwd = std::path::Path::new("/w/cwd");
        for (ok, abs) in [
            ("wt", "/w/cwd/wt"),
            ("/a/b", "/a/b"),
            ("/a/b/", "/a/b"),
            ("rel/wt", "/w/cwd/rel/wt"),
            ("./a", "/w/cwd/a"),
            ("../wt", "/w/wt"),
            ("../../x/y", "/x/y"),
            ("./../wt/", "/w/wt"),
        ] {
            assert_eq!(
                lexical_absolute(cwd, ok).as_deref(),
                Some(std::path::Path::new(abs)),
                "{ok}"
            );
        }
        for bad in [
            "", ".", "..", "/", "/a/../b", "a/.", "a/../b", "/a//b", "a/b/..", "/../a", "./",
        ] {
            assert_eq!(lexical_absolute(cwd, bad), None, "{bad}");
        }
    }

    #[test]
    fn ids_are_8_to_32_hex() {
        assert!(looks_like_id("abcdef01"));
        assert!(looks_like_id(&"a".repeat(32)));
        assert!(!looks_like_id("abcdef0"));
        assert!(!looks_like_id(&"a".repeat(33)));
        assert!(!looks_like_id("abcdefgh"));
    }
}
