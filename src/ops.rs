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
pub mod repair;
pub mod restore;
pub mod retire;

/// The name of the user lease runs as: `$USER`, else `/etc/passwd`'s entry
/// for the effective uid, else the uid as text (the default owner's name,
/// [`crate::policy::Policy::default_owner`]).
pub fn caller_name() -> String {
    crate::os::process::user_name(crate::os::process::euid())
}
