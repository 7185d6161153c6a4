//! `lease exec`: the launcher's request, its notes and after-exit report, and the command's exit status.

use super::exit;
use super::print_error;
use super::retire::render_target;
use crate::error::Result;
use crate::launcher::ExecRequest;
use crate::os::process::Ended;
use std::process::ExitCode;

pub(super) fn exec(req: Result<ExecRequest>, json: bool) -> ExitCode {
    let result = req.and_then(crate::launcher::exec);
    let res = match result {
        Ok(r) => r,
        Err(e) => {
            print_error(&e);
            return ExitCode::from(exit::EXEC_FAILED);
        }
    };
    for n in &res.notes {
        err!("{n}");
    }
    if let Some(t) = &res.retire {
        if json {
            err_raw!("{}", serde_json::to_string(t).expect("a report serializes"));
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
