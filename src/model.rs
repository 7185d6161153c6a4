//! Nouns: plain data, no process, no file, no git (ARCHITECTURE.md floor 1).

pub mod fmt;
pub mod report;
