//! What the probes saw: plain structs that `plan` decides over. Nothing
//! here reads a file, runs a process or calls git; the probes that fill
//! these live in the adapters.

use serde::Serialize;

/// The file-type bits of `st_mode`, and the values for a directory and a
/// regular file (inode(7); the same on every Linux architecture).
const S_IFMT: u32 = 0o170_000;
const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;

/// Identity of a file or directory as seen by `lstat` (never following symlinks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
    /// `st_uid`.
    pub uid: u32,
    /// `st_mode` (type and permission bits).
    pub mode: u32,
    /// `st_nlink`.
    pub nlink: u64,
}

impl Seen {
    /// Returns true if and only if this is a directory (not a symlink to one).
    pub fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }
    /// Returns true if and only if this is a regular file.
    pub fn is_file(&self) -> bool {
        self.mode & S_IFMT == S_IFREG
    }
}

/// What gate 2 observed of the worktree's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEvidence {
    /// `lstat` of the recorded path, `None` if it is missing.
    pub seen: Option<Seen>,
    /// True if the path equals its canonical, physical form (no symlinked ancestor, no `..`).
    pub canonical: bool,
    /// True if the `.git` file points at the admin directory whose `gitdir` points back.
    pub linked_back: bool,
    /// git's own lock on the registration (`git worktree lock`), judged
    /// against this record and state root.
    pub lock: LockSeen,
    /// True if the exact path is listed by `git worktree list --porcelain -z`.
    pub listed: bool,
    /// True if the path is the repository's main worktree.
    pub is_main: bool,
    /// True if lease's own current directory is inside the worktree.
    pub cwd_inside: bool,
}

/// git's own lock on a worktree registration (`$GIT_COMMON_DIR/worktrees/<name>/locked`,
/// git-worktree(1) "lock"), as gate 2 and adoption judge it (SPEC "A lease
/// every tool can see").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockSeen {
    /// No `locked` file.
    Unlocked,
    /// The lock lease keeps for this record in this state root.
    Ours,
    /// A lease lock naming another record or another state root.
    Lease {
        /// The record id the reason names.
        id: String,
        /// The state root the reason names, as written there.
        root: String,
    },
    /// Any other lock, with git's reason (empty for a lock without one).
    Other(String),
}

/// What gate 3 observed of the lease file, before and after locking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockOutcome {
    /// `LOCK_EX|LOCK_NB` succeeded.
    Acquired,
    /// `EWOULDBLOCK`: someone holds it.
    Busy,
    /// Any other error (`ENOLCK`, `EOPNOTSUPP`, ...), as text.
    Error(String),
}

/// One entry of `git status --porcelain=v1 -z`: the two status letters and the path bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusEntry {
    /// `XY` of porcelain v1 (`??` untracked, `!!` ignored).
    pub xy: [u8; 2],
    /// The path, relative to the worktree's top, as raw bytes.
    pub path: Vec<u8>,
}

/// What gate 5 found in the worktree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContentEvidence {
    /// Entries of `git status --porcelain=v1 -z --untracked-files=all --ignored=matching`.
    pub status: Vec<StatusEntry>,
    /// Paths with skip-worktree or assume-unchanged whose file exists and differs.
    pub hidden: Vec<Vec<u8>>,
    /// Operations in progress found in the worktree's git dir (`MERGE_HEAD`, `rebase-merge`, ...).
    pub ops: Vec<String>,
    /// Output paths the operator declared rebuildable (relative to the top,
    /// normal, no trailing `/`): ignored entries at or below them do not hold.
    pub rebuildable: Vec<Vec<u8>>,
    /// Paths that look changed in the worktree (status ` M`, or a hidden
    /// index entry that differs) and whose `filter` attribute names a
    /// driver, with how far lease could run it.
    pub filtered: Vec<FilteredPath>,
    /// Paths provisioned at creation (relative to the top, raw bytes) and
    /// whether each is still what was provisioned (SPEC "Provisioned
    /// files, disk, and hygiene"): an unchanged one is not work.
    pub provisioned: Vec<(Vec<u8>, bool)>,
}

/// A changed-looking path whose `filter` attribute names a driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilteredPath {
    /// The path, relative to the top, raw bytes.
    pub path: Vec<u8>,
    /// The driver named by `filter=<driver>`.
    pub driver: Vec<u8>,
    /// Whether the probe ran the driver.
    pub trust: FilterTrust,
}

