//! `lease join`: takes the lease named by `LEASE_*` again, for a process that
//! lost the inherited descriptor, and replaces itself with the command.
//!
//! # Theory of operation
//! A consumer that was started without `LEASE_FD` (Python's `subprocess`
//! closes it by default, so does Node's `child_process`) still has the
//! variables `lease exec` set. `join` turns them back into a lock:
//! 1. `LEASE_FILE` must be `<state root>/leases/<LEASE_ID>.lease` under a
//!    private state root, and `LEASE_IDENTITY` must parse as `<dev>:<ino>`.
//! 2. The file is opened without following symlinks and checked by name and
//!    through the descriptor ([`crate::os::lease::open_checked`]): the inode in
//!    `LEASE_IDENTITY`, a regular file of ours, mode 0600, one link.
//! 3. `LOCK_SH|LOCK_NB`: it fails at once while a retire holds the lease
//!    exclusively (`retire-in-progress`), never waits for it.
//! 4. Identity again through the locked descriptor and by name: a retire that
//!    finished between the open and the lock unlinked the file, so the
//!    descriptor then shows no link.
//! 5. The record must name this lease and be neither `retiring` nor
//!    `removed`. Once the shared lock is held no retire can start, so a
//!    record that passes here stays retirable only after the command exits.
//! 6. The descriptor loses close-on-exec and the process execs the command
//!    with `LEASE_FD` set to its number: the lock lives exactly as long as
//!    the command and every descendant that inherits it.
//!
//! Nothing here calls `LOCK_UN`. A refused join closes its descriptor.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::reason::{self, HoldReason};
use crate::model::record::{FileId, State};
use crate::plan;
use crate::store::registry::{Loaded, Registry};
use crate::store::root::StateRoot;

/// The lease a process was started in, as `lease exec` described it in the
/// environment (`LEASE_ID`, `LEASE_FILE`, `LEASE_IDENTITY`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// `LEASE_ID`: the record id.
    pub id: String,
    /// `LEASE_FILE` and `LEASE_IDENTITY`: the lease file and its inode.
    pub lease: FileId,
}

impl Ticket {
    /// Reads the ticket from this process's environment.
    pub fn from_env() -> Result<Ticket> {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        Ticket::parse(var("LEASE_ID"), var("LEASE_FILE"), var("LEASE_IDENTITY"))
    }

    /// Builds a ticket from the three variables' values. A missing variable
    /// is a usage error; a malformed one is refused as `lease-identity`.
    pub fn parse(
        id: Option<OsString>,
        file: Option<OsString>,
        identity: Option<OsString>,
    ) -> Result<Ticket> {
        let missing = |k: &str| {
            Error::Usage(format!(
                "`{k}` is not set: `lease join` runs only inside a command started by `lease exec`"
            ))
        };
        let bad = |detail: String| Error::refused(HoldReason::LeaseIdentity, detail);
        let id = id.ok_or_else(|| missing("LEASE_ID"))?;
        let file = file.ok_or_else(|| missing("LEASE_FILE"))?;
        let identity = identity.ok_or_else(|| missing("LEASE_IDENTITY"))?;
        let id = id
            .into_string()
            .ok()
            .filter(|i| crate::model::record::is_id(i))
            .ok_or_else(|| bad("`LEASE_ID` is not a record id".into()))?;
        let identity = identity.to_string_lossy().into_owned();
        let (dev, ino) = parse_identity(&identity).ok_or_else(|| {
            bad(format!(
                "`LEASE_IDENTITY` is `{identity}`, not `<dev>:<ino>` in decimal"
            ))
        })?;
        let path = file.into_string().map_err(|f| {
            bad(format!(
                "`LEASE_FILE` `{}` is not UTF-8",
                f.to_string_lossy()
            ))
        })?;
        Ok(Ticket {
            id,
            // No birth time in the environment: the path is tied to the
            // id and checked against the record, which carries one.
            lease: FileId {
                path,
                dev,
                ino,
                btime: None,
            },
        })
    }

    /// Returns the state root the lease file lives in: `LEASE_FILE` must be
    /// exactly `<root>/leases/<LEASE_ID>.lease`, an absolute path.
    fn state_root(&self) -> Result<PathBuf> {
        let path = self.lease.path();
        let wrong = || {
            Error::refused(
                HoldReason::LeaseIdentity,
                format!(
                    "`LEASE_FILE` `{}` is not `<state root>/leases/{}.lease`",
                    path.display(),
                    self.id
                ),
            )
        };
        let expected_name = format!("{}.lease", self.id);
        if !path.is_absolute() || path.file_name() != Some(expected_name.as_ref()) {
            return Err(wrong());
        }
        let leases = path.parent().ok_or_else(wrong)?;
        if leases.file_name() != Some("leases".as_ref()) {
            return Err(wrong());
        }
        leases.parent().map(Path::to_path_buf).ok_or_else(wrong)
    }
}

/// Parses `LEASE_IDENTITY`: `<st_dev>:<st_ino>`, both decimal.
pub fn parse_identity(s: &str) -> Option<(u64, u64)> {
    let (dev, ino) = s.split_once(':')?;
    let num = |t: &str| {
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse().ok())
            .flatten()
    };
    Some((num(dev)?, num(ino)?))
}

/// A lease taken again: the locked descriptor and the command to run with it.
#[derive(Debug)]
pub struct Joined {
    lease: File,
    command: Vec<OsString>,
}

impl Joined {
    /// The program the command names.
    pub fn program(&self) -> &std::ffi::OsStr {
        &self.command[0]
    }

