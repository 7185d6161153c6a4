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
//! # The floors
//! The crate is built in floors; a module uses the floors below it and its
//! own, never one above, and the top-level modules form no cycle
//! (`scripts/floors`, run by `scripts/test`; docs/CONTRIBUTING.md "The
//! floors").
//!
//! | floor | modules | what it holds |
//! |---|---|---|
//! | 1 nouns | [`model`] ([`model::reason`], [`model::record`], [`model::evidence`], [`model::report`], [`model::fmt`]), [`error`], [`policy`], [`progress`] | plain data and the layered config, resolved once; no process, no file, no git |
//! | 2 decisions | [`plan`] | every gate and reconcile decision, pure functions of floor 1 |
//! | 3 adapters | [`os`] ([`os::process`], [`os::fs`], [`os::walk`], [`os::atomic`], [`os::lease`], [`os::procfs`], [`os::fault`]), [`git`] ([`git::ops`], [`git::parse`], [`git::libgit2`], [`git::admin`], [`git::refs`]) | the only code that talks to the kernel (`rustix`, `unsafe` in `os::process` and `git::libgit2` only) or runs git (one typed function per subcommand in `git::ops`) |
//! | 4 state | [`store`] ([`store::root`], [`store::registry`], [`store::audit`], [`store::orphans`]) | the state root, the records, the hash-chained audit log |
//! | 5 operations | [`ops`] ([`ops::launcher`] exec and join, [`ops::retire`] the engine, [`ops::reap`] the reconciler, [`ops::restore`], [`ops::hold`], [`ops::repair`], [`ops::create`], [`ops::keeper`], [`ops::intent`], [`ops::hook`], [`ops::metrics`], [`ops::removal`] the one way a record ends; [`ops::Ctx`] the policy each operation is given) | one module per verb; the only place effects are sequenced |
//! | 6 the face | [`cli`] | clap, rendering, the exit-code table, config loading; the only code that prints |
//!
//! Who deletes worktrees: [`ops::retire`] (its one `git worktree remove`,
//! in `ops/retire/remove.rs`, after every gate). Who ends a record:
//! [`ops::removal`]. What runs git: [`git`]. What touches the kernel: [`os`].

pub mod cli;
pub mod error;
pub mod git;
pub mod model;
pub mod ops;
pub mod os;
pub mod plan;
pub mod policy;
pub mod progress;
pub mod store;
#[cfg(test)]
mod testing;

pub use error::{Error, Result};
