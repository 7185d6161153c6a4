//! What no record claims: orphan directories in the worktree roots and
//! orphan registrations in known repositories (reported, persisted with
//! their first-seen time in `orphans.json`, never deleted).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::Serialize;

use super::ReapReport;
use crate::git::{self, Git};
use crate::model::fmt::lossless;
use crate::model::record::State;
use crate::store::orphans::{SeenOrphan, load_orphans, save_orphans};
use crate::store::registry::{Loaded, Registry};
use crate::store::root::StateRoot;

/// What an orphan is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OrphanKind {
    /// A directory.
    Directory,
    /// A regular file.
    File,
    /// A symbolic link (never followed).
    Symlink,
    /// A FIFO, socket or device.
    Other,
    /// Nothing: a registration whose directory is gone.
    Missing,
}

/// A directory in a worktree root, or a registration in a known repository,
/// that no record claims. Reported, persisted with its first-seen time, and
/// never deleted.
#[derive(Debug, Clone, Serialize)]
pub struct Orphan {
    /// The path (lossless: UTF-8 as is, else escaped plus base64).
    pub path: String,
    /// What is there now.
    pub kind: OrphanKind,
    /// True if it lies in a worktree root of lease.
    pub in_root: bool,
    /// True if `git worktree list` of `repo` names it.
    pub registered: bool,
    /// The repository that registers it.
    pub repo: Option<String>,
    /// When a reap first saw it (`None`: a dry run sees it for the first time).
    pub first_seen: Option<String>,
    /// True once it was first seen longer ago than config `orphan_grace`:
    /// worth a look (it is still never deleted).
    pub past_grace: bool,
    /// What to do next, in prose (the CLI puts the command to run in
    /// `next` and shows this as the hint).
    pub next: String,
    /// Why it must not be adopted, when it must not (the command to run
    /// next then differs); not serialized.
    #[serde(skip)]
    pub unadoptable: Option<Unadoptable>,
}

/// Why lease never suggests adopting a registration no record claims
/// (SPEC "A lease every tool can see").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unadoptable {
    /// git's lock on it names record `id` of the state root at `root`.
    LeasedElsewhere {
        /// The record id the lock names.
        id: String,
        /// That record's state root.
        root: String,
    },
    /// A record file of this state root that cannot be read may name it.
    BadRecord {
        /// The record file.
        file: String,
    },
}

/// Scans the worktree roots and the registrations of every repository a
/// record names for what no record claims, and persists first-seen times.
pub(super) fn scan_orphans(
    reg: &Registry,
    git: &Git,
    apply: bool,
    root: &StateRoot,
    report: &mut ReapReport,
) {
    let loaded = match reg.scan() {
        Ok(l) => l,
        Err(e) => {
            report.complete = false;
            report.problems.push(e.to_string());
            return;
        }
    };
    let mut claimed: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut bad_ids: BTreeSet<String> = BTreeSet::new();
    let mut repos: BTreeSet<String> = BTreeSet::new();
    for l in &loaded {
        match l {
            Loaded::Ok(r) => {
                repos.insert(r.repo.clone());
                if r.state != State::Removed
                    && let Some(p) = r.expected_worktree()
                {
                    claimed.insert(p.as_os_str().as_bytes().to_vec());
                }
            }
            Loaded::Bad { id, .. } => {
                bad_ids.insert(id.clone());
            }
        }
    }
    let mut found: BTreeMap<Vec<u8>, Orphan> = BTreeMap::new();
    scan_roots(root, &claimed, &bad_ids, &mut found, report);
    for repo in &repos {
        scan_registrations(git, repo, &claimed, &loaded, &mut found, report);
    }
    let known = match load_orphans(root) {
        Ok(k) => Some(k),
        Err(e) => {
            report.errors.push(e);
            None
        }
    };
    let now = crate::model::fmt::now();
    let clock = std::time::SystemTime::now();
    let mut seen = BTreeMap::new();
    for o in found.values_mut() {
        o.first_seen = match known.as_ref().and_then(|k| k.get(&o.path)) {
            Some(t) => Some(t.first_seen.clone()),
            None if apply => Some(now.clone()),
            None => None,
        };
        o.past_grace = o
            .first_seen
            .as_deref()
            .is_some_and(|t| past_grace(t, root.policy().orphan_grace.value, clock));
        if let Some(t) = &o.first_seen {
            seen.insert(
                o.path.clone(),
                SeenOrphan {
                    first_seen: t.clone(),
                },
            );
        }
    }
    if apply
        && let Some(known) = known
        && known != seen
        && let Err(e) = save_orphans(root, &seen)
    {
        report.errors.push(e.to_string());
    }
    report.orphans = found.into_values().collect();
}

