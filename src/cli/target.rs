//! Naming a target: a record id, a unique prefix, or a worktree path.

use crate::error::{Error, Result};
use crate::plan::Disposition;
use crate::report::TargetReport;
use crate::retire::Engine;
use std::path::PathBuf;

/// Maps a target name to a record id; an unrecorded worktree is a held target.
pub(super) fn resolve_target(engine: &Engine, t: &str) -> Result<Result<String, TargetReport>> {
    let looks_like_id = t.len() >= 8
        && t.bytes().all(|b| b.is_ascii_hexdigit())
        && !std::path::Path::new(t).exists();
    if looks_like_id {
        return engine.registry().resolve(t).map(Ok);
    }
    crate::paths::refuse_newline("worktree", std::path::Path::new(t))?;
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Usage(format!("cannot read the current directory: {e}")))?;
    let Some(absolute) = lexical_absolute(&cwd, t) else {
        return Err(Error::Usage(format!(
            "`{t}` is not a normal path (`.` or `..` after a name, or `//`); name the worktree's top directory"
        )));
    };
    let path = PathBuf::from(t);
    if path.exists() && std::fs::canonicalize(&path).ok().as_deref() != Some(absolute.as_path()) {
        return Err(Error::Usage(format!(
            "`{t}` is reached through a symlink; name the worktree's physical top directory"
        )));
    }
    if !path.exists() {
        return Err(Error::Usage(format!(
            "`{t}` is neither a record id nor an existing path"
        )));
    }
    match engine.find_by_path(&path)? {
        Some(id) => Ok(Ok(id)),
        None => {
            let hold = crate::plan::Hold::new(
                crate::plan::HoldReason::NotRecorded,
                format!("`{t}` has no lease record"),
            );
            Ok(Err(TargetReport::new(
                None,
                Some(t.to_string()),
                Disposition::Held,
            )
            .held(&[hold])))
        }
    }
}

/// Returns true if `t` has no `.`, `..` or empty component (a single
/// trailing `/` is allowed): paths are resolved physically, never by lexical
/// normalization followed by acting on the result.
/// The absolute path `t` names from `cwd` (a physical directory, as
/// getcwd(3) returns it), or `None` if `t` is not normal: leading `./` and
/// `../` are resolved against `cwd` (no symlink can hide there), but a `.`
/// or `..` after a name, or an empty component (`//`), is refused, since a
/// symlinked name before `..` would make the lexical and physical paths
/// differ.
pub(super) fn lexical_absolute(cwd: &std::path::Path, t: &str) -> Option<PathBuf> {
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
}
