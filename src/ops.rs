//! Operations: one module per verb; the only place effects are sequenced
//! (ARCHITECTURE.md floor 5).

pub mod create;
pub mod du;
pub mod hold;
pub mod hook;
pub mod intent;
pub mod keeper;
pub mod launcher;
pub mod metrics;
pub mod provision;
pub mod reap;
pub mod removal;
pub mod repair;
pub mod restore;
pub mod retire;

use std::sync::Arc;

use crate::error::Result;
use crate::git::Git;
use crate::policy::Policy;
use crate::store::root::StateRoot;

/// What every operation is given besides its own arguments: the policy the
/// CLI resolved once (config files, environment, flags; docs/config.md),
/// shared. It replaces the process-wide policy of earlier versions: the
/// state roots and the git an operation opens through it carry the same
/// policy, so code below an operation reads it from the state root
/// ([`StateRoot::policy`]) or is handed it, never from a global.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The resolved policy.
    pub policy: Arc<Policy>,
}

impl Ctx {
    /// A context with `policy`.
    pub fn new(policy: Policy) -> Ctx {
        Ctx {
            policy: Arc::new(policy),
        }
    }

    /// A context with the built-in defaults (no config file, environment
    /// or flag): for `lease join`, which reads no config, and for tests.
    pub fn defaults() -> Ctx {
        Ctx::new(crate::policy::defaults())
    }

    /// [`StateRoot::open_or_create`] under this policy.
    ///
    /// # Errors
    /// As [`StateRoot::open_or_create`].
    pub fn open_root(&self) -> Result<StateRoot> {
        StateRoot::open_or_create(&self.policy)
    }

    /// [`StateRoot::open_existing`] under this policy.
    ///
    /// # Errors
    /// As [`StateRoot::open_existing`].
    pub fn existing_root(&self) -> Result<Option<StateRoot>> {
        StateRoot::open_existing(&self.policy)
    }

    /// [`Git::resolve`]: the policy's git, its version checked.
    ///
    /// # Errors
    /// As [`Git::resolve`].
    pub fn git(&self) -> Result<Git> {
        Git::resolve(&self.policy)
    }

    /// [`Git::resolve_lazy`]: the policy's git, its version checked when
    /// first run.
    ///
    /// # Errors
    /// As [`Git::resolve_lazy`].
    pub fn git_lazy(&self) -> Result<Git> {
        Git::resolve_lazy(&self.policy)
    }
}

/// The name of the user lease runs as: `$USER`, else `/etc/passwd`'s entry
/// for the effective uid, else the uid as text (the default owner's name,
/// [`crate::policy::Policy::default_owner`]).
pub fn caller_name() -> String {
    crate::os::process::user_name(crate::os::process::euid())
}