/// True if `first_seen` (RFC 3339) lies more than `grace_secs` before `now`;
/// an unreadable time is not past grace (nothing is inferred from it).
fn past_grace(first_seen: &str, grace_secs: u64, now: std::time::SystemTime) -> bool {
    humantime::parse_rfc3339(first_seen)
        .ok()
        .and_then(|t| now.duration_since(t).ok())
        .is_some_and(|age| age.as_secs() > grace_secs)
}

fn scan_roots(
    root: &StateRoot,
    claimed: &BTreeSet<Vec<u8>>,
    bad_ids: &BTreeSet<String>,
    found: &mut BTreeMap<Vec<u8>, Orphan>,
    report: &mut ReapReport,
) {
    let top = root.worktrees();
    let mut problem = |p: &Path, e: std::io::Error| {
        report.complete = false;
        report
            .problems
            .push(format!("cannot read `{}`: {e}", p.display()));
    };
    let repos = match fs::read_dir(&top) {
        Ok(rd) => rd,
        Err(e) if e.kind() == ErrorKind::NotFound => return,
        Err(e) => return problem(&top, e),
    };
    for e1 in repos {
        let e1 = match e1 {
            Ok(e) => e,
            Err(e) => {
                problem(&top, e);
                continue;
            }
        };
        let p1 = e1.path();
        match found_kind(&p1) {
            Ok(OrphanKind::Directory) => {}
            Ok(kind) => {
                add_orphan(found, &p1, kind, true, None);
                continue;
            }
            Err(e) => {
                problem(&p1, e);
                continue;
            }
        }
        let entries = match fs::read_dir(&p1) {
            Ok(rd) => rd,
            Err(e) => {
                problem(&p1, e);
                continue;
            }
        };
        for e2 in entries {
            let e2 = match e2 {
                Ok(e) => e,
                Err(e) => {
                    problem(&p1, e);
                    continue;
                }
            };
            let p2 = e2.path();
            let name = e2.file_name();
            if claimed.contains(p2.as_os_str().as_bytes())
                || name.to_str().is_some_and(|n| bad_ids.contains(n))
            {
                continue;
            }
            match found_kind(&p2) {
                Ok(kind) => add_orphan(found, &p2, kind, true, None),
                Err(e) => problem(&p2, e),
            }
        }
    }
}

fn scan_registrations(
    git: &Git,
    repo: &str,
    claimed: &BTreeSet<Vec<u8>>,
    loaded: &[Loaded],
    found: &mut BTreeMap<Vec<u8>, Orphan>,
    report: &mut ReapReport,
) {
    let path = Path::new(repo);
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            report.notes.push(format!(
                "repository `{repo}` named by a record is gone; it has no registrations to scan"
            ));
            return;
        }
        Err(e) => {
            report.complete = false;
            report
                .problems
                .push(format!("cannot read repository `{repo}`: {e}"));
            return;
        }
        Ok(_) => {}
    }
    let list = git
        .repo(path)
        .and_then(|rg| crate::git::ops::worktree_list(&rg, path));
    let list = match list {
        Ok(l) => l,
        Err(e) => {
            report.complete = false;
            report
                .problems
                .push(format!("cannot list the worktrees of `{repo}`: {e}"));
            return;
        }
    };
    for e in git::parse::parse_worktrees(&list).iter().skip(1) {
        if e.bare || claimed.contains(&e.path) {
            continue;
        }
        let p = e.path();
        match found_kind(&p) {
            Ok(kind) => {
                add_orphan(found, &p, kind, false, Some(repo));
                if let (Some((next, why)), Some(o)) = (
                    not_adoptable(e.locked.as_deref(), loaded, &p),
                    found.get_mut(&e.path),
                ) {
                    o.next = next;
                    o.unadoptable = Some(why);
                }
            }
            Err(err) => {
                report.complete = false;
                report
                    .problems
                    .push(format!("cannot read `{}`: {err}", p.display()));
            }
        }
    }
}

