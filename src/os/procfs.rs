//! `/proc`: who holds a lease, and gate 4's process-reference audit.
//!
//! `lease list`, `show` and every dry run must not take the exclusive lock (a
//! concurrent `lease join` would then fail), so holders are learned from
//! `/proc` alone: open descriptors on the lease inode (`/proc/PID/fd`, every
//! thread's table) and the flocks `/proc/locks` lists on it. `/proc/locks`
//! proves "locked", never who: it keeps naming the original locker's pid
//! after that process died while a descendant keeps the lock, and a lock
//! whose descriptor is in flight over a unix socket has no descriptor
//! anywhere.
//!
//! [`audit`] is gate 4's process-reference audit: cwd, root, descriptors and
//! mappings inside the worktree, like tmpwatch's `--fuser`, decided by
//! identity (device and inode, reached by `stat` through the `/proc` magic
//! link, which follows the kernel's own reference whatever name the process
//! sees: another mount namespace, a bind-mount alias), for every thread.
//! "Unreadable" is an answer (counted), not a skip.
//!
//! Every `stat` here passes `AT_STATX_DONT_SYNC` (statx(2)): the identity
//! is known locally, and a process whose cwd is on a hung NFS or FUSE mount
//! must not hang lease.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, StatxFlags};

use crate::model::evidence::{FlockSeen, Inventory, LeaseSeen, ProcEvidence};
use crate::os::process::Shared;

/// A file's identity: `(st_dev, st_ino)`.
pub type Id = (u64, u64);

/// The inode number of the initial pid namespace (`PROC_PID_INIT_INO` in
/// the kernel's `include/linux/proc_ns.h`, fixed since Linux 3.8).
const INIT_PID_NS_INO: u64 = 0xEFFF_FFFC;

/// How many of a process's distinct descriptor tables (or cwd/root pairs)
/// a thread is compared with before it is read anyway: bounds kcmp(2)
/// calls for a process whose every thread unshared its table.
const COMPARE_AT_MOST: usize = 4;

/// `statx` through `link`, following it (a `/proc` magic link reaches the
/// kernel's own object), without syncing: the identity it reaches.
fn id_through(link: &Path) -> std::io::Result<Id> {
    let st = rustix::fs::statx(
        rustix::fs::CWD,
        link,
        AtFlags::STATX_DONT_SYNC,
        StatxFlags::INO,
    )?;
    Ok((
        rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
        st.stx_ino,
    ))
}

/// True if the error means "closed to us" (another user's process), not
/// "gone" (a reaped pid, a zombie's released entries).
fn is_denied(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::PermissionDenied
}

/// Which processes this `/proc` can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PidView {
    /// Its pid namespace is this process's own, so the numbers it lists are
    /// the ones kcmp(2) takes.
    own: bool,
    /// Its pid namespace is the initial one (`None`: cannot tell): only
    /// then does `/proc/locks` list every flock and `/proc` every process.
    initial: Option<bool>,
}

/// Reads [`PidView`]: `NSpid` of `/proc/self/status` has one field exactly
/// when this `/proc` belongs to our own pid namespace (proc(5)); the
/// namespace's identity is the inode of `/proc/self/ns/pid` (ours) or of
/// `/proc/1/ns/pid` (that `/proc`'s init, when another).
fn pid_view() -> PidView {
    let own = fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("NSpid:")
                    .map(|v| v.split_whitespace().count())
            })
        })
        .is_some_and(|n| n == 1);
    let ns = if own {
        "/proc/self/ns/pid"
    } else {
        "/proc/1/ns/pid"
    };
    PidView {
        own,
        initial: id_through(Path::new(ns))
            .ok()
            .map(|(_, ino)| ino == INIT_PID_NS_INO),
    }
}

/// The device number (`st_dev` encoding) that mount `mnt_id` of this
/// process's mount namespace has in `/proc/self/mountinfo` (field 3, the
/// superblock's `s_dev`, which `/proc/PID/maps` and `/proc/locks` use), or
/// `None` if it is not listed.
pub fn superblock_dev(mnt_id: u64) -> Option<u64> {
    parse_mountinfo_dev(&fs::read("/proc/self/mountinfo").ok()?, mnt_id)
}

/// [`superblock_dev`]'s parser: the line whose first field is `mnt_id`,
/// its third field `MAJOR:MINOR` (decimal).
fn parse_mountinfo_dev(text: &[u8], mnt_id: u64) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?;
    text.lines().find_map(|l| {
        let mut f = l.split(' ');
        if f.next()?.parse::<u64>().ok()? != mnt_id {
            return None;
        }
        let (maj, min) = f.nth(1)?.split_once(':')?;
        Some(rustix::fs::makedev(maj.parse().ok()?, min.parse().ok()?))
    })
}

