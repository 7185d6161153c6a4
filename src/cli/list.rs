//! `lease list`: every record, its state and holders.

use super::exit;
use crate::error::Result;
use crate::paths::StateRoot;
use crate::registry::{Loaded, Record, Registry, State};

/// The arguments of `lease list`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Print JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease list`.
pub(super) fn run(a: Args) -> Result<u8> {
    list(a.json)
}

/// A record as JSON with its current `holders` (pids, from `holders`, a
/// map built by one `/proc` scan).
/// What `/proc` says about the leases of a listing: descriptors per lease
/// (one scan of `/proc`), the flocks of `/proc/locks` (one read), and the
/// superblock device of the lease directory's mount when it differs from
/// `st_dev` (btrfs), to match `/proc/locks` lines.
pub(super) struct SeenLeases {
    holders: std::collections::HashMap<(u64, u64), Vec<u32>>,
    flocks: Option<crate::os::procfs::Flocks>,
    table_dev: Option<u64>,
}

impl SeenLeases {
    pub(super) fn of(reg: &Registry, ids: &[(u64, u64)]) -> SeenLeases {
        SeenLeases {
            holders: crate::os::procfs::holders_of(ids),
            flocks: crate::os::procfs::Flocks::read(),
            table_dev: crate::os::procfs::table_dev_of(&reg.root().leases()),
        }
    }

    /// What `/proc` shows of record `r`'s lease (a removed record's lease
    /// file was unlinked: its inode number may name another file now).
    pub(super) fn of_record(&self, r: &Record) -> crate::plan::LeaseSeen {
        let Some(l) = r.lease.as_ref().filter(|_| r.state != State::Removed) else {
            return crate::plan::LeaseSeen {
                complete: true,
                ..Default::default()
            };
        };
        crate::plan::LeaseSeen {
            pids: self.holders.get(&l.id()).cloned().unwrap_or_default(),
            lock: self
                .flocks
                .as_ref()
                .and_then(|f| f.on(l.id(), self.table_dev)),
            complete: self.flocks.as_ref().is_some_and(|f| f.complete()),
        }
    }
}

/// `holders` (pids with a descriptor on the lease) and `locked`: `shared`
/// or `exclusive` when `/proc/locks` lists that flock on it, `none`, or
/// `unknown` when this `/proc` cannot show every lock and none is listed.
pub(super) fn record_json(r: &Record, seen: &crate::plan::LeaseSeen) -> serde_json::Value {
    let mut v = serde_json::to_value(r).expect("a record serializes");
    v["holders"] = serde_json::json!(seen.pids);
    v["locked"] = serde_json::json!(locked_word(seen));
    v
}

pub(super) fn locked_word(seen: &crate::plan::LeaseSeen) -> &'static str {
    match seen.lock {
        Some(crate::plan::FlockSeen::Shared) => "shared",
        Some(crate::plan::FlockSeen::Exclusive) => "exclusive",
        None if seen.complete || !seen.pids.is_empty() => "none",
        None => "unknown",
    }
}

pub(super) fn list(json: bool) -> Result<u8> {
    let Some(root) = StateRoot::open_existing()? else {
        if json {
            out_raw!("[]");
        } else {
            out!("no records");
        }
        return Ok(exit::OK);
    };
    let reg = Registry::new(root);
    let loaded = reg.scan()?;
    // One /proc scan for every lease that can still be held.
    let ids: Vec<(u64, u64)> = loaded
        .iter()
        .filter_map(|l| match l {
            Loaded::Ok(r) if r.state != State::Removed => r.lease.as_ref().map(|l| l.id()),
            _ => None,
        })
        .collect();
    let seen = SeenLeases::of(&reg, &ids);
    if json {
        let items: Vec<serde_json::Value> = loaded
            .iter()
            .map(|l| match l {
                Loaded::Ok(r) => record_json(r, &seen.of_record(r)),
                Loaded::Bad { id, path, problem } => serde_json::json!({
                    "id": id, "state": "unreadable", "path": path.to_string_lossy(), "problem": problem
                }),
            })
            .collect();
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&items).expect("json serializes")
        );
        return Ok(exit::OK);
    }
    if loaded.is_empty() {
        out!("no records");
        return Ok(exit::OK);
    }
    out!(
        "{:<12}  {:<11}  {:<7}  {:<8}  {:<20}  {:<20}  WORKTREE",
        "ID",
        "STATE",
        "ORIGIN",
        "HOLDERS",
        "OWNER",
        "BRANCH"
    );
    for l in &loaded {
        match l {
            Loaded::Ok(r) => {
                // A count of visible holders; `locked` when only
                // /proc/locks shows the lease held, `?` when this /proc
                // cannot tell.
                let seen = seen.of_record(r);
                let holders = match (seen.pids.len(), locked_word(&seen)) {
                    (0, "shared" | "exclusive") => "locked".to_string(),
                    (0, "unknown") => "?".to_string(),
                    (n, _) => n.to_string(),
                };
                out!(
                    "{:<12}  {:<11}  {:<7}  {:<8}  {:<20}  {:<20}  {}",
                    super::short_id(&r.id),
                    r.state.name(),
                    match r.origin {
                        crate::registry::Origin::Created => "created",
                        crate::registry::Origin::Adopted => "adopted",
                    },
                    holders,
                    format!("{}:{}", r.owner.kind, r.owner.name),
                    r.branch.as_deref().unwrap_or("(detached)"),
                    format!(
                        "{}{}",
                        r.worktree.as_ref().map(|w| w.path.as_str()).unwrap_or("-"),
                        if r.intent.is_some() && r.state != State::Removed {
                            "  (retire when free: pending)"
                        } else {
                            ""
                        }
                    ),
                );
            }
            Loaded::Bad { id, problem, .. } => {
                out!(
                    "{:<12}  {:<11}  {problem}",
                    super::short_id(id),
                    "unreadable"
                );
            }
        }
    }
    Ok(exit::OK)
}
