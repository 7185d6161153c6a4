//! `lease join`: take the lease named by `LEASE_*` again and become the command.

use super::exit;
use super::print_error;
use std::ffi::OsString;
use std::process::ExitCode;

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
