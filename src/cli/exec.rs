//! `lease exec`: the launcher's request, its notes and after-exit report, and the command's exit status.

use super::exit;
use super::print_error;
use super::retire::render_target;
use crate::error::Result;
use crate::ops::launcher::ExecRequest;
use crate::os::process::Ended;
use std::process::ExitCode;

/// The arguments of `lease exec`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Repository (default: the one containing the current directory).
    #[arg(long, value_name = "R")]
    pub(super) repo: Option<std::path::PathBuf>,
    /// Branch to check out (created at the base if missing; default lease/ID-PREFIX).
    #[arg(long, value_name = "B")]
    pub(super) branch: Option<String>,
    /// Base commit for a new branch (default: the repository's HEAD).
    #[arg(long, value_name = "REV")]
    pub(super) base: Option<String>,
    /// Lease an existing linked worktree instead of creating one.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["branch", "base", "repo"])]
    pub(super) adopt: Option<std::path::PathBuf>,
    /// Run in the worktree of a retained or terminal record (a new session).
    #[arg(long, value_name = "ID", conflicts_with_all = ["branch", "base", "repo", "adopt"])]
    pub(super) resume: Option<String>,
    /// Keep the worktree after the command exits (record it `retained`).
    #[arg(long)]
    pub(super) keep: bool,
    /// Owner as KIND:NAME (default: config `owner` or $LEASE_OWNER, else manual:USER).
    #[arg(long, value_name = "KIND:NAME")]
    pub(super) owner: Option<String>,
    /// Free-space watermark, bytes with a unit or a percentage (default 1G); joins config and $LEASE_MIN_FREE, the larger wins.
    #[arg(long, value_name = "SIZE")]
    pub(super) min_free: Option<String>,
    /// Below the watermark, run a safe reap (as `lease reap --apply`, not waiting for another reaper), then check again.
    #[arg(long)]
    pub(super) reap_if_low: bool,
    /// Allow a worktree root under /tmp, /var/tmp or $TMPDIR (unless a config layer says false).
    #[arg(long)]
    pub(super) allow_temp_root: bool,
    /// Output path (relative to the worktree top) that may be deleted: ignored files there do not hold the after-exit retire (intersected with config).
    #[arg(long, value_name = "PATH")]
    pub(super) rebuildable: Vec<String>,
    /// Report lease's own part (errors, notes, the after-exit retire) as JSON lines on stderr; stdout stays the command's.
    #[arg(long)]
    pub(super) json: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(super) command: Vec<std::ffi::OsString>,
}

/// Runs `lease exec`: the command's exit status (or 125 when lease failed first).
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> ExitCode {
    let Args {
        repo,
        branch,
        base,
        adopt,
        resume,
        keep,
        owner,
        reap_if_low,
        json,
        command,
        ..
    } = a;
    let req = (|| -> Result<ExecRequest> {
        Ok(ExecRequest {
            repo,
            branch,
            base,
            adopt,
            resume,
            keep,
            owner: owner
                .as_deref()
                .map(crate::model::record::Owner::parse)
                .transpose()?,
            reap_if_low,
            command,
        })
    })();
    exec(ctx, req, json)
}

/// The flags of `exec` that feed config.
pub(super) fn flag_layer(a: &Args) -> crate::policy::Layer {
    crate::policy::Layer {
        min_free: a.min_free.clone(),
        rebuildable: super::listed(&a.rebuildable),
        allow_temp_worktree_root: a.allow_temp_root.then_some(true),
        ..Default::default()
    }
}

/// Runs the launcher and reports lease's own part on stderr: prose lines
/// prefixed `lease:`, or with `--json` one JSON object per line, each with
/// a `lease` key saying what it is (`error`, `note`, `retire`; see
/// docs/record.md "exec and join"), so stdout stays the command's.
pub(super) fn exec(ctx: &crate::ops::Ctx, req: Result<ExecRequest>, json: bool) -> ExitCode {
    let result = req.and_then(|r| crate::ops::launcher::exec(ctx, r));
    let res = match result {
        Ok(r) => r,
        Err(e) => {
            report_error(&e, json);
            return ExitCode::from(exit::EXEC_FAILED);
        }
    };
    // -q: lease's own reports are silenced; the exit status still says it.
    let report = super::quiet() == 0;
    for n in res.notes.iter().filter(|_| report) {
        if json {
            err_raw!(
                "{}",
                serde_json::json!({"lease": "note", "message": n.strip_prefix("lease: ").unwrap_or(n)})
            );
        } else {
            err!("{n}");
        }
    }
    if let Some(t) = res.retire.as_ref().filter(|_| report) {
        // The next step as a command with the real id or path, as retire
        // prints it (cli/hint.rs).
        let mut t = t.clone();
        super::hint::fill_target(&mut t);
        let t = &t;
        if json {
            let mut v = serde_json::to_value(t).expect("a report serializes");
            v["lease"] = serde_json::json!("retire");
            err_raw!("{v}");
        } else {
            for line in render_target(t) {
                err!("lease: {line}");
            }
        }
    }
    match res.ended {
        Ended::Code(c) => ExitCode::from(u8::try_from(c & 0xff).unwrap_or(exit::EXEC_FAILED)),
        Ended::Signal(s) => {
            crate::os::process::die_of(s);
            ExitCode::from(u8::try_from(128 + s).unwrap_or(exit::EXEC_FAILED))
        }
    }
}

/// Reports an error of `exec` or `join` before the command ran (exit 125):
/// prose on stderr, or one JSON line there (`{"lease": "error", ...}`).
pub(super) fn report_error(e: &crate::error::Error, json: bool) {
    if super::quiet() >= 2 {
        return;
    }
    if json {
        let mut v = super::error_json(e, exit::EXEC_FAILED);
        v["lease"] = serde_json::json!("error");
        super::print_error_json(true, &v);
    } else {
        print_error(e);
    }
}
