//! Records: one versioned JSON file per worktree, their states and legal
//! transitions, atomic fsynced writes, and read-modify-write under a short
//! exclusive flock on the record's own lock file.
//!
//! # Invariants
//! - A record is only ever replaced whole (`paths::write_atomic`).
//! - Every state change goes through [`Record::set_state`], which refuses an
//!   illegal transition and queues an audit line written with the record.
//! - Every audit line about a record has exactly one copy in the log, even
//!   when a crash falls between the record's write and its lines: the record
//!   numbers its events (`audit_seq`) and keeps those of its latest write
//!   (`unaudited`); `<id>.lock` holds the last number known to be in the log.
//!   Under the record's lock, before any change, [`Registry::update`] appends
//!   what the log lacks ([`Registry::recover_audit`]).
//! - A record that is corrupt or of a newer schema is listed as such and never
//!   changed: [`Registry::update`] fails with [`Error::Record`] (exit 3).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::audit::{Audit, Event};
use crate::error::{Error, IoResultExt, Result};
use crate::paths::StateRoot;
use crate::plan::HoldReason;

/// The record schema this build writes and understands.
pub const SCHEMA: u64 = 1;

/// How many launcher sessions a record keeps (SPEC/Record: the last 16).
pub const MAX_SESSIONS: usize = 16;

/// The largest record file lease reads (bytes; docs/record.md "Bounds"). A
/// record keeps at most [`MAX_SESSIONS`] sessions and [`MAX_ATTEMPTS`]
/// attempts with bounded details, so a record lease wrote stays far below
/// it; a larger file is reported corrupt, never read without end.
pub const MAX_RECORD_BYTES: u64 = 4 << 20;

/// How many held retires a record keeps in `attempts` (SPEC "Bad input and
/// faults": the last 16); older ones are counted in `attempts_dropped`.
pub const MAX_ATTEMPTS: usize = 16;

/// The longest detail string an attempt or an audit event keeps (bytes;
/// SPEC "Bad input and faults": 4 KiB). A longer one is cut at a character
/// boundary and says how many bytes were cut.
pub const MAX_DETAIL_BYTES: usize = 4096;

/// How many detail strings an attempt or an audit event keeps; the last
/// one kept says how many more there were.
pub const MAX_DETAILS: usize = 64;

/// Bounds one detail string to [`MAX_DETAIL_BYTES`] bytes: kept whole when
/// it fits, else cut at a character boundary with ` ... [N bytes cut]`
/// appended (the result still fits).
pub fn bound_detail(mut s: String) -> String {
    if s.len() <= MAX_DETAIL_BYTES {
        return s;
    }
    // The marker is at most 30 bytes (`u64::MAX` has 20 digits).
    let mut cut = MAX_DETAIL_BYTES - 32;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    let dropped = s.len() - cut;
    s.truncate(cut);
    s.push_str(&format!(" ... [{dropped} bytes cut]"));
    s
}

/// Bounds a list of details: each by [`bound_detail`], at most
/// [`MAX_DETAILS`] of them, the last kept one saying how many were left out.
pub fn bound_details(details: Vec<String>) -> Vec<String> {
    let total = details.len();
    let mut out: Vec<String> = details
        .into_iter()
        .take(MAX_DETAILS)
        .map(bound_detail)
        .collect();
    if total > MAX_DETAILS
        && let Some(last) = out.last_mut()
    {
        *last = bound_detail(format!(
            "{last} ... and {} more detail(s) not kept",
            total - MAX_DETAILS
        ));
    }
    out
}

/// The life of a worktree (SPEC/Record "States").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Registered before anything was created.
    Planned,
    /// A launcher runs (or ran and was not yet proven gone).
    Active,
    /// The last launcher exited and recorded the outcome.
    Terminal,
    /// A named owner keeps it.
    Retained,
    /// Every launcher is gone without recording an exit, proven by retire or reap.
    Interrupted,
    /// Removal was decided and may be under way.
    Retiring,
    /// Gone; a tombstone says what was removed.
    Removed,
}

impl State {
    /// Every state, in the order of a record's life.
    pub const ALL: [State; 7] = [
        State::Planned,
        State::Active,
        State::Terminal,
        State::Retained,
        State::Interrupted,
        State::Retiring,
        State::Removed,
    ];

    /// Returns the kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            State::Planned => "planned",
            State::Active => "active",
            State::Terminal => "terminal",
            State::Retained => "retained",
            State::Interrupted => "interrupted",
            State::Retiring => "retiring",
            State::Removed => "removed",
        }
    }

    /// Returns true if and only if SPEC/Record allows `self -> to`.
    pub fn can_become(self, to: State) -> bool {
        use State::*;
        matches!(
            (self, to),
            (Planned, Active)
                | (Planned, Removed)
                | (Planned, Interrupted)
                | (Active, Terminal)
                | (Active, Interrupted)
                | (Terminal, Retained)
                | (Retained, Terminal)
                | (Terminal, Retiring)
                | (Interrupted, Retiring)
                | (Retiring, Removed)
                | (Retiring, Terminal)
                | (Terminal, Active)
                | (Retained, Active)
                | (Interrupted, Active)
        )
    }
}

/// A path with the device and inode it had when recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileId {
    /// Canonical absolute path (UTF-8).
    pub path: String,
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
    /// Birth time (statx `btime`) in nanoseconds since the epoch, where the
    /// filesystem records one: an inode number can be reused after a delete,
    /// a birth time tells the new file from the old. Absent in records made
    /// before it was recorded, and on filesystems without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub btime: Option<u64>,
}

impl FileId {
    /// Records `path` as seen now by `lstat`: device, inode and birth time.
    pub fn of(path: &std::path::Path, dev: u64, ino: u64) -> Result<FileId> {
        Ok(FileId {
            path: crate::paths::utf8(path)?,
            dev,
            ino,
            btime: crate::os::fs::birth(&std::fs::symlink_metadata(path).ok()),
        })
    }

    /// Returns true unless both birth times are known and differ: the file
    /// seen (`meta`) is then a new file that reused the recorded inode.
    pub fn same_birth(&self, meta: &Option<std::fs::Metadata>) -> bool {
        match (self.btime, crate::os::fs::birth(meta)) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }

    /// Returns `(dev, ino)`.
    pub fn id(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }
    /// Returns the path.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(&self.path)
    }
}

/// The longest `KIND:NAME` owner lease records (bytes).
pub const MAX_OWNER_BYTES: usize = 1024;

/// Who a worktree belongs to: `kind:name` (`agent:claude`, `ci:job-42`, `manual:alice`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// The kind of owner.
    pub kind: String,
    /// Its name.
    pub name: String,
}

impl Owner {
    /// Parses `KIND:NAME`; both parts non-empty.
    pub fn parse(s: &str) -> Result<Owner> {
        if s.len() > MAX_OWNER_BYTES {
            return Err(Error::Usage(format!(
                "owner is {} bytes long; the limit is {MAX_OWNER_BYTES}",
                s.len()
            )));
        }
        match s.split_once(':') {
            Some((k, n)) if !k.is_empty() && !n.is_empty() => Ok(Owner {
                kind: k.to_string(),
                name: n.to_string(),
            }),
            _ => Err(Error::Usage(format!(
                "owner `{s}` is not of the form KIND:NAME"
            ))),
        }
    }

    /// Returns the caller's default owner: the policy's `owner` (config or
    /// `$LEASE_OWNER`), else `manual:<user name>`.
    pub fn of_caller() -> Result<Owner> {
        Ok(crate::policy::current().default_owner())
    }
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// Exit code, if it exited.
    pub code: Option<i32>,
    /// Signal number, if a signal killed it.
    pub signal: Option<i32>,
    /// When lease saw it end (RFC 3339 UTC).
    pub at: String,
    /// The worktree's HEAD then, if readable.
    pub head: Option<String>,
    /// Why the command could not start, if it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Pids that still held the lease when the command exited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holders: Vec<u32>,
    /// What ended the session when there is no exit code or signal to
    /// give: [`BOUND_EXITED`] for a keeper whose bound process exited (not
    /// its child, so its status is unknowable), or why a keeper never
    /// started. Absent in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The outcome note a keeper records when its bound process exits (SPEC
/// "Hosts that lease does not start").
pub const BOUND_EXITED: &str = "bound process exited";

/// The process a keeper is bound to (`lease create --bind-pid`): the
/// keeper holds the lease until it exits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bound {
    /// Its pid.
    pub pid: u32,
    /// Its start time, clock ticks since boot (`/proc/<pid>/stat` field 22),
    /// so a reused pid is never taken for it.
    pub start_time: u64,
}

/// A recorded wish that the worktree be retired once its lease is free
/// (`lease retire --when-free`). It never overrides a gate: whoever
/// completes it (the last launcher or keeper to leave, or a reap) runs the
/// ordinary retire, which may hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intent {
    /// Always [`Intent::RETIRE_WHEN_FREE`].
    pub kind: String,
    /// When it was recorded (RFC 3339 UTC).
    pub at: String,
    /// `--delete-branch` was asked for.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delete_branch: bool,
    /// `--fetch` was asked for.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fetch: bool,
}

impl Intent {
    /// The one kind of intent so far.
    pub const RETIRE_WHEN_FREE: &'static str = "retire-when-free";
}

/// One launcher run in the worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The launcher's pid.
    pub pid: u32,
    /// The launcher's start time, clock ticks since boot (`/proc/<pid>/stat` field 22).
    pub start_time: u64,
    /// When it started (RFC 3339 UTC).
    pub started_at: String,
    /// When it ended, if it recorded that.
    pub ended_at: Option<String>,
    /// How its command ended, if it recorded that.
    pub outcome: Option<Outcome>,
    /// For a keeper's session (`lease create`): the process it is bound to.
    /// `pid` and `start_time` above are then the keeper's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
}

impl Session {
    /// Returns true if and only if this session's launcher process still runs.
    pub fn launcher_alive(&self) -> bool {
        self.ended_at.is_none() && crate::os::process::is_alive(self.pid, self.start_time)
    }
}

/// Why and until when an owner keeps a worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    /// Who keeps it.
    pub owner: Owner,
    /// Why.
    pub reason: String,
    /// Until when (RFC 3339), or indefinitely.
    pub until: Option<String>,
}

/// The reason `lease exec --keep` records. Such a retention covers the exit of
/// the session that asked for it; a `lease hold` outlives later sessions.
pub const KEPT_AT_EXIT: &str = "kept at exit";

impl Retention {
    /// Returns true if and only if `until` is set, readable, and not after `now`.
    /// An unreadable `until` never expires: uncertainty keeps the worktree.
    pub fn is_expired(&self, now: std::time::SystemTime) -> bool {
        self.until
            .as_deref()
            .and_then(|u| humantime::parse_rfc3339(u).ok())
            .is_some_and(|u| u <= now)
    }

    /// Returns true if and only if this retention came from `exec --keep`.
    pub fn is_kept_at_exit(&self) -> bool {
        self.reason == KEPT_AT_EXIT
    }
}

/// A verified archive of the commits that existed only in the worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Archive {
    /// `bundle`, `remote` (archival refs on the trusted remote only) or
    /// `both`.
    pub kind: String,
    /// Absolute path of the bundle under the state root; for `remote`, the
    /// trusted remote's URL.
    pub location: String,
    /// sha256 of the bundle file, lowercase hex; empty for `remote`.
    pub sha256: String,
    /// The worktree's HEAD commit.
    pub tip: String,
    /// How many commits the bundle holds.
    pub commits: u64,
    /// The archived tips by lease's name (`refs/lease/<id>/head`, ...) and
    /// the commit each names: the refs in the bundle, when there is one.
    pub refs: BTreeMap<String, String>,
    /// Commits the bundle needs to be restored (on the default branch).
    pub prerequisites: Vec<String>,
    /// When the bundle was verified (RFC 3339 UTC).
    pub verified_at: String,
    /// Restores made from it.
    pub receipts: Vec<serde_json::Value>,
    /// The archival refs pushed to the trusted remote and read back
    /// (`remote` and `both`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteRefs>,
}

impl Archive {
    /// True if a bundle file is part of this archive (`bundle` or `both`).
    pub fn has_bundle(&self) -> bool {
        self.kind != "remote"
    }
}

