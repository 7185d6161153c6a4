//! The fast paths: the commands whose start-up a short command feels (the
//! shim's `lease join -- CMD` on an agent's every `git`, and a launcher's
//! `lease exec --adopt PATH -- CMD`), recognized from the raw arguments
//! before clap builds the whole command tree (most of a millisecond: see
//! docs/PERFORMANCE.md). Only the exact spellings below take a fast path;
//! any other argument list, `--help` included, goes through clap as before.
//! A fast path then does what the slow path does with those arguments (the
//! same log filter, the same policy layers with no flag layer, the same
//! request), so its effects, errors and exit codes are the slow path's own.

use std::ffi::OsString;
use std::process::ExitCode;

/// Runs a fast path when the arguments (program name first) are exactly
/// `join -- CMD [ARGS...]` or `exec --adopt PATH -- CMD [ARGS...]` (PATH
/// not starting with `-`); `None` sends them to clap.
pub(super) fn run(args: &[OsString]) -> Option<ExitCode> {
    match args {
        [_, verb, dashes, command @ ..]
            if verb == "join" && dashes == "--" && !command.is_empty() =>
        {
            // `join` reads no config: the built-in policy, as on the slow path.
            Some(super::join::join(
                &crate::ops::Ctx::defaults(),
                command.to_vec(),
                false,
            ))
        }
        [_, verb, flag, path, dashes, command @ ..]
            if verb == "exec"
                && flag == "--adopt"
                && dashes == "--"
                && !command.is_empty()
                && !path.is_empty()
                && !path.as_encoded_bytes().starts_with(b"-") =>
        {
            Some(adopt(path.into(), command.to_vec()))
        }
        _ => None,
    }
}

/// `exec --adopt PATH -- CMD`, as the slow path runs it with no other flag.
fn adopt(path: std::path::PathBuf, command: Vec<OsString>) -> ExitCode {
    super::log::install(0, 0, super::log::LogFormat::Text);
    let resolved = super::config::load_layers(None).and_then(|mut l| {
        l.push((
            crate::policy::LayerFrom::Flags,
            crate::policy::Layer::default(),
        ));
        crate::policy::resolve(&l)
    });
    let ctx = match resolved {
        Ok(p) => crate::ops::Ctx::new(p),
        Err(e) => {
            super::print_error(&e);
            return ExitCode::from(super::exit::EXEC_FAILED);
        }
    };
    let req = crate::ops::launcher::ExecRequest {
        repo: None,
        branch: None,
        base: None,
        adopt: Some(path),
        resume: None,
        keep: false,
        owner: None,
        reap_if_low: false,
        command,
    };
    super::exec::exec(&ctx, Ok(req), false)
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
            &["lease", "exec", "--adopt", "w", "--"],
            &["lease", "exec", "--adopt", "--keep", "--", "true"],
            &["lease", "exec", "--adopt", "", "--", "true"],
            &["lease", "exec", "--keep", "--adopt", "w", "--", "true"],
            &["lease", "exec", "--adopt", "w", "--json", "--", "true"],
            &["lease", "exec", "--adopt=w", "--", "true"],
        ] {
            assert!(run(&os(slow)).is_none(), "{slow:?}");
        }
    }
}
