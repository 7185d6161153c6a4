//! `lease join`: take the lease named by `LEASE_*` again and become the command.

use super::exit;
use std::ffi::OsString;
use std::process::ExitCode;

/// The arguments of `lease join`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(super) command: Vec<std::ffi::OsString>,
    /// Report lease's own errors as JSON lines on stderr (stdout is the command's).
    #[arg(long)]
    pub(super) json: bool,
}

/// Runs `lease join`.
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> ExitCode {
    join(ctx, a.command, a.json)
}

/// Runs `lease join`: on success this process becomes the command and never
/// returns here.
pub(super) fn join(ctx: &crate::ops::Ctx, command: Vec<OsString>, json: bool) -> ExitCode {
    ExitCode::from(join_code(ctx, command, json))
}

/// [`join`], returning the exit status (125, 126 or 127) when it cannot
/// become the command.
pub(super) fn join_code(ctx: &crate::ops::Ctx, command: Vec<OsString>, json: bool) -> u8 {
    use crate::ops::launcher::join::{Ticket, join};
    // A refusal names the record: join runs for a command, not a retire,
    // so a retire in progress sends the caller to the record's state
    // rather than to retry the retire.
    let joined = match Ticket::from_env().and_then(|t| {
        join(ctx, &t, command).map_err(|e| {
            let e = e.about(&t.id, None);
            if e.reason() == Some(crate::model::reason::HoldReason::RetireInProgress) {
                e.with_next(format!("lease show {}", super::short_id(&t.id)))
            } else {
                e
            }
        })
    }) {
        Ok(j) => j,
        Err(e) => {
            super::exec::report_error(&e, json);
            return exit::EXEC_FAILED;
        }
    };
    let program = joined.program().to_string_lossy().into_owned();
    let e = joined.exec();
    let code = if e.kind() == std::io::ErrorKind::NotFound {
        exit::NOT_FOUND
    } else {
        exit::NOT_EXECUTABLE
    };
    if json {
        err_raw!(
            "{}",
            serde_json::json!({
                "lease": "error",
                "exit": code,
                "error": {
                    "kind": "io",
                    "message": format!("cannot run `{program}`: {e}"),
                    "path": program,
                    "reason": null,
                    "next": null,
                }
            })
        );
    } else {
        err!("lease: cannot run `{program}`: {e}");
    }
    code
}