/// Whether the status probe ran a filter driver (SPEC "Truthful content
/// probes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterTrust {
    /// In `trusted_filters` and defined by the user's git config: the probe
    /// ran it, so a path that still differs is a real change.
    Ran,
    /// Not in `trusted_filters`: neutralized, the path cannot be judged.
    Untrusted,
    /// In `trusted_filters`, but the user's git config defines neither its
    /// `clean` nor its `process` command.
    Undefined,
    /// In `trusted_filters`, defined by the user with `clean` only, while
    /// the repository's config sets its `process` (which git would run
    /// instead).
    Shadowed,
}

impl ContentEvidence {
    /// Returns the ignored entries that lie at or below a declared
    /// rebuildable path (these lease deletes itself before removal).
    pub fn rebuildable_ignored(&self) -> Vec<Vec<u8>> {
        self.status
            .iter()
            .filter(|e| &e.xy == b"!!" && is_rebuildable(&e.path, &self.rebuildable))
            .map(|e| e.path.strip_suffix(b"/").unwrap_or(&e.path).to_vec())
            .collect()
    }
}

/// Returns true if `path` (git's, maybe with a trailing `/` for a directory)
/// equals a declared path or lies below it, by whole components.
pub fn is_rebuildable(path: &[u8], declared: &[Vec<u8>]) -> bool {
    let path = path.strip_suffix(b"/").unwrap_or(path);
    declared
        .iter()
        .any(|d| path == d.as_slice() || (path.starts_with(d) && path.get(d.len()) == Some(&b'/')))
}

/// Paths a retire must never remove, whatever the record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protected {
    /// The worktree root (for an adopted worktree, its recorded parent).
    pub root: std::path::PathBuf,
    /// The repository's common git dir.
    pub common: std::path::PathBuf,
    /// lease's state root.
    pub state_root: std::path::PathBuf,
    /// `$HOME`, if set.
    pub home: Option<std::path::PathBuf>,
}

/// What lease's own `lstat` walk of a worktree found (gate 5). Paths are
/// relative to the top, as raw bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    /// Sum of `st_size` over every non-directory entry, in bytes.
    pub bytes: u64,
    /// Every regular file and symlink the walk counted in `bytes` (a
    /// nested repository's `.git` file too), with its `st_size` in bytes:
    /// what `lease du` classifies by git's status.
    pub files: Vec<(Vec<u8>, u64)>,
    /// Entries on another mount than the top (bind mounts included).
    pub mounts: Vec<Vec<u8>>,
    /// FIFOs, sockets, device nodes.
    pub special: Vec<Vec<u8>>,
    /// Directories or entries the walk could not read.
    pub unreadable: Vec<Vec<u8>>,
    /// Directories below the top that hold a `.git` (directory or gitlink file).
    pub nested: Vec<Vec<u8>>,
    /// Directories lease could not delete from (no write or search permission).
    pub not_writable: Vec<Vec<u8>>,
    /// Entries the kernel refuses to delete whoever asks, root included: the
    /// immutable or append-only attribute (`chattr +i` / `+a`; `statx`
    /// `STATX_ATTR_IMMUTABLE` / `STATX_ATTR_APPEND`, statx(2)). git would
    /// delete the rest of the tree around them, then the admin entry.
    pub pinned: Vec<Vec<u8>>,
    /// `(dev, ino)` of every directory walked, the top included.
    pub dirs: Vec<(u64, u64)>,
    /// `(dev, ino)` of the top and of every entry the walk reached on the
    /// top's mount (directories, files, symlinks, special files): what gate
    /// 4 judges a process's cwd, root, descriptors and mappings against.
    /// `dev` is `st_dev`.
    pub ids: std::collections::HashSet<(u64, u64)>,
    /// The device number the kernel's own tables (`/proc/PID/maps`,
    /// `/proc/locks`: the superblock's `s_dev`) give the top's mount, when
    /// it differs from `st_dev` (a btrfs subvolume reports its own
    /// anonymous `st_dev`); from `/proc/self/mountinfo`. `None` when equal
    /// or unknown.
    pub table_dev: Option<u64>,
    /// The `statx` data of every entry the walk reached on the top's
    /// mount, the top included, in walk order ([`EntryStat`]): what gate 7
    /// compares with a second walk (`plan::tree_unchanged`, a floor above).
    pub stats: Vec<EntryStat>,
}

