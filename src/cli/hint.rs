//! The `next` of a hold or an error: a command a person can paste, with
//! the real id and path filled in and right for the case at hand.
//!
//! docs/reason-codes.md says, per code, what to do next in prose (which the
//! library's [`HoldReason::next_action`] summarises); this module turns it
//! into the command for this target: `lease release 1a2b3c4d && lease retire
//! 1a2b3c4d`, not `lease release ID`. A library report that already carries
//! a `next` of its own (anything but the generic summary) keeps it.

use std::path::Path;

use crate::error::Error;
use crate::model::reason::HoldReason;
use crate::model::record::State;
use crate::model::report::TargetReport;
use crate::ops::reap::{Orphan, ReapItem, ReapReport};
use crate::ops::repair::RepairReport;

/// What a hint may name: the record (its full id), its worktree's path, its
/// repository (the common git dir), the state root.
#[derive(Debug, Default, Clone)]
pub(super) struct Subject<'a> {
    /// The record id (full or a prefix; shortened for display).
    pub(super) id: Option<&'a str>,
    /// The worktree's top directory.
    pub(super) path: Option<&'a str>,
    /// What was found (the hold's detail): pids are read from it.
    pub(super) detail: &'a [String],
}

/// Quotes `s` for a POSIX shell when it holds anything but `[A-Za-z0-9/._-]`.
pub(super) fn quote(s: &str) -> String {
    crate::plan::shell_quote(s)
}

/// The 8-hex display form of an id (SPEC: commands accept a unique prefix
/// of 8 or more); [`super::short_id`] widens it where 8 is ambiguous.
fn id_arg(id: &str) -> String {
    super::short_id(id).to_string()
}

/// The pids named in `detail` as `pid N` or `pid N, M, ...` (the lease's
/// holders), in order, without repeats.
fn pids(detail: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in detail {
        let mut rest = d.as_str();
        while let Some(i) = rest.find("pid ") {
            rest = &rest[i + 4..];
            loop {
                let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if n.is_empty() {
                    break;
                }
                rest = &rest[n.len()..];
                if !out.contains(&n) {
                    out.push(n);
                }
                match rest.strip_prefix(", ") {
                    Some(r) if r.starts_with(|c: char| c.is_ascii_digit()) => rest = r,
                    _ => break,
                }
            }
        }
    }
    out
}

/// The command that shows the processes named in `detail`, if it names any.
fn ps(detail: &[String]) -> Option<String> {
    let p = pids(detail);
    (!p.is_empty()).then(|| format!("ps -o pid,user,etime,args -p {}", p.join(",")))
}