/// Archival refs on the trusted remote, read back with `git ls-remote`
/// (SPEC "durable": a commit on a read-back archival ref is durable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteRefs {
    /// The trusted remote's name in the repository's config.
    pub remote: String,
    /// The URL lease pushed to and read back from.
    pub url: String,
    /// Remote ref name (`refs/lease/archive/<id>/head`, ...) -> the exact
    /// commit read back there.
    pub refs: BTreeMap<String, String>,
    /// When the readback matched (RFC 3339 UTC).
    pub read_back_at: String,
}

/// What `retire --delete-branch`, or branch hygiene, did with the task branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchCleanup {
    /// The branch's short name.
    pub name: String,
    /// Its tip before lease touched it (the old value of the guarded delete).
    pub old_tip: Option<String>,
    /// True if `git update-ref -d` deleted it.
    pub deleted: bool,
    /// Why it was kept, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<HoldReason>,
    /// What was found.
    pub detail: String,
    /// True for branch hygiene: lease's own `lease/<id prefix>` branch,
    /// handled without `--delete-branch` (kept, it is not a hold; absent,
    /// meaning false, in records written before it existed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub automatic: bool,
}

/// One path provisioned into a new worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provisioned {
    /// Relative to the worktree's top (UTF-8 as git listed it; a path that
    /// is not UTF-8 is recorded lossily and then never matches, so it holds).
    pub path: String,
    /// `file` or `symlink`.
    pub kind: String,
    /// `reflink` (FICLONE), `copy`, or `symlink`.
    pub how: String,
    /// sha256 of a file's content, lowercase hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// A symlink's link text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// What became of the operator's teardown for one record. Written (and
/// fsynced, like every record write) before the command starts, so a crash
/// while it runs leaves `started_at` without `finished_at`: the next retire
/// runs it again and says so (`interrupted`, the audit line, the report).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Teardown {
    /// When the latest run started (RFC 3339 UTC).
    pub started_at: String,
    /// When it ended; `None` while it runs, or when a crash cut it short.
    pub finished_at: Option<String>,
    /// True once every configured command exited 0: it never runs again.
    pub ok: bool,
    /// How many times it was started.
    pub runs: u32,
    /// How many of those runs a crash cut short (found started, never
    /// finished, by a later retire).
    pub interrupted: u32,
    /// What the latest run did: each command and how it ended.
    pub detail: Vec<String>,
}

/// One held retire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// When (RFC 3339 UTC).
    pub at: String,
    /// The reason codes.
    pub reasons: Vec<HoldReason>,
    /// What was found.
    pub detail: Vec<String>,
}

/// What a removal left behind as evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tombstone {
    /// The removed worktree's path.
    pub path: String,
    /// The record id.
    pub id: String,
    /// When (RFC 3339 UTC).
    pub removed_at: String,
    /// Bytes of the files removed (sum of `st_size` from lease's `lstat` walk).
    pub bytes_reclaimed: u64,
    /// Free bytes on the worktree's filesystem before removal.
    pub free_before: u64,
    /// Free bytes after.
    pub free_after: u64,
    /// The evidence the gates saw (HEAD, archive, git version, ...).
    pub evidence: serde_json::Value,
    /// `retire --delete-branch`: the task branch, its old tip and whether it
    /// was deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<BranchCleanup>,
}

/// The registry entry of one worktree (SPEC/Record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Schema version, [`SCHEMA`].
    pub schema: u64,
    /// 128 random bits, lowercase hex.
    pub id: String,
    /// Current state.
    pub state: State,
    /// Canonical common git dir of the repository.
    pub repo: String,
    /// The worktree's top directory, once it exists.
    pub worktree: Option<FileId>,
    /// The worktree root (for adopted worktrees, the recorded parent).
    pub root: FileId,
    /// `created` or `adopted`.
    pub origin: Origin,
    /// Short branch name, or `None` for a detached HEAD.
    pub branch: Option<String>,
    /// The base commit.
    pub base: String,
    /// Who owns it.
    pub owner: Owner,
    /// Owning uid.
    pub uid: u32,
    /// When the record was made (RFC 3339 UTC).
    pub created_at: String,
    /// The lease file, once created.
    pub lease: Option<FileId>,
    /// The last [`MAX_SESSIONS`] launcher runs.
    pub sessions: Vec<Session>,
    /// How the last command ended.
    pub outcome: Option<Outcome>,
    /// Who keeps it, if retained.
    pub retention: Option<Retention>,
    /// The verified archive, if one was made.
    pub archive: Option<Archive>,
    /// The last [`MAX_ATTEMPTS`] held retires, oldest first.
    pub attempts: Vec<Attempt>,
    /// How many older held retires were dropped from `attempts` (absent,
    /// meaning 0, in records written before it existed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempts_dropped: u64,
    /// Set when removed.
    pub tombstone: Option<Tombstone>,
    /// The small integer no other non-`removed` record of this state root
    /// holds (SPEC "Provisioned files, disk, and hygiene"), given to the
    /// command as `LEASE_SLOT` (for ports); allocated at creation under the
    /// state root's slot lock ([`Registry::create`]); a `removed` record's
    /// slot is free again. Absent in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
    /// What provisioning copied or symlinked into the worktree at creation
    /// (SPEC "Provisioned files, disk, and hygiene"); at retire an entry
    /// still identical is not work.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provisioned: Vec<Provisioned>,
    /// The operator's teardown (config `teardown`) for this record, once a
    /// retire started it (SPEC "Provisioned files, disk, and hygiene").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown: Option<Teardown>,
    /// For a worktree made by `lease restore`: the record whose archive it
    /// came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_from: Option<String>,
    /// A pending `lease retire --when-free` (absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Intent>,
    /// How many audit events this record has made (the `seq` of its last).
    #[serde(default)]
    pub audit_seq: u64,
    /// The audit events of the latest write, kept until the next write so a
    /// crash between the record and its audit lines loses no line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unaudited: Vec<Event>,
    /// Audit events made since load, written to the log with the record.
    #[serde(skip)]
    pending: Vec<Event>,
}

/// Whether lease created the worktree or adopted an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// Made by `lease exec`.
    Created,
    /// Registered with `--adopt`.
    Adopted,
}

