//! `lease` ties the life of a git worktree to the processes that really use it.
//!
//! `lease exec -- CMD` creates or adopts a registered worktree and holds a
//! *lease* on it: a shared `flock` on a private lease file outside the
//! checkout, inherited by the command and its descendants. `lease retire`
//! removes a worktree only when no consumer holds the lease (an exclusive,
//! non-blocking `flock` succeeds), nothing in it would be lost, and every
//! commit that exists only there is archived in a verified bundle.
//!
//! # Invariants
//! 1. Consumer lifetime decides: a status row, exit code, mtime or dead pid
//!    never authorizes deletion by itself.
//! 2. Uncertainty holds: missing, malformed or changed evidence holds the
//!    worktree with a reason code.
//! 3. Recovery before removal: unique commits are archived and verified first.
//! 4. Native, non-forced removal: `git worktree remove` without `--force`.
//! 5. Identity, not names: canonical paths, device and inode.
//! 6. Truthful reports: removed, retained or held, with reasons.
//! 7. Nothing is forgotten: registry, audit log and tombstones.
//!
//! # Modules
//! `cli` (the only one that prints) -> `launcher` (exec, and `launcher::join`
//! for a process that lost its descriptor), `ops` (`ops::create` and its
//! keeper `ops::keeper` for hosts lease does not start, `ops::intent` for
//! `retire --when-free`), `retire` (the engine), `reap`
//! (the reconciler, which drives the engine), `restore` (a new leased
//! worktree from a re-verified archive), `hold` (retention by a named
//! owner) and `repair` (one stale registration) -> `plan` (pure gate
//! decisions) over probes in `git`, `os::lease`, `os::walk`, `os::fs`, `os::procfs`; state in
//! `registry`, `audit`, `paths`; the layered config in `policy` (resolved
//! once by `cli`); raw OS process calls in `os::process`; test-only fault points in
//! `os::fault`. `metrics` reads a state root for Prometheus; `progress` reports
//! long steps to a sink the CLI installs on a terminal.

pub mod audit;
pub mod cli;
pub mod error;
pub mod git;
pub mod hold;
pub mod launcher;
pub mod metrics;
pub mod model;
pub mod ops;
pub mod os;
pub mod paths;
pub mod plan;
pub mod policy;
pub mod progress;
pub mod reap;
pub mod registry;
pub mod repair;
pub mod restore;
pub mod retire;
#[cfg(test)]
mod testing;

pub use error::{Error, Result};
