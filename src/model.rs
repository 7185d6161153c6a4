//! Nouns: plain data, no process, no file, no git (ARCHITECTURE.md floor 1).

pub mod disk;
pub mod evidence;
pub mod fmt;
pub mod reason;
pub mod record;
pub mod report;