impl Record {
    /// Builds a `planned` record.
    #[allow(clippy::too_many_arguments)]
    pub fn planned(
        id: String,
        repo: String,
        root: FileId,
        origin: Origin,
        branch: Option<String>,
        base: String,
        owner: Owner,
    ) -> Record {
        Record {
            schema: SCHEMA,
            id,
            state: State::Planned,
            repo,
            worktree: None,
            root,
            origin,
            branch,
            base,
            owner,
            uid: crate::os::process::euid(),
            created_at: now(),
            lease: None,
            sessions: Vec::new(),
            outcome: None,
            retention: None,
            archive: None,
            attempts: Vec::new(),
            attempts_dropped: 0,
            tombstone: None,
            slot: None,
            provisioned: Vec::new(),
            teardown: None,
            restored_from: None,
            intent: None,
            audit_seq: 0,
            unaudited: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// Moves to `to`, or fails if SPEC/Record does not allow it.
    pub fn set_state(&mut self, to: State) -> Result<()> {
        if !self.state.can_become(to) {
            return Err(Error::Record {
                path: PathBuf::from(&self.id),
                problem: format!(
                    "not allowed to go from {} to {}",
                    self.state.name(),
                    to.name()
                ),
            });
        }
        self.pending.push(Event {
            from: Some(self.state),
            to: Some(to),
            ..Event::note("transition", &self.id, vec![], vec![])
        });
        self.state = to;
        Ok(())
    }

    /// Queues an audit line about this record (`held`, `archived`, `hold`,
    /// `release`), written with the record by [`Registry::update`].
    pub fn audit(&mut self, event: &str, reasons: Vec<HoldReason>, detail: Vec<String>) {
        self.pending
            .push(Event::note(event, &self.id, reasons, bound_details(detail)));
    }

    /// Adds a held retire, keeping the last [`MAX_ATTEMPTS`] (older ones
    /// are counted in `attempts_dropped`) and bounding its details
    /// ([`bound_details`]).
    pub fn push_attempt(&mut self, mut a: Attempt) {
        a.detail = bound_details(std::mem::take(&mut a.detail));
        self.attempts.push(a);
        let extra = self.attempts.len().saturating_sub(MAX_ATTEMPTS);
        self.attempts.drain(..extra);
        self.attempts_dropped = self.attempts_dropped.saturating_add(extra as u64);
    }

    /// Adds a launcher session, keeping the last [`MAX_SESSIONS`].
    pub fn push_session(&mut self, s: Session) {
        self.sessions.push(s);
        let extra = self.sessions.len().saturating_sub(MAX_SESSIONS);
        self.sessions.drain(..extra);
    }

    /// Returns true if and only if a launcher of this record still runs.
    pub fn any_launcher_alive(&self) -> bool {
        self.sessions.iter().any(Session::launcher_alive)
    }

    /// Returns where the worktree is or would be: the recorded top directory,
    /// else, for a worktree lease creates, `<root>/<id>` (a `planned` record
    /// learns its worktree only when it turns `active`).
    pub fn expected_worktree(&self) -> Option<PathBuf> {
        match (&self.worktree, self.origin) {
            (Some(w), _) => Some(w.path()),
            (None, Origin::Created) => Some(self.root.path().join(&self.id)),
            (None, Origin::Adopted) => None,
        }
    }

    /// Returns the first 8 hex digits of the id.
    pub fn prefix(&self) -> &str {
        &self.id[..8.min(self.id.len())]
    }
}

/// A record file as found on disk.
#[derive(Debug)]
pub enum Loaded {
    /// Parsed, known schema.
    Ok(Box<Record>),
    /// Unreadable, corrupt or of a newer schema: listed, never changed.
    Bad {
        /// The id from the file name.
        id: String,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
}

/// The set of records under a state root.
#[derive(Debug, Clone)]
pub struct Registry {
    root: StateRoot,
}

impl Registry {
    /// Opens the registry of a state root.
    pub fn new(root: StateRoot) -> Registry {
        Registry { root }
    }

    /// The state root.
    pub fn root(&self) -> &StateRoot {
        &self.root
    }

    fn file(&self, id: &str) -> PathBuf {
        self.root.records().join(format!("{id}.json"))
    }

    /// Reads one record.
    pub fn load(&self, id: &str) -> Loaded {
        let path = self.file(id);
        let bad = |problem: String| Loaded::Bad {
            id: id.to_string(),
            path: path.clone(),
            problem,
        };
        let bytes = match crate::os::fs::read_regular(&path, MAX_RECORD_BYTES) {
            Ok(b) => b,
            // A FIFO, device, symlink or oversized file where a record belongs.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return bad(format!("corrupt: {e}"));
            }
            Err(e) => return bad(format!("unreadable: {e}")),
        };
        match parse(id, &bytes) {
            Ok(r) => Loaded::Ok(Box::new(r)),
            Err(problem) => bad(problem),
        }
    }

    /// Reads one record, failing if it is bad.
    pub fn get(&self, id: &str) -> Result<Record> {
        match self.load(id) {
            Loaded::Ok(r) => Ok(*r),
            Loaded::Bad { path, problem, .. } => Err(Error::Record { path, problem }),
        }
    }

    /// Returns every record id, sorted.
    pub fn ids(&self) -> Result<Vec<String>> {
        let dir = self.root.records();
        let mut ids = Vec::new();
        let entries = match fs::read_dir(&dir) {
            Ok(d) => d,
            // A state root made by hand (an empty 0700 directory): nothing
            // is recorded until the first command that writes creates it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ids),
            Err(e) => return Err(e).at_do("cannot read", &dir),
        };
        for entry in entries {
            let entry = entry.at_do("cannot read", &dir)?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(id) = name.strip_suffix(".json")
                && is_id(id)
            {
                ids.push(id.to_string());
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// Reads every record.
    pub fn scan(&self) -> Result<Vec<Loaded>> {
        Ok(self.ids()?.iter().map(|id| self.load(id)).collect())
    }

    /// Resolves a full id or a unique prefix of 8 or more hex digits.
    pub fn resolve(&self, prefix: &str) -> Result<String> {
        if prefix.len() < 8 || prefix.len() > 32 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::Usage(format!(
                "`{prefix}` is not a record id or a prefix of 8 or more hex digits"
            )));
        }
        let prefix = prefix.to_ascii_lowercase();
        let found: Vec<String> = self
            .ids()?
            .into_iter()
            .filter(|id| id.starts_with(&prefix))
            .collect();
        match found.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(Error::Usage(format!("no record matches `{prefix}`"))),
            many => Err(Error::Usage(format!(
                "`{prefix}` is ambiguous: {}",
                many.join(", ")
            ))),
        }
    }

    /// Writes a new record (it must not exist yet) and audits its creation.
    ///
    /// Its `slot` is allocated here: under `<state root>/locks/slots.lock`
    /// (exclusive, blocking; every creation takes it, so two concurrent
    /// creations never see the same free slot), the lowest integer no other
    /// non-`removed` record holds ([`crate::plan::lowest_free_slot`]); the
    /// record is written before the lock is released.
    pub fn create(&self, rec: &mut Record) -> Result<()> {
        crate::paths::make_private_dir(&self.root.locks())?;
        let _slots = crate::paths::lock_private(&self.root.locks().join("slots.lock"))?;
        let lock = self.lock(&rec.id)?;
        let path = self.file(&rec.id);
        if path.exists() {
            return Err(Error::Record {
                path,
                problem: "already exists".into(),
            });
        }
        let taken: Vec<u32> = self
            .scan()?
            .into_iter()
            .filter_map(|l| match l {
                Loaded::Ok(r) if r.state != State::Removed && r.id != rec.id => r.slot,
                _ => None,
            })
            .collect();
        rec.slot = Some(crate::plan::lowest_free_slot(&taken));
        crate::os::fault::point("slot-chosen");
        rec.pending.insert(
            0,
            Event {
                to: Some(rec.state),
                ..Event::note("create", &rec.id, vec![], vec![])
            },
        );
        self.write(rec, &lock, true)
    }

    /// Read-modify-write of one record under its exclusive lock. `f` may change
    /// the record and call [`Record::set_state`]; the record is written only if
    /// `f` succeeds and changed it, then each transition is audited.
    ///
    /// First, audit lines a crash lost after the record's last write are
    /// appended ([`Registry::recover_audit`]), so the log keeps each record's
    /// lines in order.
    pub fn update<T>(&self, id: &str, f: impl FnOnce(&mut Record) -> Result<T>) -> Result<T> {
        self.update_with(id, true, f)
    }

    /// [`Registry::update`] for a session's start or end: the record and its
    /// audit lines are written atomically but not fsynced (SPEC invariant 7;
    /// docs/record.md "Durability": the flock, not the record, protects a
    /// live session, and a lost end leaves an `active` record with a dead
    /// launcher, which retire and reap resolve). Never for a transition that
    /// authorizes or records destruction.
    pub fn update_session<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut Record) -> Result<T>,
    ) -> Result<T> {
        self.update_with(id, false, f)
    }