/// Returns the command to run next for a target held with `reason`: always
/// a command line (no placeholder left), built from what `s` names; where
/// `s` lacks the id or path the reason needs, a command that finds it.
pub(super) fn next(reason: HoldReason, s: &Subject<'_>) -> String {
    use HoldReason::*;
    let id = s.id.map(id_arg);
    let path = s.path.map(quote);
    let show = id
        .as_ref()
        .map_or_else(|| "lease list".to_string(), |i| format!("lease show {i}"));
    let retire = id.as_ref().map_or_else(
        || format!("lease retire {}", path.as_deref().unwrap_or("--all")),
        |i| format!("lease retire {i}"),
    );
    let git_c = |args: &str| match &path {
        Some(p) => format!("git -C {p} {args}"),
        None => show.clone(),
    };
    let gone = s
        .path
        .is_some_and(|p| std::fs::symlink_metadata(p).is_err());
    match reason {
        // A directory deleted by hand: only its registration is left.
        _ if gone && path.is_some() && reason != NotRecorded => {
            format!("lease repair {}", path.as_deref().unwrap_or_default())
        }
        NotTerminal => show,
        LauncherAlive => match pids(s.detail).first() {
            Some(p) => format!("kill -TERM {p}"),
            None => show,
        },
        Retained => match &id {
            Some(i) => format!("lease release {i} && lease retire {i}"),
            None => show,
        },
        RetireInProgress => retire,
        // The holders by pid; else `lease show`, whose `holders` and
        // `locked` say what /proc shows of them.
        ConsumerAlive => ps(s.detail).unwrap_or(show),
        InUse => ps(s.detail).unwrap_or_else(|| {
            path.as_ref()
                .map_or_else(|| show.clone(), |p| format!("lsof +D {p}"))
        }),
        NotRecorded => match &path {
            Some(p) => format!("lease adopt {p} && lease retire {p}"),
            None => "lease list".into(),
        },
        NotRegistered => match &path {
            Some(p) => format!("lease repair --dry-run {p}"),
            None => show,
        },
        GitLocked => match &path {
            Some(p) => format!("git worktree unlock {p}"),
            None => show,
        },
        LeasedElsewhere => s
            .detail
            .iter()
            .find_map(|d| {
                let start = d.find("`LEASE_HOME=")? + 1;
                let len = d[start..].find('`')?;
                Some(d[start..start + len].to_string())
            })
            .unwrap_or(show),
        CwdInsideTarget => {
            let outside = s
                .path
                .and_then(|p| Path::new(p).parent())
                .map_or_else(|| "/".to_string(), |p| quote(&p.to_string_lossy()));
            format!("cd {outside} && {retire}")
        }
        Dirty | Untracked | Ignored => git_c("status --short --untracked-files=all --ignored"),
        FilterUnverifiable => git_c("status --short"),
        HiddenIndex => match &path {
            Some(p) => format!("git -C {p} ls-files -v | grep -E '^[a-zS]'"),
            None => show,
        },
        OpInProgress => git_c("status"),
        Submodule => git_c("submodule status --recursive"),
        NestedRepo | SpecialFile | MountInside | Uninventoriable | NotWritable | PathEscape => {
            format!(
                "lease retire --dry-run --json {}",
                id.as_deref().unwrap_or("--all")
            )
        }
        UniqueCommitsUnarchived | ArchiveUnverified | ArchiveInsideTree => {
            format!("lease config --show && {retire}")
        }
        LeaseIdentity | LeaseMissing | LeaseInsecure | PathIdentity | RootIdentity
        | ProtectedPath | RepoMissing | Unprovable => show,
        LeaseDirUnsafe => match &path {
            Some(p) => format!("chmod 0700 {p}"),
            None => "lease doctor".into(),
        },
        LockUnsupported => "lease doctor".into(),
        RepoConfigExecutes => git_c("config --local --list --show-origin"),
        UnsafeRepo => git_c("status"),
        GitFailed => git_c("status"),
        RootInsideWorktree | TempWorktreeRoot => "lease config --show".into(),
        // The teardown's stderr is in the detail; its line is in the config.
        TeardownFailed => format!("lease config --show && {retire}"),
        PathOccupied => match (&id, s.path) {
            (Some(i), Some(p)) => format!("lease restore {i} --to {}", quote(&format!("{p}-2"))),
            (Some(i), None) => format!("lease restore {i}"),
            _ => "lease archives".into(),
        },
        BranchMoved => match &id {
            Some(i) => format!("lease restore {i}"),
            None => "lease archives".into(),
        },
        AlreadyRestored => match &id {
            Some(i) => format!("lease restore {i} --again"),
            None => "lease archives".into(),
        },
        // Bring the commits back into a worktree, to push or merge them.
        ArchiveUnreachable => match &id {
            Some(i) => format!("lease restore {i}"),
            None => "lease archives".into(),
        },
        ArchivePushFailed => match &id {
            Some(i) => format!("lease retire --archive bundle {i}"),
            None => "lease archives".into(),
        },
        BranchUnproven | BranchCheckedOut => git_c("worktree list"),
    }
}

/// Returns the one-line advice for `reason` ([`HoldReason::next_action`])
/// with its `ID` and `PATH` placeholders replaced by the real id and path
/// (a placeholder stays only where the report has neither).
pub(super) fn prose(reason: HoldReason, id: Option<&str>, path: Option<&str>) -> String {
    let mut s = reason.next_action().to_string();
    if let Some(i) = id {
        s = s.replace(" ID`", &format!(" {}`", id_arg(i)));
    }
    if let Some(p) = path {
        s = s.replace(" PATH`", &format!(" {}`", quote(p)));
    }
    s
}

/// Fills `t.next` with [`next`] for its first reason, unless the library
/// set a `next` of its own (anything but the generic summary).
pub(super) fn fill_target(t: &mut TargetReport) {
    let Some(&reason) = t.reasons.first() else {
        return;
    };
    let generic = t.next.is_none() || t.next.as_deref() == Some(reason.next_action());
    if !generic {
        return;
    }
    t.next = Some(next(
        reason,
        &Subject {
            id: t.id.as_deref(),
            path: t.worktree.as_deref(),
            detail: &t.detail,
        },
    ));
}