/// One live process in `/proc`: its pid and its threads, the leader first.
struct Proc {
    pid: u32,
    base: PathBuf,
    tids: Vec<u32>,
}

impl Proc {
    /// `/proc/PID/task/TID`.
    fn task(&self, tid: u32) -> PathBuf {
        self.base.join("task").join(tid.to_string())
    }

    /// " (thread TID)" for a thread other than the leader, for reports.
    fn thread(&self, tid: u32) -> String {
        if tid == self.pid {
            String::new()
        } else {
            format!(" (thread {tid})")
        }
    }

    /// The threads whose `what` (descriptor table, or cwd and root) must be
    /// read: the first, then each one that kcmp(2) does not prove shares it
    /// with a thread already chosen. When kcmp cannot say (no kcmp, a `/proc`
    /// of another pid namespace, or `EPERM`: kcmp checks ptrace access with
    /// the real credentials, which a process whose permitted capabilities
    /// exceed ours fails even where its `/proc` entries are readable, seen
    /// for a container's init), every thread: then that process costs its
    /// threads times its descriptors, never less safety.
    fn distinct(&self, what: Shared, kcmp: bool) -> Vec<u32> {
        let mut chosen: Vec<u32> = Vec::new();
        for &t in &self.tids {
            let shared = kcmp
                && chosen
                    .iter()
                    .take(COMPARE_AT_MOST)
                    .any(|&c| crate::os::process::shares(c, t, what) == Some(true));
            if !shared {
                chosen.push(t);
            }
        }
        chosen
    }
}

/// Every process in `/proc` but this one, with its threads (`/proc/PID/task`;
/// a process whose task list cannot be read counts as its leader alone), or
/// `None` if `/proc` cannot be listed.
fn other_processes() -> Option<impl Iterator<Item = Proc>> {
    let me = std::process::id();
    let dir = fs::read_dir("/proc").ok()?;
    Some(dir.flatten().filter_map(move |e| {
        let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
        if pid == me {
            return None;
        }
        let base = e.path();
        let mut tids: Vec<u32> = fs::read_dir(base.join("task"))
            .map(|d| {
                d.flatten()
                    .filter_map(|t| t.file_name().to_str()?.parse().ok())
                    .filter(|&t| t != pid)
                    .collect()
            })
            .unwrap_or_default();
        tids.sort_unstable();
        tids.insert(0, pid);
        Some(Proc { pid, base, tids })
    }))
}

/// Calls `each(fd number, identity)` for every descriptor of `p`, in every
/// distinct descriptor table of its threads (a thread that called
/// `unshare(CLONE_FILES)` has its own; a leader that exited has none left).
/// Returns the thread of each descriptor too, and whether a table was
/// closed to us.
fn each_fd(p: &Proc, kcmp: bool, mut each: impl FnMut(u32, &str, Id)) -> bool {
    let mut denied = false;
    for tid in p.distinct(Shared::Files, kcmp) {
        match fs::read_dir(p.task(tid).join("fd")) {
            Ok(fds) => {
                for fd in fds.flatten() {
                    if let Ok(id) = id_through(&fd.path()) {
                        each(tid, &fd.file_name().to_string_lossy(), id);
                    }
                }
            }
            Err(e) if is_denied(&e) => denied = true,
            Err(_) => {} // gone, or a thread that exited
        }
    }
    denied
}

/// Returns the pids of other processes (never this one, whose own probe
/// opens do not count) with an open descriptor on the file whose identity is
/// `id`, sorted, and how many processes could not be read (other users'
/// `/proc` entries are unreadable unless we are root).
pub fn holders(id: Id) -> (Vec<u32>, usize) {
    let mut pids = Vec::new();
    let mut unreadable = 0;
    let Some(procs) = other_processes() else {
        return (pids, 1);
    };
    let kcmp = pid_view().own;
    for p in procs {
        let mut holds = false;
        let denied = each_fd(&p, kcmp, |_, _, seen| holds |= seen == id);
        if holds {
            pids.push(p.pid);
        } else if denied {
            unreadable += 1;
        }
    }
    pids.sort_unstable();
    (pids, unreadable)
}

