//! The fast paths: the commands an agent's every `git` can cost (the shim's
//! `lease join -- CMD`), recognized from the raw arguments before clap builds
//! the whole command tree (a millisecond of a short command's time: see
//! docs/PERFORMANCE.md). Only the exact spellings below take a fast path;
//! any other argument list, `--help` included, goes through clap as before,
//! and a fast path's errors and exit codes are the slow path's own.

use std::ffi::OsString;
use std::process::ExitCode;

/// Runs a fast path when the arguments (program name first) are exactly
/// `join -- CMD [ARGS...]`; `None` sends them to clap.
pub(super) fn run(args: &[OsString]) -> Option<ExitCode> {
    match args {
        [_, verb, dashes, command @ ..]
            if verb == "join" && dashes == "--" && !command.is_empty() =>
        {
            Some(super::join::join(command.to_vec()))
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn only_the_exact_spellings_are_fast() {
        // Every one of these goes to clap (which prints help, or refuses).
        for slow in [
            &["lease"][..],
            &["lease", "join"],
            &["lease", "join", "--"],
            &["lease", "join", "git"],
            &["lease", "-v", "join", "--", "git"],
            &["lease", "join", "--help"],
            &["lease", "exec", "--", "true"],
        ] {
            assert!(run(&os(slow)).is_none(), "{slow:?}");
        }
    }
}
