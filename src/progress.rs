//! Progress of the long steps (bundle creation and verification, a reap over
//! many records), reported to a sink the front end installs.
//!
//! The library never prints: without an installed sink every call here is a
//! no-op. The CLI installs one only when stderr is a terminal and neither
//! `--json` nor `-q` was given, so scripts and logs never see it.

use std::sync::OnceLock;

/// Receives progress; installed once per process with [`install`].
pub trait Sink: Send + Sync {
    /// Starts a task named `label` with `total` steps, or an open-ended task
    /// (a spinner) when `total` is `None`. The task ends when the returned
    /// handle drops.
    fn begin(&self, label: &str, total: Option<u64>) -> Box<dyn Task>;
}

/// One running task; it ends (and clears itself) when dropped.
pub trait Task {
    /// Advances the task by `n` steps.
    fn inc(&self, n: u64);
    /// Shows `msg` next to the task (the item being worked on).
    fn message(&self, msg: &str);
}

static SINK: OnceLock<Box<dyn Sink>> = OnceLock::new();

/// Installs the process-wide sink. Returns `false` (and keeps the first one)
/// when a sink was already installed.
pub fn install(sink: Box<dyn Sink>) -> bool {
    SINK.set(sink).is_ok()
}

/// A task handle; a no-op when no sink is installed.
pub(crate) struct Step(Option<Box<dyn Task>>);

impl Step {
    pub(crate) fn inc(&self) {
        if let Some(t) = &self.0 {
            t.inc(1);
        }
    }

    pub(crate) fn message(&self, msg: &str) {
        if let Some(t) = &self.0 {
            t.message(msg);
        }
    }
}

/// Begins a task on the installed sink, if any.
pub(crate) fn begin(label: &str, total: Option<u64>) -> Step {
    Step(SINK.get().map(|s| s.begin(label, total)))
}
