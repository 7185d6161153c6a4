//! The record of one worktree (SPEC/Record): its states and their legal
//! transitions, the lease's and the worktree's identities, sessions,
//! retention, archive, held attempts, tombstone, and the audit events a
//! change makes. Plain data: `store::registry` reads and writes it.
//!
//! One file past 800 lines on purpose: it is the on-disk schema
//! (docs/record.md), and every noun of it is read with the others (a
//! field's meaning depends on the state table beside it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::fmt::now;
use crate::model::reason::HoldReason;

/// The record schema this build writes and understands.
pub const SCHEMA: u64 = 1;

/// How many launcher sessions a record keeps (SPEC/Record: the last 16).
pub const MAX_SESSIONS: usize = 16;

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
    /// Records `path` with the device, inode and birth time (nanoseconds
    /// since the epoch) an `lstat` of it saw.
    ///
    /// # Errors
    /// [`Malformed`] if `path` is not UTF-8 ([`utf8_path`]).
    pub fn new(path: &Path, dev: u64, ino: u64, btime: Option<u64>) -> Result<FileId, Malformed> {
        Ok(FileId {
            path: utf8_path(path)?,
            dev,
            ino,
            btime,
        })
    }

    /// Returns true unless both birth times are known and differ: the file
    /// seen (born at `btime`, nanoseconds since the epoch) is then a new
    /// file that reused the recorded inode.
    pub fn same_birth(&self, btime: Option<u64>) -> bool {
        match (self.btime, btime) {
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
    /// Parses `KIND:NAME`; both parts non-empty, at most
    /// [`MAX_OWNER_BYTES`] in all.
    ///
    /// # Errors
    /// [`Malformed`] naming what is wrong.
    pub fn parse(s: &str) -> Result<Owner, Malformed> {
        if s.len() > MAX_OWNER_BYTES {
            return Err(Malformed(format!(
                "owner is {} bytes long; the limit is {MAX_OWNER_BYTES}",
                s.len()
            )));
        }
        match s.split_once(':') {
            Some((k, n)) if !k.is_empty() && !n.is_empty() => Ok(Owner {
                kind: k.to_string(),
                name: n.to_string(),
            }),
            _ => Err(Malformed(format!(
                "owner `{s}` is not of the form KIND:NAME"
            ))),
        }
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
    /// Returns true if and only if this session's launcher process still
    /// runs: it recorded no end, and `alive(pid, start_time)` (the process
    /// probe, `os::process::is_alive`) finds that very process.
    pub fn launcher_alive(&self, alive: impl Fn(u32, u64) -> bool) -> bool {
        self.ended_at.is_none() && alive(self.pid, self.start_time)
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
    /// state root's slot lock (`store::registry::Registry::create`); a `removed` record's
    /// slot is free again. Absent in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
    /// The last measured size of the worktree (by `lease du`, or by a
    /// retire's walk; SPEC "Provisioned files, disk, and hygiene": `lease
    /// list` shows it). Absent until measured, and in records written
    /// before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<crate::model::disk::Size>,
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
    /// Builds a `planned` record owned by uid `uid`, made now.
    #[allow(clippy::too_many_arguments)]
    pub fn planned(
        id: String,
        repo: String,
        root: FileId,
        origin: Origin,
        branch: Option<String>,
        base: String,
        owner: Owner,
        uid: u32,
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
            uid,
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
            size: None,
            provisioned: Vec::new(),
            teardown: None,
            restored_from: None,
            intent: None,
            audit_seq: 0,
            unaudited: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// Moves to `to` and queues its `transition` audit line.
    ///
    /// # Errors
    /// [`IllegalTransition`] if SPEC/Record does not allow it; nothing
    /// changes then.
    pub fn set_state(&mut self, to: State) -> Result<(), IllegalTransition> {
        if !self.state.can_become(to) {
            return Err(IllegalTransition {
                id: self.id.clone(),
                from: self.state,
                to,
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
    /// `release`), written with the record by `store::registry`.
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

    /// Returns true if and only if a launcher of this record still runs
    /// ([`Session::launcher_alive`] with the process probe `alive`).
    pub fn any_launcher_alive(&self, alive: impl Fn(u32, u64) -> bool) -> bool {
        self.sessions.iter().any(|s| s.launcher_alive(&alive))
    }

    /// Queues the `create` audit line ahead of any other: the first line
    /// about a new record.
    pub fn queue_created(&mut self) {
        self.pending.insert(
            0,
            Event {
                to: Some(self.state),
                ..Event::note("create", &self.id, vec![], vec![])
            },
        );
    }

    /// True if audit lines are queued since the record was read.
    pub fn has_queued(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Numbers the queued audit lines on from `audit_seq` and keeps them as
    /// `unaudited`, the lines of the write about to be made (the registry
    /// appends them to the log after the record is written).
    pub fn seal_queued(&mut self) {
        let mut events = std::mem::take(&mut self.pending);
        for e in &mut events {
            self.audit_seq += 1;
            e.seq = self.audit_seq;
        }
        self.unaudited = events;
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

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A value a noun refuses (a malformed owner, a path that is not UTF-8):
/// a usage error, exit 2 (`error.rs`). The text says what and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Malformed {}

/// A state change SPEC/Record does not allow: the record is left as it
/// was, and the command fails (`error.rs`: `Error::Record`, exit 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IllegalTransition {
    /// The record id.
    pub id: String,
    /// Its state.
    pub from: State,
    /// The state asked for.
    pub to: State,
}

impl std::fmt::Display for IllegalTransition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not allowed to go from {} to {}",
            self.from.name(),
            self.to.name()
        )
    }
}

impl std::error::Error for IllegalTransition {}

/// Returns the UTF-8 form of a path that will be stored in a record;
/// paths stored in records must be UTF-8 (SPEC/Record).
///
/// # Errors
/// [`Malformed`] naming the path when it is not UTF-8.
pub fn utf8_path(path: &Path) -> Result<String, Malformed> {
    path.to_str().map(str::to_string).ok_or_else(|| {
        Malformed(format!(
            "path `{}` is not UTF-8; lease cannot record it",
            path.display()
        ))
    })
}

/// Returns true if and only if `s` looks like a record id (32 lowercase hex digits).
pub fn is_id(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// One thing that happened to a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// `create`, `transition`, `held`, `archived`, `removed`, ...
    pub event: String,
    /// The record id.
    pub id: String,
    /// State before, for transitions.
    pub from: Option<State>,
    /// State after.
    pub to: Option<State>,
    /// Reason codes, for holds.
    pub reasons: Vec<HoldReason>,
    /// Free-form evidence.
    pub detail: Vec<String>,
    /// The record's sequence number of this event (1 for `create`); 0 for
    /// lines about no record (`repair`) and in logs written before it existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub seq: u64,
    /// True on a line appended late because a crash lost it after its record
    /// was written; `time` is then when it was appended.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recovered: bool,
}

impl Event {
    /// An event about record `id` with no state change.
    pub fn note(event: &str, id: &str, reasons: Vec<HoldReason>, detail: Vec<String>) -> Event {
        Event {
            event: event.into(),
            id: id.into(),
            from: None,
            to: None,
            reasons,
            detail,
            seq: 0,
            recovered: false,
        }
    }
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
        crate::store::registry::new_id().unwrap(),
        "/r/.git".into(),
        root,
        Origin::Created,
        None,
        String::new(),
        Owner::parse("agent:x").unwrap(),
        crate::os::process::euid(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
