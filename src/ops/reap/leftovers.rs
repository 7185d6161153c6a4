//! What killed commands leave under the state root and no record names
//! (SPEC "Bad input and faults"): lease files, temporary and superseded
//! bundles, scratch repositories, temporary record files.
//! Each is reported with its bytes; with `--apply` one is removed only if it
//! is provably lease's own and nobody's now.
//!
//! # When a leftover is removed (every condition, checked in this order)
//! 1. It lies directly where lease's layout puts it (`leases/`,
//!    `archives/<id>/`, `scratch/`, `records/`, the state root) and its name
//!    is one lease makes there ([`Name::parse`]); anything else is never
//!    touched, not even reported.
//! 2. It is what lease makes there (`lstat`, never followed): a regular
//!    file of ours, or, for a scratch repository, a private directory.
//! 3. No record claims it ([`claimed`]), read afresh right before the
//!    judgement (a record is always written before its lease file or
//!    bundle, so a concurrent `lease exec` is seen): a lease file of a
//!    record that is not `removed`, a bundle a record names, anything of a
//!    corrupt or unreadable record.
//! 4. No process holds it: a lease file is locked `LOCK_EX|LOCK_NB` on a
//!    fresh open and no process has it open (`/proc`); a temporary or
//!    superseded bundle of a live record is removed under that record's
//!    lease, taken exclusively (a retire in progress holds it); a temporary
//!    file or a scratch repository carries its creator's pid, which must be
//!    gone.
//!
//! Record locks (`records/<id>.lock`) are never removed: a `lease` about to
//! create that record may have opened the lock file and not yet locked it,
//! and a second inode under that name would let two writers in.
//! 5. A complete bundle is removed only when every commit it holds is
//!    reachable from a ref of its record's repository ([`Bundle::redundant`]):
//!    it may be the only copy of work otherwise, and is then kept and said so.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::ReapReport;
use crate::git::Git;
use crate::model::fmt::lossless;
use crate::model::record::{Record, State};
use crate::store::registry::{Loaded, Registry};
use crate::store::root::StateRoot;

/// What a leftover is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeftoverKind {
    /// `leases/<id>.lease` of no record, or of a removed one.
    LeaseFile,
    /// `archives/<id>/.<n>.bundle.tmp`: a bundle being built when its
    /// retire died; never verified, never an archive.
    BundleTemp,
    /// `archives/<id>/<n>.bundle` that the record does not name (a retire
    /// died between writing it and recording it, or a later archive
    /// replaced it).
    Bundle,
    /// `archives/<id>/`, empty, of no record.
    ArchiveDir,
    /// `scratch/<id>-<what>-<pid>`: a scratch repository of a gone process.
    Scratch,
    /// `.<name>.tmp-<pid>` in `records/` or the state root: an atomic write
    /// that never reached its rename.
    TempFile,
}

/// One leftover found under the state root.
#[derive(Debug, Clone, Serialize)]
pub struct Leftover {
    /// Its path (lossless: UTF-8 as is, else escaped plus base64).
    pub path: String,
    /// What it is.
    pub kind: LeftoverKind,
    /// Bytes it takes: `st_size`, summed over a directory's files.
    pub bytes: u64,
    /// The record id its name carries, if any.
    pub record: Option<String>,
    /// True once `--apply` removed it.
    pub removed: bool,
    /// Why it is kept (or, in a dry run, would be), if it is.
    pub kept: Option<String>,
}

/// A name lease makes in one of its directories.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Name {
    /// `<id>.lease`
    Lease(String),
    /// `<n>.bundle` in `archives/<id>/`
    Bundle(u64),
    /// `.<n>.bundle.tmp` in `archives/<id>/`
    BundleTemp(u64),
    /// `<id>-<what>-<pid>` in `scratch/`
    Scratch(String, u32),
    /// `.<name>.tmp-<pid>` of `<id>.json` in `records/` (with its id), or
    /// of `orphans.json` in the state root
    Temp(Option<String>, u32),
}