fn found_kind(path: &Path) -> std::io::Result<OrphanKind> {
    match fs::symlink_metadata(path) {
        Ok(m) => {
            let t = m.file_type();
            Ok(if t.is_dir() {
                OrphanKind::Directory
            } else if t.is_symlink() {
                OrphanKind::Symlink
            } else if t.is_file() {
                OrphanKind::File
            } else {
                OrphanKind::Other
            })
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(OrphanKind::Missing),
        Err(e) => Err(e),
    }
}

/// Records an orphan found in a root (`repo` is `None`) or as a registration.
fn add_orphan(
    found: &mut BTreeMap<Vec<u8>, Orphan>,
    path: &Path,
    kind: OrphanKind,
    in_root: bool,
    repo: Option<&str>,
) {
    let bytes = path.as_os_str().as_bytes().to_vec();
    let o = found.entry(bytes.clone()).or_insert_with(|| Orphan {
        path: lossless(&bytes),
        kind,
        in_root: false,
        registered: false,
        repo: None,
        first_seen: None,
        past_grace: false,
        next: String::new(),
        unadoptable: None,
    });
    o.in_root |= in_root;
    if let Some(r) = repo {
        o.registered = true;
        o.repo = Some(r.to_string());
    }
    let shown = path.display();
    o.next = match (o.registered, o.kind) {
        (true, OrphanKind::Missing) => format!(
            "the directory is gone: `lease repair {shown}` removes this one registration (never a repository-wide prune)"
        ),
        (true, _) => format!(
            "`lease adopt {shown}` records it, then `lease retire {shown}` takes it through the gates; reap never deletes an orphan"
        ),
        (false, _) => {
            "not a registered worktree: inspect it and remove it yourself if it is yours; reap never deletes an orphan".to_string()
        }
    };
}

/// What to do about a registration no record claims that lease must never
/// suggest adopting (SPEC "A lease every tool can see"): one whose git lock
/// names a lease record (of any state root), or one a corrupt, unreadable
/// or newer-schema record of this state root may name. `None` for any other;
/// else the advice in prose and why.
fn not_adoptable(
    locked: Option<&str>,
    loaded: &[Loaded],
    path: &Path,
) -> Option<(String, Unadoptable)> {
    if let Some((id, root)) = locked.and_then(git::admin::parse_lock_reason) {
        return Some((
            format!(
                "git's lock names lease record {id} of state root `{root}`: see it there (`LEASE_HOME={} lease show {id}`); never adopt it here",
                crate::plan::shell_quote(&root)
            ),
            Unadoptable::LeasedElsewhere { id, root },
        ));
    }
    crate::store::registry::bad_record_naming(loaded, path).map(|(file, problem)| {
        (
            format!(
                "record `{}` is {problem} and may name it: repair or move that record file; lease never adopts a worktree such a record may name",
                file.display()
            ),
            Unadoptable::BadRecord {
                file: lossless(file.as_os_str().as_bytes()),
            },
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn grace_is_measured_from_first_seen() {
        let seen = "2026-01-01T00:00:00Z";
        let at = humantime::parse_rfc3339(seen).unwrap();
        let later = |s| at + std::time::Duration::from_secs(s);
        assert!(past_grace(seen, 3600, later(3601)));
        assert!(
            !past_grace(seen, 3600, later(3600)),
            "exactly the grace is not past it"
        );
        assert!(!past_grace(seen, 3600, later(10)));
        assert!(
            !past_grace(seen, 0, at - std::time::Duration::from_secs(5)),
            "a time ahead of now"
        );
        assert!(
            !past_grace("not a time", 0, later(1)),
            "unreadable is not past grace"
        );
    }

    #[test]
    fn orphan_hints_follow_what_is_there() {
        let mut found = BTreeMap::new();
        add_orphan(
            &mut found,
            Path::new("/r/wt"),
            OrphanKind::Missing,
            false,
            Some("/r/.git"),
        );
        add_orphan(
            &mut found,
            Path::new("/s/x"),
            OrphanKind::Directory,
            true,
            None,
        );
        add_orphan(
            &mut found,
            Path::new("/s/x"),
            OrphanKind::Directory,
            false,
            Some("/r/.git"),
        );
        let gone = &found[&b"/r/wt".to_vec()];
        assert!(gone.next.contains("lease repair /r/wt"), "{}", gone.next);
        let both = &found[&b"/s/x".to_vec()];
        assert!(both.in_root && both.registered);
        assert!(both.next.contains("lease adopt /s/x"), "{}", both.next);
    }

    #[test]
    fn found_kind_never_takes_an_error_for_absence() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("file");
        fs::write(&file, b"x").unwrap();
        std::os::unix::fs::symlink(t.path(), t.path().join("link")).unwrap();
        assert_eq!(found_kind(t.path()).unwrap(), OrphanKind::Directory);
        assert_eq!(found_kind(&file).unwrap(), OrphanKind::File);
        assert_eq!(
            found_kind(&t.path().join("link")).unwrap(),
            OrphanKind::Symlink
        );
        assert_eq!(
            found_kind(Path::new("/dev/null")).unwrap(),
            OrphanKind::Other
        );
        assert_eq!(
            found_kind(&t.path().join("none")).unwrap(),
            OrphanKind::Missing
        );
        assert!(
            found_kind(&file.join("below")).is_err(),
            "ENOTDIR is not absence"
        );
    }
}