/// Returns, for each file identity in `ids`, the pids of other processes
/// holding a descriptor on it, from one scan of `/proc` (what [`holders`]
/// does per file; a listing of many records must not rescan `/proc` for
/// each). Identities nobody holds map to an empty list.
pub fn holders_of(ids: &[Id]) -> HashMap<Id, Vec<u32>> {
    let mut map: HashMap<Id, Vec<u32>> = ids.iter().map(|id| (*id, Vec::new())).collect();
    if ids.is_empty() {
        return map;
    }
    let kcmp = pid_view().own;
    for p in other_processes().into_iter().flatten() {
        each_fd(&p, kcmp, |_, _, seen| {
            if let Some(pids) = map.get_mut(&seen)
                && !pids.contains(&p.pid)
            {
                pids.push(p.pid);
            }
        });
    }
    for pids in map.values_mut() {
        pids.sort_unstable();
    }
    map
}

/// The flocks `/proc/locks` lists, read once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flocks {
    /// `(device, inode, exclusive, waiting)` per `FLOCK` line; the device
    /// is the superblock's (`st_dev` encoding). A waiting line (`->`) is a
    /// blocked request, not a holder.
    locks: Vec<(u64, u64, bool, bool)>,
    /// This `/proc` lists every flock (its pid namespace is the initial one).
    complete: bool,
}

impl Flocks {
    /// Reads `/proc/locks`, or `None` if it cannot be read.
    pub fn read() -> Option<Flocks> {
        let text = fs::read("/proc/locks").ok()?;
        let mut f = Flocks::parse(&text);
        f.complete = pid_view().initial == Some(true);
        Some(f)
    }

    /// Parses `/proc/locks` (proc(5)): `1: FLOCK  ADVISORY  READ 1234
    /// fd:01:5678 0 EOF`, a blocked request `1: -> FLOCK ...`; the device is
    /// `MAJOR:MINOR` in hex. POSIX and OFD locks do not conflict with
    /// flock(2) on Linux and are skipped.
    fn parse(text: &[u8]) -> Flocks {
        let text = String::from_utf8_lossy(text);
        let locks = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace().skip(1).peekable();
                let waiting = f.next_if_eq(&"->").is_some();
                if f.next()? != "FLOCK" {
                    return None;
                }
                let exclusive = f.nth(1)? == "WRITE";
                let mut id = f.nth(1)?.split(':');
                let maj = u32::from_str_radix(id.next()?, 16).ok()?;
                let min = u32::from_str_radix(id.next()?, 16).ok()?;
                let ino = id.next()?.parse().ok()?;
                Some((rustix::fs::makedev(maj, min), ino, exclusive, waiting))
            })
            .collect();
        Flocks {
            locks,
            complete: false,
        }
    }

    /// The flock held on the file `id` (`st_dev`, inode), whose mount's
    /// superblock device is `table_dev` when that differs from `st_dev`: an
    /// exclusive one if any, else a shared one, else `None`.
    pub fn on(&self, id: Id, table_dev: Option<u64>) -> Option<FlockSeen> {
        let mut seen = None;
        for &(dev, ino, exclusive, waiting) in &self.locks {
            if waiting || ino != id.1 || (dev != id.0 && Some(dev) != table_dev) {
                continue;
            }
            if exclusive {
                return Some(FlockSeen::Exclusive);
            }
            seen = Some(FlockSeen::Shared);
        }
        seen
    }

    /// True if any line, a blocked request included, names file `id`.
    fn names(&self, id: Id, table_dev: Option<u64>) -> bool {
        self.locks
            .iter()
            .any(|&(dev, ino, ..)| ino == id.1 && (dev == id.0 || Some(dev) == table_dev))
    }

    /// True if this `/proc` lists every flock (see [`LeaseSeen::complete`]).
    pub fn complete(&self) -> bool {
        self.complete
    }
}

/// The superblock device of the mount holding `path` (not followed), when
/// it differs from the file's `st_dev` (btrfs), for matching `/proc/locks`.
pub fn table_dev_of(path: &Path) -> Option<u64> {
    let st = rustix::fs::statx(
        rustix::fs::CWD,
        path,
        AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC,
        StatxFlags::MNT_ID,
    )
    .ok()?;
    if st.stx_mask & StatxFlags::MNT_ID.bits() == 0 {
        return None;
    }
    let dev = rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor);
    superblock_dev(st.stx_mnt_id).filter(|&d| d != dev)
}