impl Name {
    /// Parses `name` as found in the directory of `kind`; `None` for a name
    /// lease does not make there (never touched).
    fn parse(dir: Dir, name: &str) -> Option<Name> {
        match dir {
            Dir::Leases => name
                .strip_suffix(".lease")
                .filter(|id| crate::model::record::is_id(id))
                .map(|id| Name::Lease(id.to_string())),
            Dir::Archive => {
                if let Some(n) = name.strip_suffix(".bundle") {
                    return number(n).map(Name::Bundle);
                }
                let n = name.strip_prefix('.')?.strip_suffix(".bundle.tmp")?;
                number(n).map(Name::BundleTemp)
            }
            Dir::Scratch => {
                let (rest, pid) = name.rsplit_once('-')?;
                let (id, what) = rest.split_once('-')?;
                (crate::model::record::is_id(id) && ["build", "verify"].contains(&what))
                    .then(|| Some(Name::Scratch(id.to_string(), pid.parse().ok()?)))
                    .flatten()
            }
            Dir::Records | Dir::Root => {
                let rest = name.strip_prefix('.')?;
                let (file, pid) = rest.rsplit_once(".tmp-")?;
                let pid: u32 = pid.parse().ok()?;
                match dir {
                    Dir::Records => file
                        .strip_suffix(".json")
                        .filter(|id| crate::model::record::is_id(id))
                        .map(|id| Name::Temp(Some(id.to_string()), pid)),
                    _ => (file == "orphans.json").then_some(Name::Temp(None, pid)),
                }
            }
        }
    }
}

/// A decimal number lease writes (no sign, no leading zeros but `0`).
fn number(s: &str) -> Option<u64> {
    let plain = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && !s.starts_with('0');
    plain.then(|| s.parse().ok()).flatten()
}

/// The directories lease's layout puts leftovers in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Leases,
    Archive,
    Scratch,
    Records,
    Root,
}

/// What the registry says about one id.
#[derive(Debug, Clone, Copy)]
enum Known<'a> {
    /// No record file.
    Missing,
    /// A record file lease cannot read: anything of it is claimed.
    Bad,
    /// A record.
    Ok(&'a Record),
}

/// Returns true if the record `known` claims the leftover `name` (of
/// `path`): then it is never removed. A lease file is claimed by a record
/// that is not `removed`; a bundle by the record that names it as its
/// archive; everything by a record lease cannot read.
fn claimed(known: Known<'_>, name: &Name, path: &Path) -> bool {
    match known {
        Known::Bad => true,
        Known::Missing => false,
        Known::Ok(r) => match name {
            Name::Lease(_) => r.state != State::Removed,
            Name::Bundle(_) => r
                .archive
                .as_ref()
                .is_some_and(|a| Path::new(&a.location) == path),
            Name::BundleTemp(_) | Name::Scratch(..) | Name::Temp(..) => false,
        },
    }
}

/// Returns true if process `pid` exists (any process with that number: a
/// reused pid keeps the leftover, never the other way round).
fn pid_exists(pid: u32) -> bool {
    crate::os::process::start_time(pid).is_some()
}

/// Bytes under `path`: its `st_size`, or for a directory the sum over the
/// files below it (never following a symlink).
pub(super) fn bytes_of(path: &Path) -> u64 {
    let Ok(m) = fs::symlink_metadata(path) else {
        return 0;
    };
    if !m.is_dir() {
        return m.size();
    }
    let mut sum = 0u64;
    let mut stack = vec![path.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) => sum = sum.saturating_add(e.metadata().map_or(0, |m| m.size())),
                Err(_) => {}
            }
        }
    }
    sum
}

/// True if `path` is a regular file owned by this user (by `lstat`).
fn own_file(path: &Path) -> bool {
    fs::symlink_metadata(path)
        .is_ok_and(|m| m.file_type().is_file() && m.uid() == crate::os::process::euid())
}