    fn update_with<T>(
        &self,
        id: &str,
        durable: bool,
        f: impl FnOnce(&mut Record) -> Result<T>,
    ) -> Result<T> {
        let lock = self.lock(id)?;
        let mut rec = self.get(id)?;
        self.recover(&rec, &lock)?;
        let before = rec.clone();
        let out = f(&mut rec)?;
        if rec != before || !rec.pending.is_empty() {
            self.write(&mut rec, &lock, durable)?;
        }
        Ok(out)
    }

    /// Appends the audit lines of record `id`'s latest write that a crash
    /// lost, under the record's lock; `lease reap --apply` runs it on every
    /// record, removed ones included.
    pub fn recover_audit(&self, id: &str) -> Result<()> {
        let lock = self.lock(id)?;
        let rec = self.get(id)?;
        self.recover(&rec, &lock)
    }

    /// The recovery itself: `lock` is the record's lock file, which holds the
    /// last `seq` known to be in the log. Only when that lags the record does
    /// it read the log, to append exactly the lines that are missing.
    fn recover(&self, rec: &Record, lock: &fs::File) -> Result<()> {
        if read_audited(lock) >= rec.audit_seq {
            return Ok(());
        }
        let audit = Audit::new(&self.root);
        let logged = crate::audit::last_seq(&self.root.audit_log(), &rec.id)?;
        for e in rec.unaudited.iter().filter(|e| e.seq > logged) {
            audit.append(&Event {
                recovered: true,
                ..e.clone()
            })?;
        }
        self.write_audited(lock, &rec.id, rec.audit_seq)
    }

    fn write_audited(&self, lock: &fs::File, id: &str, seq: u64) -> Result<()> {
        lock.write_all_at(format!("{seq:020}\n").as_bytes(), 0)
            .at_do(
                "cannot write",
                &self.root.records().join(format!("{id}.lock")),
            )
    }

    /// Records a held retire: one more `attempts` entry and one audit line.
    pub fn record_hold(&self, id: &str, holds: &[crate::plan::Hold]) -> Result<()> {
        let reasons: Vec<HoldReason> = holds.iter().map(|h| h.reason).collect();
        let detail: Vec<String> = holds.iter().map(|h| h.detail.clone()).collect();
        self.update(id, |rec| {
            rec.push_attempt(Attempt {
                at: now(),
                reasons: reasons.clone(),
                detail: detail.clone(),
            });
            rec.audit("held", reasons, detail);
            Ok(())
        })
    }

    /// Numbers the queued events, writes the record (which keeps them as
    /// `unaudited`), appends them to the log, then notes in `lock` that the
    /// log has them. A crash anywhere in between loses no line: the next
    /// [`Registry::update`] appends what is missing.
    fn write(&self, rec: &mut Record, lock: &fs::File, durable: bool) -> Result<()> {
        let mut events = std::mem::take(&mut rec.pending);
        for e in &mut events {
            rec.audit_seq += 1;
            e.seq = rec.audit_seq;
        }
        rec.unaudited = events;
        if durable {
            crate::paths::write_atomic(&self.file(&rec.id), &encode(rec))?;
        } else {
            crate::paths::write_atomic_unsynced(&self.file(&rec.id), &encode(rec))?;
        }
        crate::os::fault::point("record-written");
        let audit = Audit::new(&self.root);
        for e in &rec.unaudited {
            audit.append_with(e, durable)?;
        }
        if rec.unaudited.is_empty() {
            return Ok(());
        }
        self.write_audited(lock, &rec.id, rec.audit_seq)
    }