/// Puts in every item and orphan of a reap report the command to run next
/// (as [`fill_target`] does for a retire target), with the real id or path;
/// `None` where nothing is left to do. Returns the advice in prose the
/// report carried, items' first then orphans', for the human report's
/// `hint:` lines.
pub(super) fn fill_reap(r: &mut ReapReport) -> (Vec<Option<String>>, Vec<String>) {
    let items = r
        .items
        .iter_mut()
        .map(|i| {
            if let Some(t) = i.retire.as_mut() {
                fill_target(t);
            }
            let command = reap_item(i);
            let said = std::mem::replace(&mut i.next, command);
            match (said, i.reasons.first()) {
                // The generic advice, with its placeholders filled.
                (Some(said), Some(&r)) if said == r.next_action() => {
                    Some(prose(r, Some(&i.id), i.worktree.as_deref()))
                }
                (said, _) => said,
            }
        })
        .collect();
    let orphans = r
        .orphans
        .iter_mut()
        .map(|o| {
            let command = orphan(o);
            std::mem::replace(&mut o.next, command)
        })
        .collect();
    (items, orphans)
}

/// The command to run next for one reap item.
fn reap_item(i: &ReapItem) -> Option<String> {
    use crate::ops::reap::ReapDisposition;
    if let Some(f) = &i.record_file {
        // Unreadable (corrupt, a FIFO, a newer schema): look at the file;
        // lease never changes it.
        return Some(format!("ls -l {}", quote(f)));
    }
    let id = id_arg(&i.id);
    match (i.reasons.first(), i.disposition) {
        // A hold waiting for the record to turn terminal: dropping it is
        // all there is to do now.
        (Some(HoldReason::Retained), _)
            if !matches!(
                i.state,
                Some(State::Terminal | State::Interrupted | State::Retained)
            ) =>
        {
            Some(format!("lease release {id}"))
        }
        (Some(&reason), _) => Some(next(
            reason,
            &Subject {
                id: Some(&i.id),
                path: i.worktree.as_deref(),
                detail: &i.detail,
            },
        )),
        // Adopted: reap never takes it; a retire of it does.
        (None, ReapDisposition::Reported) => Some(format!("lease retire {id}")),
        (None, _) => None,
    }
}

/// The command to run next for an orphan: reap reports it and never
/// deletes it.
fn orphan(o: &Orphan) -> String {
    use crate::ops::reap::{OrphanKind, Unadoptable};
    let p = quote(&o.path);
    match (&o.unadoptable, o.registered, o.kind) {
        // Another state root's record: look at it there (its full id: this
        // state root's id width says nothing about that one's).
        (Some(Unadoptable::LeasedElsewhere { id, root }), ..) => {
            format!("LEASE_HOME={} lease show {id}", quote(root))
        }
        (Some(Unadoptable::BadRecord { file }), ..) => format!("ls -l {}", quote(file)),
        (None, true, OrphanKind::Missing) => format!("lease repair {p}"),
        (None, true, _) => format!("lease adopt {p} && lease retire {p}"),
        (None, false, _) => format!("ls -la {p}"),
    }
}

/// Returns the command to run next for a held repair (`None` when it is
/// not held), with the real path, repository and id: never `lease repair`
/// of the same path alone, which would hold again.
pub(super) fn repair(r: &RepairReport) -> Option<String> {
    let reason = *r.reasons.first()?;
    let path = quote(&r.plan.path);
    let repo = quote(&r.plan.repo);
    let id = r.plan.record.as_deref();
    Some(match reason {
        // The worktree is still there: retire it (adopting it first if no
        // record names it).
        HoldReason::PathOccupied => match id {
            Some(i) => format!("lease retire {}", id_arg(i)),
            None => format!("lease adopt {path} && lease retire {path}"),
        },
        // Keep each commit on a branch of its own, then repair again.
        HoldReason::UniqueCommitsUnarchived if !r.plan.unique().is_empty() => {
            let keep: Vec<String> = r
                .plan
                .unique()
                .iter()
                .map(|c| format!("git -C {repo} branch rescued-{} {c}", &c[..12.min(c.len())]))
                .collect();
            format!("{} && lease repair {path}", keep.join(" && "))
        }
        HoldReason::GitLocked => {
            format!("git -C {repo} worktree unlock {path} && lease repair {path}")
        }
        // The rest as for a retire, with git run in the repository (the
        // worktree's directory is gone, which is why repair runs).
        reason => next(
            reason,
            &Subject {
                id,
                path: Some(&r.plan.repo),
                detail: &r.detail,
            },
        ),
    })
}