/// Who holds the lease file `path` whose identity is `id`, learned from
/// `/proc` only: descriptors ([`holders`]) and `/proc/locks` ([`Flocks`]).
/// What `lease show`, the dry runs and the reconciler's checks decide on
/// ([`crate::plan::gate_lease_seen`]).
pub fn lease_seen(path: &Path, id: Id) -> LeaseSeen {
    let (pids, _) = holders(id);
    let flocks = Flocks::read();
    LeaseSeen {
        pids,
        lock: flocks.as_ref().and_then(|f| f.on(id, table_dev_of(path))),
        complete: flocks.is_some_and(|f| f.complete),
    }
}

/// Returns false only if `/proc/locks` was read and lists no flock at all
/// (held or requested) on the file whose inode is `ino` on device `dev`:
/// then no process holds that lease and [`holders`]' scan of every process
/// can be skipped.
pub fn lock_listed(dev: u64, ino: u64) -> bool {
    Flocks::read().is_none_or(|f| f.names((dev, ino), None))
}

/// Returns true if `/proc/locks` shows an exclusive (WRITE) flock on the
/// file whose inode is `ino` on device `dev`: a retire holds the lease now.
pub fn exclusively_locked(dev: u64, ino: u64) -> bool {
    Flocks::read().is_some_and(|f| f.on((dev, ino), None) == Some(FlockSeen::Exclusive))
}

/// What a worktree is, for gate 4: the identities lease's inventory walk
/// reached ([`Inventory::ids`]), and for `/proc/PID/maps`, which numbers
/// devices by superblock, the same inodes under [`Inventory::table_dev`].
struct Tree<'a> {
    ids: &'a HashSet<Id>,
    table_inos: HashSet<u64>,
    table_dev: Option<u64>,
}

impl<'a> Tree<'a> {
    fn of(inv: &'a Inventory) -> Tree<'a> {
        Tree {
            ids: &inv.ids,
            table_inos: match inv.table_dev {
                Some(_) => inv.ids.iter().map(|&(_, ino)| ino).collect(),
                None => HashSet::new(),
            },
            table_dev: inv.table_dev,
        }
    }

    fn has(&self, id: Id) -> bool {
        self.ids.contains(&id)
    }

    /// A mapping's `(device, inode)` as `/proc/PID/maps` prints them.
    fn has_mapped(&self, id: Id) -> bool {
        self.has(id) || (Some(id.0) == self.table_dev && self.table_inos.contains(&id.1))
    }
}

/// Finds every live process (but this one) with, in any of its threads, a
/// cwd or root that is a directory of the worktree, a descriptor on one of
/// its entries, a mapping of one of its files, or a descriptor on the lease
/// inode `lease`. Inside means one of `inv`'s identities (lease's own walk
/// of the tree, [`Inventory::ids`]), never a path prefix. Processes whose
/// entries cannot be read (other users', unless we are root) are counted in
/// `unaudited`. Cost: one pass over `/proc`, linear in processes, threads
/// and descriptors, with a hash lookup per identity.
///
/// `wt` is the worktree's path, only to tell whether other users can reach
/// it. `strict` is `process_audit = "strict"` (`LEASE_PROCESS_AUDIT=strict`).
pub fn audit(wt: &Path, inv: &Inventory, lease: Option<Id>, strict: bool) -> ProcEvidence {
    let mut ev = ProcEvidence {
        traversable: crate::os::fs::traversable_by_others(wt),
        strict,
        ..ProcEvidence::default()
    };
    let Some(procs) = other_processes() else {
        ev.unaudited = usize::MAX;
        return ev;
    };
    let tree = Tree::of(inv);
    let kcmp = pid_view().own;
    for p in procs {
        let (how, denied) = audit_one(&p, &tree, lease, kcmp);
        if !how.is_empty() {
            ev.users.push((p.pid, how.join(", ")));
        } else if denied {
            ev.unaudited += 1;
        }
    }
    ev.users.sort();
    ev
}

/// What one process holds inside the tree or on the lease inode `lease`:
/// how ("cwd", "root", "fd 3", "lease fd 4", "mapping", with " (thread
/// TID)" when a thread other than the leader holds it), and whether any
/// of its entries was closed to us (`PermissionDenied`). A process that is
/// gone or a zombie (its entries missing) holds nothing and is not a denial.
fn audit_one(p: &Proc, tree: &Tree<'_>, lease: Option<Id>, kcmp: bool) -> (Vec<String>, bool) {
    let mut how: Vec<String> = Vec::new();
    let mut denied = false;
    // cwd and root are per thread (CLONE_FS); a leader that exited has none.
    for tid in p.distinct(Shared::Fs, kcmp) {
        for link in ["cwd", "root"] {
            match id_through(&p.task(tid).join(link)) {
                Ok(id) if tree.has(id) => how.push(format!("{link}{}", p.thread(tid))),
                Ok(_) => {}
                Err(e) if is_denied(&e) => denied = true,
                Err(_) => {}
            }
        }
    }
    denied |= each_fd(p, kcmp, |tid, fd, id| {
        if tree.has(id) {
            how.push(format!("fd {fd}{}", p.thread(tid)));
        } else if Some(id) == lease {
            how.push(format!("lease fd {fd}{}", p.thread(tid)));
        }
    });
    // Threads share one address space; a leader that exited shows none, so
    // read the first thread that still has one.
    for &tid in &p.tids {
        match fs::read(p.task(tid).join("maps")) {
            Ok(maps) if maps.is_empty() => continue,
            Ok(maps) => {
                if mapped_ids(&maps).any(|id| tree.has_mapped(id)) {
                    how.push("mapping".into());
                }
                break;
            }
            Err(e) if is_denied(&e) => {
                denied = true;
                break;
            }
            Err(_) => continue,
        }
    }
    how.dedup();
    (how, denied)
}

/// The `(device, inode)` of every file mapping in a `/proc/PID/maps` text
/// (proc(5): `address perms offset MAJOR:MINOR inode path`, the device in
/// hex, the inode in decimal; inode 0 is an anonymous mapping).
fn mapped_ids(maps: &[u8]) -> impl Iterator<Item = Id> + '_ {
    maps.split(|&b| b == b'\n').filter_map(|line| {
        let mut f = line.split(|&b| b == b' ').filter(|w| !w.is_empty()).skip(3);
        let dev = std::str::from_utf8(f.next()?).ok()?;
        let ino: u64 = std::str::from_utf8(f.next()?).ok()?.parse().ok()?;
        let (maj, min) = dev.split_once(':')?;
        let dev = rustix::fs::makedev(
            u32::from_str_radix(maj, 16).ok()?,
            u32::from_str_radix(min, 16).ok()?,
        );
        (ino != 0).then_some((dev, ino))
    })
}

