//! `lease join`: take the lease named by `LEASE_*` again and become the command.

use super::exit;
use super::print_error;
use std::ffi::OsString;
use std::process::ExitCode;

/// The arguments of `lease join`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(super) command: Vec<std::ffi::OsString>,
}

/// Runs `lease join`.
pub(super) fn run(a: Args) -> ExitCode {
    join(a.command)
}

/// Runs `lease join`: on success this process becomes the command and never
/// returns here.
pub(super) fn join(command: Vec<OsString>) -> ExitCode {
    use crate::launcher::join::{Ticket, join};
    let joined = match Ticket::from_env().and_then(|t| join(&t, command)) {
        Ok(j) => j,
        Err(e) => {
            print_error(&e);
            return ExitCode::from(exit::EXEC_FAILED);
        }
    };
    let program = joined.program().to_string_lossy().into_owned();
    let e = joined.exec();
    err!("lease: cannot run `{program}`: {e}");
    ExitCode::from(if e.kind() == std::io::ErrorKind::NotFound {
        exit::NOT_FOUND
    } else {
        exit::NOT_EXECUTABLE
    })
}