/// Returns the next step for an error that ends a command: the command the
/// error carries ([`Error::with_next`]), else the one for its reason code
/// with the record its target resolved to ([`Error::about`]) or the path it
/// names filled in; `None` when there is nothing better to say than the
/// message.
pub(super) fn for_error(e: &Error) -> Option<String> {
    let (id, named_path) = match e {
        Error::Context { next: Some(n), .. } => return Some(n.clone()),
        Error::Context { id, path, .. } => (
            id.as_deref(),
            path.as_ref().map(|p| p.to_string_lossy().into_owned()),
        ),
        _ => (None, None),
    };
    let reason = e.reason()?;
    let path = match e.inner() {
        Error::Io { path, .. } | Error::Record { path, .. } | Error::UnsafeDir { path, .. } => {
            Some(path.to_string_lossy().into_owned())
        }
        _ => None,
    };
    Some(next(
        reason,
        &Subject {
            id,
            path: path.as_deref().or(named_path.as_deref()),
            ..Default::default()
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reason code: its `next` is a command with the real id or path
    /// in it, no placeholder left, and docs/reason-codes.md has a section
    /// for the code that says what to do next.
    #[test]
    fn every_reason_has_a_runnable_next_with_the_real_target() {
        let docs = include_str!("../../docs/reason-codes.md");
        let id = "0123abcd".repeat(4);
        let dir = tempfile::Builder::new()
            .prefix("w t")
            .tempdir()
            .expect("a temp dir");
        let path = dir.path().to_str().expect("a UTF-8 temp dir").to_string();
        let quoted = quote(&path);
        let path = path.as_str();
        for reason in all_reasons() {
            let code = reason.code();
            assert!(
                docs.contains(&format!("## {code}\n")),
                "docs/reason-codes.md has no section for {code}"
            );
            let detail = vec!["pid 4242 (cwd)".to_string()];
            let n = next(
                reason,
                &Subject {
                    id: Some(&id),
                    path: Some(path),
                    detail: &detail,
                },
            );
            for placeholder in ["ID", "PATH", "<id", "<path"] {
                assert!(!n.contains(placeholder), "{code}: placeholder in `{n}`");
            }
            assert!(
                n.contains("0123abcd")
                    || n.contains(&quoted)
                    || n.contains("4242")
                    || n.starts_with("lease config")
                    || n == "lease doctor"
                    || n.starts_with("lease archives"),
                "{code}: `{n}` names neither the id, the path nor the pid"
            );
        }
    }

    #[test]
    fn situations_pick_the_right_command() {
        let s = |p: &'static str| Subject {
            id: Some("0123abcd0123abcd0123abcd0123abcd"),
            path: Some(p),
            detail: &[],
        };
        // A deleted directory: repair, whatever gate noticed.
        let gone = "/nonexistent/lease-hint-test/wt";
        assert_eq!(
            next(HoldReason::PathIdentity, &s(gone)),
            format!("lease repair {gone}")
        );
        // Retained: release first, then retire, with the real id.
        assert_eq!(
            next(HoldReason::Retained, &s("/")),
            "lease release 0123abcd && lease retire 0123abcd"
        );
        // In use: a command that shows the processes named in the detail.
        let d = vec!["pid 17 (cwd), pid 18 (fd 3)".to_string()];
        let n = next(
            HoldReason::InUse,
            &Subject {
                detail: &d,
                ..s("/")
            },
        );
        assert_eq!(n, "ps -o pid,user,etime,args -p 17,18");
        // Consumers of the lease, as gate 3 names them: their processes.
        let d = vec!["a consumer holds the lease (shared flock): pid 17, 18, 19".to_string()];
        let n = next(
            HoldReason::ConsumerAlive,
            &Subject {
                detail: &d,
                ..s("/")
            },
        );
        assert_eq!(n, "ps -o pid,user,etime,args -p 17,18,19");
        // None visible (another pid namespace): what `lease show` knows.
        assert_eq!(
            next(HoldReason::ConsumerAlive, &s("/")),
            "lease show 0123abcd"
        );
        // From inside: the exact command to run from the parent.
        assert_eq!(
            next(HoldReason::CwdInsideTarget, &s("/tmp")),
            "cd / && lease retire 0123abcd"
        );
    }

    fn all_reasons() -> Vec<HoldReason> {
        // Every variant, by its kebab-case code as serde reads it: a new
        // variant without a docs section fails the test above once listed
        // in docs; this list is checked against the enum by `match` below.
        let v = vec![
            HoldReason::NotTerminal,
            HoldReason::LauncherAlive,
            HoldReason::Retained,
            HoldReason::RetireInProgress,
            HoldReason::ConsumerAlive,
            HoldReason::InUse,
            HoldReason::NotRecorded,
            HoldReason::NotRegistered,
            HoldReason::GitLocked,
            HoldReason::LeasedElsewhere,
            HoldReason::CwdInsideTarget,
            HoldReason::PathIdentity,
            HoldReason::RootIdentity,
            HoldReason::PathEscape,
            HoldReason::ProtectedPath,
            HoldReason::MountInside,
            HoldReason::SpecialFile,
            HoldReason::Uninventoriable,
            HoldReason::NestedRepo,
            HoldReason::Dirty,
            HoldReason::Untracked,
            HoldReason::Ignored,
            HoldReason::HiddenIndex,
            HoldReason::OpInProgress,
            HoldReason::Submodule,
            HoldReason::UniqueCommitsUnarchived,
            HoldReason::ArchiveUnverified,
            HoldReason::ArchiveInsideTree,
            HoldReason::LeaseIdentity,
            HoldReason::LeaseMissing,
            HoldReason::LeaseInsecure,
            HoldReason::LeaseDirUnsafe,
            HoldReason::LockUnsupported,
            HoldReason::RepoConfigExecutes,
            HoldReason::UnsafeRepo,
            HoldReason::RepoMissing,
            HoldReason::GitFailed,
            HoldReason::Unprovable,
            HoldReason::NotWritable,
            HoldReason::RootInsideWorktree,
            HoldReason::PathOccupied,
            HoldReason::BranchMoved,
            HoldReason::AlreadyRestored,
            HoldReason::ArchiveUnreachable,
            HoldReason::ArchivePushFailed,
            HoldReason::BranchUnproven,
            HoldReason::BranchCheckedOut,
            HoldReason::TempWorktreeRoot,
            HoldReason::FilterUnverifiable,
            HoldReason::TeardownFailed,
        ];
        for r in &v {
            // Exhaustive: a new variant must be added to the list above.
            match r {
                HoldReason::NotTerminal
                | HoldReason::LauncherAlive
                | HoldReason::Retained
                | HoldReason::RetireInProgress
                | HoldReason::ConsumerAlive
                | HoldReason::InUse
                | HoldReason::NotRecorded
                | HoldReason::NotRegistered
                | HoldReason::GitLocked
                | HoldReason::LeasedElsewhere
                | HoldReason::CwdInsideTarget
                | HoldReason::PathIdentity
                | HoldReason::RootIdentity
                | HoldReason::PathEscape
                | HoldReason::ProtectedPath
                | HoldReason::MountInside
                | HoldReason::SpecialFile
                | HoldReason::Uninventoriable
                | HoldReason::NestedRepo
                | HoldReason::Dirty
                | HoldReason::Untracked
                | HoldReason::Ignored
                | HoldReason::HiddenIndex
                | HoldReason::OpInProgress
                | HoldReason::Submodule
                | HoldReason::UniqueCommitsUnarchived
                | HoldReason::ArchiveUnverified
                | HoldReason::ArchiveInsideTree
                | HoldReason::LeaseIdentity
                | HoldReason::LeaseMissing
                | HoldReason::LeaseInsecure
                | HoldReason::LeaseDirUnsafe
                | HoldReason::LockUnsupported
                | HoldReason::RepoConfigExecutes
                | HoldReason::UnsafeRepo
                | HoldReason::RepoMissing
                | HoldReason::GitFailed
                | HoldReason::Unprovable
                | HoldReason::NotWritable
                | HoldReason::RootInsideWorktree
                | HoldReason::PathOccupied
                | HoldReason::BranchMoved
                | HoldReason::AlreadyRestored
                | HoldReason::ArchiveUnreachable
                | HoldReason::ArchivePushFailed
                | HoldReason::BranchUnproven
                | HoldReason::BranchCheckedOut
                | HoldReason::TempWorktreeRoot
                | HoldReason::FilterUnverifiable
                | HoldReason::TeardownFailed => {}
            }
        }
        v
    }
}
