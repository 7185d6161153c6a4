//! Operations: one module per verb; the only place effects are sequenced
//! (ARCHITECTURE.md floor 5).

pub mod create;
pub mod hook;
pub mod intent;
pub mod keeper;
pub mod provision;