/// Opens the lease file `path` afresh (regular, never followed, never waited
/// on) and takes `LOCK_EX|LOCK_NB`; returns the locked file only if the lock
/// was acquired, no other process has the file open (`/proc`), and the name
/// still names the locked inode. `Err` says who holds it.
fn lease_file_free(path: &Path) -> Result<fs::File, String> {
    let f = crate::os::fs::open_regular(path).map_err(|e| format!("cannot open: {e}"))?;
    match crate::os::lease::try_exclusive(&f) {
        crate::model::evidence::LockOutcome::Acquired => {}
        crate::model::evidence::LockOutcome::Busy => return Err("its lease is held".into()),
        crate::model::evidence::LockOutcome::Error(e) => {
            return Err(format!("cannot lock it: {e}"));
        }
    }
    let seen = crate::os::fs::fstat(&f).ok_or("cannot fstat it")?;
    let (pids, _) = crate::os::procfs::holders((seen.dev, seen.ino));
    if !pids.is_empty() {
        return Err(format!(
            "process(es) {} have it open",
            pids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    match crate::os::fs::lstat(path) {
        Some(n) if (n.dev, n.ino) == (seen.dev, seen.ino) => Ok(f),
        _ => Err("it was replaced while being checked".into()),
    }
}

/// The tips of the bundle at `path` and the repository to prove them in.
struct Bundle<'a> {
    path: &'a Path,
    repo: &'a Path,
}

impl Bundle<'_> {
    /// Returns `Ok(())` if every commit the bundle holds is reachable from a
    /// ref (or a worktree's HEAD) of the repository: its tips are, so
    /// removing the bundle loses nothing (`git rev-list <tips> --not --all`
    /// prints nothing). `Err` says why it must be kept.
    fn redundant(&self, git: &Git) -> Result<(), String> {
        let mut f =
            crate::os::fs::open_regular(self.path).map_err(|e| format!("cannot open: {e}"))?;
        let header = crate::ops::retire::read_header(&mut f).ok_or("it has no bundle header")?;
        if header.refs.is_empty() {
            return Err("its header names no commit".into());
        }
        if !self.repo.is_dir() {
            return Err(format!(
                "its repository `{}` is gone: it may hold the only copy",
                self.repo.display()
            ));
        }
        let rg = git.repo(self.repo).map_err(|e| e.to_string())?;
        let oids: Vec<String> = header.refs.iter().map(|(oid, _)| oid.clone()).collect();
        match crate::git::ops::unreached_by_any_ref(&rg, self.repo, &oids) {
            Ok(o) if o.ok && o.stdout.is_empty() => Ok(()),
            Ok(o) if o.ok => Err(format!(
                "it holds {} commit(s) no ref of `{}` reaches: it may be the only copy",
                o.stdout
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .count(),
                self.repo.display()
            )),
            Ok(o) => Err(format!(
                "its commits are not in `{}` ({})",
                self.repo.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The record `id` as it is now, live or shelved: `None` when no record
/// file exists.
fn load(reg: &Registry, id: &str) -> Option<Loaded> {
    reg.exists(id).then(|| reg.load(id))
}

/// One leftover being judged.
struct Found {
    path: PathBuf,
    name: Name,
    id: Option<String>,
}

/// Scans the state root for leftovers, judges each, removes the removable
/// ones with `apply`, and adds them to `report.leftovers` (scratch
/// repositories also to `report.scratch`). Errors of a removal go to
/// `report.errors`; a directory that cannot be read makes the report
/// incomplete.
pub(super) fn sweep(reg: &Registry, git: &Git, apply: bool, report: &mut ReapReport) {
    let root = reg.root();
    let mut found: Vec<Found> = Vec::new();
    let mut list = |dir: &Path, kind: Dir, id: Option<&str>, report: &mut ReapReport| {
        let entries = match fs::read_dir(dir) {
            Ok(d) => d,
            Err(e) if e.kind() == ErrorKind::NotFound => return,
            Err(e) => {
                report.complete = false;
                report
                    .problems
                    .push(format!("cannot read `{}`: {e}", dir.display()));
                return;
            }
        };
        for e in entries.flatten() {
            let Some(name) = e.file_name().to_str().and_then(|n| Name::parse(kind, n)) else {
                continue;
            };
            let id = match &name {
                Name::Lease(i) | Name::Scratch(i, _) | Name::Temp(Some(i), _) => Some(i.clone()),
                _ => id.map(str::to_string),
            };
            found.push(Found {
                path: e.path(),
                name,
                id,
            });
        }
    };
    list(&root.leases(), Dir::Leases, None, report);
    list(&root.scratch(), Dir::Scratch, None, report);
    list(&root.records(), Dir::Records, None, report);
    list(&root.removed_records(), Dir::Records, None, report);
    list(root.path(), Dir::Root, None, report);
    let mut archive_dirs: Vec<(PathBuf, String)> = Vec::new();
    if let Ok(d) = fs::read_dir(root.archives()) {
        for e in d.flatten() {
            let Some(id) = e
                .file_name()
                .to_str()
                .filter(|n| crate::model::record::is_id(n))
                .map(str::to_string)
            else {
                continue;
            };
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                list(&e.path(), Dir::Archive, Some(&id), report);
                archive_dirs.push((e.path(), id));
            }
        }
    }
    for f in found {
        // Read afresh: a record made since the reap began (a concurrent
        // exec) claims what it made.
        let loaded = f.id.as_deref().map(|id| load(reg, id));
        let known = match &loaded {
            None | Some(None) => Known::Missing,
            Some(Some(Loaded::Bad { .. })) => Known::Bad,
            Some(Some(Loaded::Ok(r))) => Known::Ok(r),
        };
        if claimed(known, &f.name, &f.path) {
            continue;
        }
        let mut l = Leftover {
            path: lossless(f.path.as_os_str().as_bytes()),
            kind: match f.name {
                Name::Lease(_) => LeftoverKind::LeaseFile,
                Name::Bundle(_) => LeftoverKind::Bundle,
                Name::BundleTemp(_) => LeftoverKind::BundleTemp,
                Name::Scratch(..) => LeftoverKind::Scratch,
                Name::Temp(..) => LeftoverKind::TempFile,
            },
            bytes: bytes_of(&f.path),
            record: f.id.clone(),
            removed: false,
            kept: None,
        };
        let judged = judge(root, git, &f, known, apply);
        match judged {
            Ok(()) => l.removed = apply,
            Err(Judged::Kept(why)) => l.kept = Some(why),
            Err(Judged::Failed(e)) => {
                report
                    .errors
                    .push(format!("cannot remove `{}`: {e}", f.path.display()));
                l.kept = Some(e);
            }
        }
        if l.kind == LeftoverKind::Scratch && l.kept.is_none() {
            report.scratch.push(l.path.clone());
        }
        report.leftovers.push(l);
    }
    // An archive directory of no record, empty once its leftovers are gone.
    for (dir, id) in archive_dirs {
        if load(reg, &id).is_some() {
            continue;
        }
        let empty = fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_none());
        if !empty {
            continue;
        }
        let removed = apply && fs::remove_dir(&dir).is_ok();
        report.leftovers.push(Leftover {
            path: lossless(dir.as_os_str().as_bytes()),
            kind: LeftoverKind::ArchiveDir,
            bytes: 0,
            record: Some(id),
            removed,
            kept: None,
        });
    }
    report.leftover_bytes = report.leftovers.iter().map(|l| l.bytes).sum();
}

/// Why a leftover stays.
enum Judged {
    /// Not provably removable now: a holder, a live creator, possible work.
    Kept(String),
    /// The removal itself failed.
    Failed(String),
}

/// Checks conditions 2 to 5 of the module docs for one leftover and, with
/// `apply`, removes it (under the lock that proves it free, where there is
/// one). `Ok(())`: removable, and removed if `apply`.
fn judge(
    root: &StateRoot,
    git: &Git,
    f: &Found,
    known: Known<'_>,
    apply: bool,
) -> Result<(), Judged> {
    let kept = |s: &str| Err(Judged::Kept(s.to_string()));
    let remove = |p: &Path| -> Result<(), Judged> {
        if apply {
            fs::remove_file(p).map_err(|e| Judged::Failed(e.to_string()))?;
        }
        Ok(())
    };
    match &f.name {
        Name::Scratch(_, pid) => {
            if pid_exists(*pid) {
                return kept("its creator (a process with that pid) still runs");
            }
            if apply {
                crate::store::root::remove_scratch(root, &f.path)
                    .map_err(|e| Judged::Failed(e.to_string()))?;
            }
            Ok(())
        }
        _ if !own_file(&f.path) => kept("not a regular file of this user: lease did not make it"),
        Name::Temp(_, pid) => {
            if pid_exists(*pid) {
                return kept("its writer (a process with that pid) still runs");
            }
            remove(&f.path)
        }
        Name::Lease(_) => {
            let _held = lease_file_free(&f.path).map_err(Judged::Kept)?;
            remove(&f.path)
        }
        Name::BundleTemp(_) | Name::Bundle(_) => {
            if let Name::Bundle(_) = f.name {
                let Known::Ok(rec) = known else {
                    return kept(
                        "no record names its repository, so nothing proves its commits are elsewhere",
                    );
                };
                Bundle {
                    path: &f.path,
                    repo: Path::new(&rec.repo),
                }
                .redundant(git)
                .map_err(Judged::Kept)?;
            }
            // A retire that is building or verifying a bundle of this record
            // holds its lease exclusively: take it for the removal.
            let _lock = match known {
                Known::Ok(rec) if rec.state != State::Removed => match &rec.lease {
                    Some(l) => Some(
                        crate::os::lease::try_exclusive_checked(l, rec.uid).map_err(|h| {
                            Judged::Kept(format!("{}: {}", h.reason.code(), h.detail))
                        })?,
                    ),
                    None => None,
                },
                _ => None,
            };
            remove(&f.path)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn only_names_of_leases_layout_are_leftovers() {
        assert_eq!(
            Name::parse(Dir::Leases, &format!("{ID}.lease")),
            Some(Name::Lease(ID.into()))
        );
        for other in ["x.lease", "0123.lease", &format!("{ID}.lease.bak"), "notes"] {
            assert_eq!(Name::parse(Dir::Leases, other), None, "{other}");
        }
        assert_eq!(Name::parse(Dir::Archive, "3.bundle"), Some(Name::Bundle(3)));
        assert_eq!(
            Name::parse(Dir::Archive, ".3.bundle.tmp"),
            Some(Name::BundleTemp(3))
        );
        for other in [
            "03.bundle",
            "-1.bundle",
            "x.bundle",
            ".3.bundle",
            "3.bundle.tmp",
        ] {
            assert_eq!(Name::parse(Dir::Archive, other), None, "{other}");
        }
        assert_eq!(
            Name::parse(Dir::Scratch, &format!("{ID}-build-42")),
            Some(Name::Scratch(ID.into(), 42))
        );
        for other in [
            &format!("{ID}-other-42")[..],
            "x-build-42",
            &format!("{ID}-build-x"),
        ] {
            assert_eq!(Name::parse(Dir::Scratch, other), None, "{other}");
        }
        assert_eq!(
            Name::parse(Dir::Records, &format!(".{ID}.json.tmp-77")),
            Some(Name::Temp(Some(ID.into()), 77))
        );
        assert_eq!(Name::parse(Dir::Records, &format!("{ID}.lock")), None);
        assert_eq!(Name::parse(Dir::Records, &format!("{ID}.json")), None);
        assert_eq!(
            Name::parse(Dir::Root, ".orphans.json.tmp-9"),
            Some(Name::Temp(None, 9))
        );
        assert_eq!(Name::parse(Dir::Root, ".audit.jsonl.tmp-9"), None);
        assert_eq!(Name::parse(Dir::Root, &format!("{ID}.lock")), None);
    }

    #[test]
    fn a_record_claims_its_lease_until_removed_and_the_bundle_it_names() {
        let mut r = crate::model::record::sample_record();
        let lease = Name::Lease(r.id.clone());
        let p = Path::new("/s/leases/x.lease");
        assert!(claimed(Known::Ok(&r), &lease, p));
        assert!(
            claimed(Known::Bad, &lease, p),
            "a corrupt record claims everything"
        );
        assert!(!claimed(Known::Missing, &lease, p));
        r.state = State::Removed;
        assert!(!claimed(Known::Ok(&r), &lease, p));
        let b = Path::new("/s/archives/i/1.bundle");
        assert!(!claimed(Known::Ok(&r), &Name::Bundle(1), b));
        r.archive = Some(crate::model::record::Archive {
            kind: "bundle".into(),
            location: b.to_string_lossy().into_owned(),
            sha256: String::new(),
            tip: String::new(),
            commits: 1,
            refs: std::collections::BTreeMap::new(),
            prerequisites: Vec::new(),
            verified_at: String::new(),
            receipts: Vec::new(),
            remote: None,
        });
        assert!(claimed(Known::Ok(&r), &Name::Bundle(1), b));
        assert!(!claimed(
            Known::Ok(&r),
            &Name::Bundle(2),
            Path::new("/s/archives/i/2.bundle")
        ));
        assert!(!claimed(Known::Ok(&r), &Name::BundleTemp(3), b));
    }

    #[test]
    fn a_lease_file_is_free_only_without_lock_and_without_holder() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join(format!("{ID}.lease"));
        let (held, _) = crate::os::lease::create(&p).unwrap();
        crate::os::lease::shared(&held).unwrap();
        let e = lease_file_free(&p).unwrap_err();
        assert!(e.contains("held"), "{e}");
        drop(held);
        // Another test's forked child may hold a copy of the descriptor for
        // a moment (close-on-exec closes it at exec): wait for it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while lease_file_free(&p).is_err() {
            assert!(std::time::Instant::now() < deadline, "never free");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let fifo = t.path().join("fifo.lease");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RUSR).unwrap();
        assert!(lease_file_free(&fifo).unwrap_err().contains("FIFO"));
    }

    #[test]
    fn numbers_are_as_lease_writes_them() {
        assert_eq!(number("1"), Some(1));
        assert_eq!(number("12"), Some(12));
        assert_eq!(number("0"), None);
        assert_eq!(number("01"), None);
        assert_eq!(number(""), None);
        assert_eq!(number("+1"), None);
        assert_eq!(number("99999999999999999999"), None);
    }
}