    /// Takes the short exclusive flock on `<id>.lock`; released when the guard drops (by close, never `LOCK_UN`).
    fn lock(&self, id: &str) -> Result<fs::File> {
        crate::paths::lock_private(&self.root.records().join(format!("{id}.lock")))
    }
}

/// The bytes of a record file: pretty JSON, as [`parse`] reads it back.
fn encode(rec: &Record) -> Vec<u8> {
    serde_json::to_vec_pretty(rec).expect("a record serializes")
}

/// Parses the bytes of record file `<id>.json`: JSON of a known schema whose
/// `id` is `id`. The error says what is wrong, for [`Loaded::Bad`].
fn parse(id: &str, bytes: &[u8]) -> std::result::Result<Record, String> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("corrupt: {e}"))?;
    match value.get("schema").and_then(serde_json::Value::as_u64) {
        Some(SCHEMA) => {}
        Some(n) if n > SCHEMA => {
            return Err(format!("of schema {n}, newer than this lease ({SCHEMA})"));
        }
        _ => return Err("corrupt: no known schema".into()),
    }
    match serde_json::from_value::<Record>(value) {
        Ok(r) if r.id == id => Ok(r),
        Ok(r) => Err(format!("corrupt: its id is {}", r.id)),
        Err(e) => Err(format!("corrupt: {e}")),
    }
}

