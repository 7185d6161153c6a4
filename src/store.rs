//! Durable state under the state root (ARCHITECTURE.md floor 4): its
//! layout and checks, the records, the audit log.

pub mod audit;
pub mod orphans;
pub mod registry;
pub mod root;