/// One entry of a walk as `statx(2)` saw it: identity, type and mode,
/// size in bytes, and the modification and status-change times in
/// nanoseconds since the epoch. A write, create, delete or rename changes
/// the entry's own size, mtime or ctime, or its directory's; a chmod,
/// chown or link count change its ctime; and no process can set a ctime
/// (stat(2), inode(7): it is the kernel's clock at the last change), so
/// two walks that see the same list saw the same tree. `Default` (all
/// zeros) stands for a file that does not exist.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EntryStat {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
    /// `st_mode` (type and permission bits).
    pub mode: u32,
    /// `st_size`, in bytes.
    pub size: u64,
    /// `st_mtime`, in nanoseconds.
    pub mtime_ns: i128,
    /// `st_ctime`, in nanoseconds.
    pub ctime_ns: i128,
}

/// What the process-reference audit of gate 4 found (`os::procfs::audit`:
/// inside means one of the identities of lease's walk, in any thread).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcEvidence {
    /// Processes using the worktree or the lease inode: pid and how
    /// (`cwd`, `root`, `fd 3`, `lease fd 4`, `mapping`; ` (thread TID)` when
    /// a thread other than the leader holds it).
    pub users: Vec<(u32, String)>,
    /// Processes whose `/proc` entries could not be read.
    pub unaudited: usize,
    /// True if other users can traverse to the worktree (an adopted worktree
    /// under a 0755 parent); then unaudited processes could be inside.
    pub traversable: bool,
    /// `process_audit = "strict"`: unaudited processes hold.
    pub strict: bool,
}

/// How `/proc/locks` lists a flock on one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlockSeen {
    /// `LOCK_SH` (`READ`): consumers hold the lease.
    Shared,
    /// `LOCK_EX` (`WRITE`): a retire holds it.
    Exclusive,
}

/// Who holds a lease, as far as `/proc` tells without touching the lock
/// (what `lease list`, `show` and every dry run know; SPEC gate 4).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseSeen {
    /// Other processes with a descriptor on the lease inode, sorted.
    pub pids: Vec<u32>,
    /// The flock `/proc/locks` lists on the lease inode, if any. It proves
    /// "locked", never who: the pid it shows is the original locker's,
    /// which may be long dead while a descendant keeps the lock, and a
    /// lock whose descriptor is in flight over a unix socket, or held in
    /// another pid namespace, has no visible descriptor at all.
    pub lock: Option<FlockSeen>,
    /// True when this `/proc` lists every flock: its pid namespace is the
    /// initial one. Elsewhere the kernel omits from `/proc/locks` every
    /// lock whose locker it cannot show (`locks_show` in `fs/locks.c`),
    /// so a free-looking lease proves nothing.
    pub complete: bool,
}

impl LeaseSeen {
    /// True if `/proc` shows the lease held: a descriptor or a flock.
    pub fn held(&self) -> bool {
        !self.pids.is_empty() || self.lock.is_some()
    }

    /// Who holds it, for a hold's detail: "pid 12, 34", else what
    /// `/proc/locks` showed.
    pub fn describe(&self) -> String {
        if !self.pids.is_empty() {
            let pids: Vec<String> = self.pids.iter().map(u32::to_string).collect();
            return format!("pid {}", pids.join(", "));
        }
        match self.lock {
            Some(kind) => format!(
                "a {} flock listed in /proc/locks, by no process this /proc shows (a holder in another pid namespace, or a descriptor in flight over a unix socket)",
                match kind {
                    FlockSeen::Shared => "shared",
                    FlockSeen::Exclusive => "exclusive",
                }
            ),
            None => "nobody visible".to_string(),
        }
    }
}

/// A filter driver the operator trusts (`trusted_filters`), as the user's
/// own git config defines it (SPEC "Truthful content probes"). Recorded in
/// the retire report: these commands ran in the status probe.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TrustedFilter {
    /// The driver name (`lfs`).
    pub driver: String,
    /// `filter.<driver>.clean`, if the user's config sets it.
    pub clean: Option<String>,
    /// `filter.<driver>.process`, if set.
    pub process: Option<String>,
    /// `filter.<driver>.required`, if set.
    pub required: Option<String>,
    /// Where the last definition came from (`global file:/home/me/.gitconfig`).
    pub origin: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_bits_are_the_kernel_s() {
        assert_eq!(S_IFMT, libc::S_IFMT);
        assert_eq!(S_IFDIR, libc::S_IFDIR);
        assert_eq!(S_IFREG, libc::S_IFREG);
        let seen = |mode| Seen {
            dev: 1,
            ino: 2,
            uid: 0,
            mode,
            nlink: 1,
        };
        assert!(seen(libc::S_IFDIR | 0o700).is_dir());
        assert!(!seen(libc::S_IFLNK | 0o777).is_dir());
        assert!(seen(libc::S_IFREG | 0o600).is_file());
        assert!(!seen(libc::S_IFIFO | 0o600).is_file());
    }
}