/// The process-tree fields of one `/proc/<pid>/stat` line (proc(5)):
/// fields 4 `ppid`, 6 `session` and 7 `tty_nr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeIds {
    /// The parent's pid (0 for a process of the kernel or pid 1).
    pub ppid: u32,
    /// The session id: the pid of the session's leader (setsid(2)).
    pub session: u32,
    /// The controlling terminal's device number; 0 when there is none.
    pub tty_nr: u64,
}

/// Reads [`TreeIds`] of process `pid`, or `None` if it is gone or its stat
/// line cannot be parsed.
pub fn tree_ids(pid: u32) -> Option<TreeIds> {
    parse_tree_ids(&fs::read(format!("/proc/{pid}/stat")).ok()?)
}

/// Parses [`TreeIds`] out of a `/proc/<pid>/stat` line. The command name
/// (field 2) may hold spaces and parentheses, so fields are counted after
/// the last `)`: state, ppid, pgrp, session, tty_nr.
fn parse_tree_ids(stat: &[u8]) -> Option<TreeIds> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    let f: Vec<&str> = rest.split_ascii_whitespace().take(5).collect();
    let [_state, ppid, _pgrp, session, tty] = f.as_slice() else {
        return None;
    };
    Some(TreeIds {
        ppid: ppid.parse().ok()?,
        session: session.parse().ok()?,
        tty_nr: tty.parse::<i64>().ok()?.try_into().ok()?,
    })
}

/// The chain of pids from `pid` up through each parent (`pid` first),
/// ending at pid 1 or at the first process whose stat cannot be read. At
/// most 4096 entries, so a pid reused into a loop while we read cannot
/// make it endless.
pub fn ancestry(pid: u32) -> Vec<u32> {
    let mut chain = vec![pid];
    let mut at = pid;
    while chain.len() < 4096 {
        match tree_ids(at) {
            Some(t) if t.ppid != 0 && !chain.contains(&t.ppid) => {
                chain.push(t.ppid);
                at = t.ppid;
            }
            _ => break,
        }
    }
    chain
}

/// The command name of process `pid` (`/proc/<pid>/comm`, at most 15
/// bytes, proc(5)), without its newline; `None` if it is gone.
pub fn comm(pid: u32) -> Option<String> {
    let c = fs::read(format!("/proc/{pid}/comm")).ok()?;
    Some(String::from_utf8_lossy(c.strip_suffix(b"\n").unwrap_or(&c)).into_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