/// Reads the last audited `seq` from a record's lock file; 0 when it is empty
/// or unreadable (then [`Registry::recover_audit`] reads the log to be sure).
fn read_audited(lock: &fs::File) -> u64 {
    let mut buf = [0u8; 32];
    let n = lock.read_at(&mut buf, 0).unwrap_or(0);
    std::str::from_utf8(&buf[..n])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// The most of a bad record file [`bad_record_naming`] reads, in bytes: a
/// longer one cannot be shown not to name a path.
const NAMING_READ_LIMIT: u64 = 1 << 20;

/// Returns the file and problem of the first record of `loaded` that is
/// corrupt, unreadable or of a newer schema and may name the worktree `wt`
/// (SPEC "A lease every tool can see": adoption refuses those): its bytes
/// hold `wt` as a JSON string, `wt`'s directory name is its id (lease's
/// layout `<root>/<repo>/<id>`), or it cannot be read in full as a regular
/// file (opened `O_NOFOLLOW|O_NONBLOCK`, at most 1 MiB), so nothing shows
/// it does not.
pub fn bad_record_naming(loaded: &[Loaded], wt: &Path) -> Option<(PathBuf, String)> {
    let quoted = wt
        .to_str()
        .and_then(|p| serde_json::to_string(p).ok())
        .map(String::into_bytes);
    let dir_name = wt.file_name().and_then(|n| n.to_str());
    loaded.iter().find_map(|l| {
        let Loaded::Bad { id, path, problem } = l else {
            return None;
        };
        let names = dir_name == Some(id.as_str())
            || match read_bounded(path, NAMING_READ_LIMIT) {
                None => true,
                Some(bytes) => quoted
                    .as_ref()
                    .is_some_and(|q| bytes.windows(q.len()).any(|w| w == q.as_slice())),
            };
        names.then(|| (path.clone(), problem.clone()))
    })
}

/// Reads a regular file of at most `limit` bytes without following a
/// symlink or blocking on a FIFO; `None` if it cannot, or is longer.
fn read_bounded(path: &Path, limit: u64) -> Option<Vec<u8>> {
    crate::os::fs::read_regular(path, limit).ok()
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Returns true if and only if `s` looks like a record id (32 lowercase hex digits).
pub fn is_id(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Makes a new random id: 128 bits from the OS, lowercase hex.
pub fn new_id() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::Io {
        action: "cannot get random bytes for",
        path: PathBuf::from("record id"),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Returns the current time as RFC 3339 UTC with seconds.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// A planned record of a created worktree under `/r` (repository
/// `/r/.git`, owner `agent:x`), for unit tests elsewhere in the crate.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn sample_record() -> Record {
    let root = FileId {
        path: "/r".into(),
        dev: 1,
        ino: 2,
        btime: None,
    };
    Record::planned(
        new_id().unwrap(),
        "/r/.git".into(),
        root,
        Origin::Created,
        None,
        String::new(),
        Owner::parse("agent:x").unwrap(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn transitions_follow_the_spec() {
        use State::*;
        let all = [
            Planned,
            Active,
            Terminal,
            Retained,
            Interrupted,
            Retiring,
            Removed,
        ];
        let legal: Vec<(State, State)> = all
            .iter()
            .flat_map(|&a| all.iter().map(move |&b| (a, b)))
            .filter(|&(a, b)| a.can_become(b))
            .collect();
        assert_eq!(legal.len(), 14);
        assert!(!Removed.can_become(Active));
        assert!(
            !Active.can_become(Retiring),
            "active must be proven interrupted first"
        );
        assert!(!Active.can_become(Removed));
        assert!(!Planned.can_become(Terminal));
        assert!(Retiring.can_become(Terminal));
    }

    fn record() -> Record {
        super::sample_record()
    }

    #[test]
    fn set_state_moves_only_along_the_table_and_logs_each_move() {
        let mut r = record();
        assert_eq!(r.state, State::Planned);
        r.set_state(State::Active).unwrap();
        assert_eq!(r.state, State::Active);
        let moves: Vec<_> = r.pending.iter().map(|e| (e.from, e.to)).collect();
        assert_eq!(moves, [(Some(State::Planned), Some(State::Active))]);
        // Refused: nothing changes, nothing is logged.
        assert!(r.set_state(State::Retiring).is_err());
        assert!(r.set_state(State::Removed).is_err());
        assert_eq!(r.state, State::Active);
        assert_eq!(r.pending.len(), 1);
        r.set_state(State::Interrupted).unwrap();
        r.set_state(State::Retiring).unwrap();
        assert_eq!(r.state, State::Retiring);
        assert_eq!(r.pending.len(), 3);
    }

    #[test]
    fn a_launcher_is_alive_only_as_its_own_unended_process() {
        let me = std::process::id();
        let start = crate::os::process::start_time(me).unwrap();
        let s = Session {
            pid: me,
            start_time: start,
            started_at: now(),
            ended_at: None,
            outcome: None,
            bound: None,
        };
        assert!(s.launcher_alive());
        let ended = Session {
            ended_at: Some(now()),
            ..s.clone()
        };
        assert!(!ended.launcher_alive(), "it recorded its end");
        let reused = Session {
            start_time: start + 1,
            ..s.clone()
        };
        assert!(!reused.launcher_alive(), "same pid, another process");
        let mut r = record();
        assert!(!r.any_launcher_alive());
        r.push_session(ended);
        assert!(!r.any_launcher_alive());
        r.push_session(s);
        assert!(r.any_launcher_alive());
    }

    #[test]
    fn kept_at_exit_is_only_exec_keep() {
        let mut r = Retention {
            owner: Owner::parse("agent:x").unwrap(),
            reason: KEPT_AT_EXIT.into(),
            until: None,
        };
        assert!(r.is_kept_at_exit());
        r.reason = "inspect".into();
        assert!(!r.is_kept_at_exit());
    }

    #[test]
    fn a_record_keeps_the_last_16_attempts_and_counts_the_older_ones() {
        let mut r = record();
        for i in 0..20 {
            r.push_attempt(Attempt {
                at: format!("t{i}"),
                reasons: vec![HoldReason::Dirty],
                detail: vec![format!("d{i}")],
            });
        }
        assert_eq!(r.attempts.len(), MAX_ATTEMPTS);
        assert_eq!(r.attempts[0].at, "t4", "the oldest four were dropped");
        assert_eq!(r.attempts[15].at, "t19");
        assert_eq!(r.attempts_dropped, 4);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["attempts_dropped"], 4);
        // A record written before the count existed still reads, as 0.
        let mut old = serde_json::to_value(record()).unwrap();
        old.as_object_mut().unwrap().remove("attempts_dropped");
        let back: Record = serde_json::from_value(old).unwrap();
        assert_eq!(back.attempts_dropped, 0);
    }

    #[test]
    fn details_are_bounded_at_4_kib_on_a_character_boundary() {
        assert_eq!(bound_detail("short".into()), "short");
        let exact = "x".repeat(MAX_DETAIL_BYTES);
        assert_eq!(
            bound_detail(exact.clone()),
            exact,
            "exactly the bound is kept"
        );
        let long = "é".repeat(MAX_DETAIL_BYTES); // two bytes each
        let cut = bound_detail(long.clone());
        assert!(cut.len() <= MAX_DETAIL_BYTES, "{}", cut.len());
        assert!(cut.ends_with(" bytes cut]"), "{cut}");
        assert!(cut.starts_with("éé"));
        let dropped: usize = cut
            .rsplit_once("... [")
            .unwrap()
            .1
            .trim_end_matches(" bytes cut]")
            .parse()
            .unwrap();
        assert_eq!(cut.find(" ... [").unwrap() + dropped, long.len());
        let many: Vec<String> = (0..100).map(|i| format!("d{i}")).collect();
        let kept = bound_details(many);
        assert_eq!(kept.len(), MAX_DETAILS);
        assert!(kept[MAX_DETAILS - 1].contains("and 36 more"), "{kept:?}");
        let mut r = record();
        r.push_attempt(Attempt {
            at: now(),
            reasons: vec![],
            detail: vec!["y".repeat(10 * MAX_DETAIL_BYTES)],
        });
        assert!(r.attempts[0].detail[0].len() <= MAX_DETAIL_BYTES);
        r.audit("held", vec![], vec!["z".repeat(10 * MAX_DETAIL_BYTES)]);
        assert!(r.pending[0].detail[0].len() <= MAX_DETAIL_BYTES);
    }

    #[test]
    fn ids_are_128_bit_hex() {
        let a = new_id().unwrap();
        assert!(is_id(&a));
        assert_ne!(a, new_id().unwrap());
        assert!(!is_id("ABCDEF00112233445566778899aabbcc"));
    }

    #[test]
    fn owner_parse() {
        assert_eq!(Owner::parse("agent:x").unwrap().name, "x");
        assert!(Owner::parse("agent:").is_err());
        assert!(Owner::parse("nocolon").is_err());
        let long = format!("agent:{}", "x".repeat(MAX_OWNER_BYTES));
        assert!(matches!(Owner::parse(&long), Err(Error::Usage(_))));
    }
}

/// Property tests: every record survives a write and a read unchanged, and a
/// record file cut short anywhere is corrupt, never a different valid record.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod props {
    use super::*;
    use proptest::collection::{btree_map, vec};
    use proptest::option::of;
    use proptest::prelude::*;
    use proptest::sample::select;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9/._ -]{0,12}",
            vec(any::<char>(), 0..8).prop_map(|c| c.into_iter().collect()),
        ]
    }

    fn hex(n: usize) -> impl Strategy<Value = String> {
        vec(
            prop_oneof![b'0'..=b'9', b'a'..=b'f'].prop_map(char::from),
            n,
        )
        .prop_map(|c| c.into_iter().collect())
    }

    fn state() -> impl Strategy<Value = State> {
        proptest::sample::select(State::ALL.to_vec())
    }

    fn reason() -> impl Strategy<Value = HoldReason> {
        proptest::sample::select(vec![
            HoldReason::NotTerminal,
            HoldReason::ConsumerAlive,
            HoldReason::Dirty,
            HoldReason::UniqueCommitsUnarchived,
            HoldReason::Unprovable,
            HoldReason::AlreadyRestored,
        ])
    }

    fn file_id() -> impl Strategy<Value = FileId> {
        (text(), any::<u64>(), any::<u64>(), of(any::<u64>())).prop_map(
            |(path, dev, ino, btime)| FileId {
                path,
                dev,
                ino,
                btime,
            },
        )
    }

    fn owner() -> impl Strategy<Value = Owner> {
        (text(), text()).prop_map(|(kind, name)| Owner { kind, name })
    }

    fn outcome() -> impl Strategy<Value = Outcome> {
        (
            of(any::<i32>()),
            of(any::<i32>()),
            text(),
            of(hex(40)),
            of(text()),
            vec(any::<u32>(), 0..3),
            of(text()),
        )
            .prop_map(|(code, signal, at, head, error, holders, note)| Outcome {
                code,
                signal,
                at,
                head,
                error,
                holders,
                note,
            })
    }

    fn session() -> impl Strategy<Value = Session> {
        (
            any::<u32>(),
            any::<u64>(),
            text(),
            of(text()),
            of(outcome()),
            of((any::<u32>(), any::<u64>())),
        )
            .prop_map(
                |(pid, start_time, started_at, ended_at, outcome, bound)| Session {
                    pid,
                    start_time,
                    started_at,
                    ended_at,
                    outcome,
                    bound: bound.map(|(pid, start_time)| Bound { pid, start_time }),
                },
            )
    }

    fn json() -> impl Strategy<Value = serde_json::Value> {
        prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            text().prop_map(serde_json::Value::from),
            btree_map(text(), text(), 0..3).prop_map(|m| serde_json::json!(m)),
        ]
    }

    fn archive() -> impl Strategy<Value = Archive> {
        (
            text(),
            hex(64),
            hex(40),
            any::<u64>(),
            btree_map(text(), hex(40), 0..3),
            vec(hex(40), 0..3),
            text(),
            vec(json(), 0..2),
            of((text(), text(), btree_map(text(), hex(40), 0..3), text())),
        )
            .prop_map(
                |(
                    location,
                    sha256,
                    tip,
                    commits,
                    refs,
                    prerequisites,
                    verified_at,
                    receipts,
                    remote,
                )| {
                    Archive {
                        kind: "bundle".into(),
                        location,
                        sha256,
                        tip,
                        commits,
                        refs,
                        prerequisites,
                        verified_at,
                        receipts,
                        remote: remote.map(|(remote, url, refs, read_back_at)| RemoteRefs {
                            remote,
                            url,
                            refs,
                            read_back_at,
                        }),
                    }
                },
            )
    }

    fn tombstone() -> impl Strategy<Value = Tombstone> {
        (
            text(),
            hex(32),
            text(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            json(),
            of((text(), of(hex(40)), any::<bool>(), text())),
        )
            .prop_map(
                |(
                    path,
                    id,
                    removed_at,
                    bytes_reclaimed,
                    free_before,
                    free_after,
                    evidence,
                    branch,
                )| {
                    Tombstone {
                        path,
                        id,
                        removed_at,
                        bytes_reclaimed,
                        free_before,
                        free_after,
                        evidence,
                        branch: branch.map(|(name, old_tip, deleted, detail)| BranchCleanup {
                            name,
                            old_tip,
                            reason: (!deleted).then_some(HoldReason::BranchUnproven),
                            deleted,
                            detail,
                            automatic: false,
                        }),
                    }
                },
            )
    }

    fn event() -> impl Strategy<Value = Event> {
        (
            select(vec!["create", "transition", "held", "archived"]),
            hex(32),
            of(state()),
            of(state()),
            vec(reason(), 0..2),
            vec(text(), 0..2),
            any::<u64>(),
            any::<bool>(),
        )
            .prop_map(
                |(event, id, from, to, reasons, detail, seq, recovered)| Event {
                    event: event.into(),
                    id,
                    from,
                    to,
                    reasons,
                    detail,
                    seq,
                    recovered,
                },
            )
    }

    fn record() -> impl Strategy<Value = Record> {
        let head = (
            hex(32),
            state(),
            text(),
            of(file_id()),
            file_id(),
            any::<bool>(),
            of(text()),
            hex(40),
            owner(),
            any::<u32>(),
            text(),
            of(file_id()),
        );
        let tail = (
            vec(session(), 0..3),
            of(outcome()),
            of((owner(), text(), of(text()))),
            of(archive()),
            vec((text(), vec(reason(), 0..3), vec(text(), 0..2)), 0..3),
            of(tombstone()),
            of(hex(32)),
            (
                any::<u64>(),
                vec(event(), 0..3),
                any::<u64>(),
                of((text(), any::<bool>(), any::<bool>())),
            ),
        );
        (head, tail).prop_map(
            |(
                (
                    id,
                    state,
                    repo,
                    worktree,
                    root,
                    adopted,
                    branch,
                    base,
                    owner,
                    uid,
                    created_at,
                    lease,
                ),
                (
                    sessions,
                    outcome,
                    retention,
                    archive,
                    attempts,
                    tombstone,
                    restored_from,
                    (audit_seq, unaudited, attempts_dropped, intent),
                ),
            )| Record {
                schema: SCHEMA,
                id,
                state,
                repo,
                worktree,
                root,
                origin: if adopted {
                    Origin::Adopted
                } else {
                    Origin::Created
                },
                branch,
                base,
                owner,
                uid,
                created_at,
                lease,
                sessions,
                outcome,
                retention: retention.map(|(owner, reason, until)| Retention {
                    owner,
                    reason,
                    until,
                }),
                archive,
                attempts: attempts
                    .into_iter()
                    .map(|(at, reasons, detail)| Attempt {
                        at,
                        reasons,
                        detail,
                    })
                    .collect(),
                attempts_dropped,
                slot: (audit_seq % 3 != 0).then_some((audit_seq % 7) as u32),
                teardown: None,
                provisioned: Vec::new(),
                tombstone,
                restored_from,
                intent: intent.map(|(at, delete_branch, fetch)| Intent {
                    kind: Intent::RETIRE_WHEN_FREE.into(),
                    at,
                    delete_branch,
                    fetch,
                }),
                audit_seq,
                unaudited,
                pending: Vec::new(),
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn records_round_trip(rec in record()) {
            prop_assert_eq!(parse(&rec.id, &encode(&rec)), Ok(rec));
        }

        #[test]
        fn truncated_records_are_corrupt(rec in record(), cut in any::<proptest::sample::Index>()) {
            let bytes = encode(&rec);
            let cut = cut.index(bytes.len());
            let got = parse(&rec.id, &bytes[..cut]);
            prop_assert!(got.is_err(), "{} of {} bytes parsed as {:?}", cut, bytes.len(), got);
        }

        #[test]
        fn a_record_under_another_name_is_corrupt(rec in record(), other in hex(32)) {
            prop_assume!(other != rec.id);
            prop_assert!(parse(&other, &encode(&rec)).is_err());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..200), id in hex(32)) {
            let _ = parse(&id, &bytes);
        }
    }
}
