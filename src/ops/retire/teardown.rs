//! The operator's teardown (config `teardown`, SPEC "Provisioned files,
//! disk, and hygiene"): run once per record after the last consumer is gone
//! and before removal.
//!
//! # Invariants
//! - It runs under the retire's exclusive lease lock (gate 3 took it, so no
//!   consumer holds the lease), before gate 4's process audit, which then
//!   sees whatever it left inside the tree. A dry run never runs it.
//! - Once per record: a run in which every command exited 0 is recorded
//!   (`teardown.ok`) and never repeated. A failure holds `teardown-failed`
//!   (the tree stays, the attempt is recorded) and the next retire runs it
//!   again.
//! - The start is written to the record (atomic, fsynced) before the first
//!   command runs, so a crash mid-teardown leaves `started_at` without
//!   `finished_at`; the next run says it runs again after an interrupted
//!   one (`teardown.interrupted`, the audit line, the report, and
//!   `LEASE_TEARDOWN_INTERRUPTED=1` in its environment). A teardown is
//!   never run to completion twice without saying so.
//! - Each command runs as `sh -c LINE` in the worktree, in its own process
//!   group, killed with the group after `teardown_timeout`. Its environment
//!   is lease's own without the variables that point git at a repository
//!   and without the lease's descriptor variables (`LEASE_FD`,
//!   `LEASE_FILE`, `LEASE_IDENTITY`: there is no lease to join), plus
//!   `LEASE_ID`, `LEASE_WORKTREE`, `LEASE_SLOT` (when the record has one),
//!   `LEASE_BRANCH` (when it has one), `LEASE_HOME` (the state root) and
//!   `LEASE_TEARDOWN_RUN` (1 for the first run).

use std::path::Path;
use std::time::Duration;

use super::{Engine, Locked};
use crate::error::Result;
use crate::model::reason::Hold;
use crate::model::report::TargetReport;
use crate::plan;

impl Engine {
    /// Runs the teardown if [`plan::teardown_due`] says so; `Ok(Err(hold))`
    /// when it failed (`teardown-failed`). Refreshes `held.rec` after its
    /// record writes, so gate 7's record comparison sees them as this
    /// retire's own.
    pub(super) fn teardown(
        &self,
        locked: &mut Locked,
        report: &mut TargetReport,
    ) -> Result<std::result::Result<(), Hold>> {
        let policy = self.reg.root().policy();
        let commands = policy.teardown.value.clone();
        let last = locked
            .rec
            .teardown
            .as_ref()
            .map(|t| (t.finished_at.is_some(), t.ok));
        let Some(after_interrupt) = plan::teardown_due(!commands.is_empty(), last) else {
            return Ok(Ok(()));
        };
        if self.dry_run {
            report.detail.push(format!(
                "would run teardown ({} command(s)) first{}",
                commands.len(),
                if after_interrupt {
                    ", again: the last run was interrupted"
                } else {
                    ""
                }
            ));
            return Ok(Ok(()));
        }
        let id = locked.rec.id.clone();
        let prev = locked.rec.teardown.clone();
        let runs = prev.as_ref().map_or(0, |t| t.runs) + 1;
        let interrupted = prev.as_ref().map_or(0, |t| t.interrupted) + u32::from(after_interrupt);
        let started_at = crate::model::fmt::now();
        let note = if after_interrupt {
            format!(
                "run {runs}, again: the run started {} was interrupted and never finished",
                prev.as_ref().map_or("?", |t| t.started_at.as_str())
            )
        } else {
            format!("run {runs}")
        };
        if after_interrupt {
            report.detail.push(format!("teardown: {note}"));
        }
        let start = crate::model::record::Teardown {
            started_at: started_at.clone(),
            finished_at: None,
            ok: false,
            runs,
            interrupted,
            detail: vec![note.clone()],
        };
        self.reg.update(&id, |r| {
            r.teardown = Some(start.clone());
            r.audit("teardown-started", vec![], vec![note.clone()]);
            Ok(())
        })?;
        crate::os::fault::point("teardown-started");
        let bound = Duration::from_secs(policy.teardown_timeout.value);
        let mut detail = vec![note];
        let mut failed = None;
        for line in &commands {
            let seen = self.run_one(locked, line, bound, runs, after_interrupt);
            let h = plan::gate_teardown(&seen);
            detail.push(match &h {
                Ok(()) => format!("`{line}` exited 0"),
                Err(h) => h.detail.clone(),
            });
            if let Err(h) = h {
                failed = Some(h);
                break;
            }
        }
        crate::os::fault::point("teardown-ran");
        let ok = failed.is_none();
        let done = crate::model::record::Teardown {
            finished_at: Some(crate::model::fmt::now()),
            ok,
            detail: detail.clone(),
            ..start
        };
        self.reg.update(&id, |r| {
            r.teardown = Some(done.clone());
            if ok {
                r.audit("teardown-done", vec![], detail.clone());
            }
            Ok(())
        })?;
        locked.rec = self.reg.get(&id)?;
        Ok(match failed {
            Some(h) => Err(h),
            None => Ok(()),
        })
    }

    /// One command line of the teardown, bounded.
    fn run_one(
        &self,
        locked: &Locked,
        line: &str,
        bound: Duration,
        run: u32,
        after_interrupt: bool,
    ) -> plan::TeardownSeen {
        let mut c = crate::ops::launcher::shell_command(line, &locked.wt);
        for k in [
            "LEASE_FD",
            "LEASE_FILE",
            "LEASE_IDENTITY",
            "LEASE_SLOT",
            "LEASE_BRANCH",
        ] {
            c.env_remove(k);
        }
        c.env("LEASE_ID", &locked.rec.id)
            .env("LEASE_WORKTREE", &locked.wt)
            .env("LEASE_HOME", self.reg.root().path())
            .env("LEASE_TEARDOWN_RUN", run.to_string());
        if after_interrupt {
            c.env("LEASE_TEARDOWN_INTERRUPTED", "1");
        }
        if let Some(s) = locked.rec.slot {
            c.env("LEASE_SLOT", s.to_string());
        }
        if let Some(b) = &locked.rec.branch {
            c.env("LEASE_BRANCH", b);
        }
        let mut seen = plan::TeardownSeen {
            command: line.to_string(),
            code: None,
            signal: None,
            timed_out: false,
            stderr: String::new(),
            spawn_error: None,
        };
        match crate::os::process::run_bounded(c, bound) {
            Ok(b) => {
                use std::os::unix::process::ExitStatusExt;
                seen.code = b.status.and_then(|s| s.code());
                seen.signal = b.status.and_then(|s| s.signal());
                seen.timed_out = b.timed_out;
                seen.stderr = String::from_utf8_lossy(&b.stderr).into_owned();
            }
            Err(e) => {
                seen.spawn_error = Some(format!(
                    "/bin/sh in `{}`: {e}",
                    Path::new(&locked.wt).display()
                ))
            }
        }
        seen
    }
}