    /// Replaces this process with the command, the lease descriptor
    /// inherited at `LEASE_FD`. Returns only if the exec failed; the
    /// descriptor (and the lock) closes when `self` is dropped.
    pub fn exec(self) -> std::io::Error {
        // The one descriptor the command inherits. This process is about to
        // be replaced and starts no other child, so clearing close-on-exec
        // here cannot leak it anywhere else.
        if let Err(e) = crate::os::process::set_inherited(&self.lease, true) {
            return e;
        }
        let fd = self.lease.as_raw_fd().to_string();
        crate::os::process::exec_no_shell(
            &self.command,
            &[(std::ffi::OsStr::new("LEASE_FD"), std::ffi::OsStr::new(&fd))],
        )
    }
}

/// Takes the lease of `ticket` shared, after every check of the module
/// docs. `Err` means the command must not run (exit 125).
pub fn join(ctx: &crate::ops::Ctx, ticket: &Ticket, command: Vec<OsString>) -> Result<Joined> {
    if command.is_empty() {
        return Err(Error::Usage("no command given after `--`".into()));
    }
    let root = ticket.state_root()?;
    crate::os::atomic::check_private_dir(&root, true)?;
    crate::os::atomic::check_private_dir(&root.join("leases"), false)?;
    let uid = crate::os::process::euid();
    let lease = &ticket.lease;
    let refuse = |h: reason::Hold| Error::refused(h.reason, h.detail);
    let f = crate::os::lease::open_checked(lease, uid).map_err(refuse)?;
    match crate::os::lease::try_shared(&f) {
        Ok(true) => {}
        Ok(false) => {
            return Err(Error::refused(
                HoldReason::RetireInProgress,
                format!(
                    "record {} is being retired: its lease is held exclusively",
                    ticket.id
                ),
            ));
        }
        Err(e) => {
            return Err(Error::refused(
                HoldReason::LockUnsupported,
                format!("cannot lock `{}`: {e}", lease.path),
            ));
        }
    }
    // Again, under the lock: the descriptor, then the name.
    plan::check_lease_seen(lease.id(), uid, crate::os::fs::fstat(&f)).map_err(refuse)?;
    plan::check_lease_seen(lease.id(), uid, crate::os::fs::lstat(&lease.path())).map_err(refuse)?;
    let reg = Registry::new(StateRoot::at(root, &ctx.policy));
    let rec = match reg.load(&ticket.id) {
        Loaded::Ok(r) => r,
        Loaded::Bad { path, problem, .. } if !path.exists() => {
            return Err(Error::refused(
                HoldReason::NotRecorded,
                format!("no record `{}`: {problem}", path.display()),
            ));
        }
        Loaded::Bad { path, problem, .. } => return Err(Error::Record { path, problem }),
    };
    // The record's identity (path, device, inode) must be this lease, and
    // the open file must have the birth time the record carries.
    let named = rec.lease.as_ref().is_some_and(|l| {
        l.path == lease.path
            && l.id() == lease.id()
            && l.same_birth(crate::os::fs::birth(&f.metadata().ok()))
    });
    if !named {
        return Err(Error::refused(
            HoldReason::LeaseIdentity,
            format!(
                "record {} does not name the lease `{}` ({}:{})",
                rec.id, lease.path, lease.dev, lease.ino
            ),
        ));
    }
    match rec.state {
        State::Retiring => Err(Error::refused(
            HoldReason::RetireInProgress,
            format!(
                "record {} is retiring; `lease reap` finishes an interrupted retire",
                rec.id
            ),
        )),
        State::Removed => Err(Error::refused(
            HoldReason::LeaseMissing,
            format!("record {} is removed: the worktree was retired", rec.id),
        )),
        _ => Ok(Joined { lease: f, command }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    fn ticket(file: &str, identity: &str) -> Result<Ticket> {
        Ticket::parse(Some(ID.into()), Some(file.into()), Some(identity.into()))
    }

    #[test]
    fn identities() {
        assert_eq!(parse_identity("2049:131"), Some((2049, 131)));
        // `+1` would parse as a u64: only digits are an identity.
        for bad in [
            "", ":", "1:", ":2", "1:2:3", "0x1:2", "-1:2", "+1:2", "1:+2", "1: 2", "a:b",
        ] {
            assert_eq!(parse_identity(bad), None, "{bad}");
        }
    }

    #[test]
    fn tickets() {
        let file = format!("/s/leases/{ID}.lease");
        let t = ticket(&file, "1:2").unwrap();
        assert_eq!(t.lease.id(), (1, 2));
        assert_eq!(t.state_root().unwrap(), Path::new("/s"));
        let code = |r: Result<Ticket>| r.unwrap_err().reason();
        assert_eq!(
            code(ticket(&file, "12")),
            Some(HoldReason::LeaseIdentity),
            "malformed identity"
        );
        assert!(matches!(
            Ticket::parse(None, Some(file.clone().into()), Some("1:2".into())),
            Err(Error::Usage(_))
        ));
        assert_eq!(
            code(Ticket::parse(
                Some("nope".into()),
                Some(file.into()),
                Some("1:2".into())
            )),
            Some(HoldReason::LeaseIdentity)
        );
        for wrong in [
            format!("s/leases/{ID}.lease"),
            format!("/s/other/{ID}.lease"),
            "/s/leases/ffffffffffffffffffffffffffffffff.lease".to_string(),
            format!("/{ID}.lease"),
        ] {
            let t = ticket(&wrong, "1:2").unwrap();
            assert_eq!(
                t.state_root().unwrap_err().reason(),
                Some(HoldReason::LeaseIdentity),
                "{wrong}"
            );
        }
    }
}
