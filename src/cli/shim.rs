//! `lease-git-shim`: the git PATH shim as a compiled binary, installed as
//! `git` first on the `PATH` of a leased command (shim/README.md "`git`: the
//! PATH shim"). It decides as shim/git does
//! ([`crate::ops::launcher::shim::decide`]) and then, in this process:
//! execs the real git (outside a lease, or holding it), or joins the lease
//! and execs git holding it. The join is `lease join`'s own code
//! (`cli::join`: the same checks, messages and exit codes), run here
//! instead of in a second program, unless `LEASE_BIN` names a lease binary
//! to run as `LEASE_BIN join -- GIT ARGS...` (as the script does).
//!
//! Exit status: git's own; 125 with `lease-shim: ...` (a loop, no real
//! git, no `LEASE_BIN` to be found) or `error: ... [code]` (the lease
//! cannot be joined) on stderr; 126 and 127 when git cannot be run.

use std::ffi::OsString;

use crate::ops::launcher::shim::{self, SHIM_PID_VAR, ShimEnv, Step};

/// Runs the shim with this process's arguments and environment and
/// returns the exit status; returns only when it cannot exec git.
/// `set_var(name, value)` must set a variable in this process's
/// environment (the binary does it: `std::env::set_var` is sound only
/// while no other thread runs, which the binary, not a library, knows);
/// it is called once, for `LEASE_SHIM_PID`, after the environment was read
/// and before any exec, so every program the shim execs inherits the loop
/// guard.
pub fn main(set_var: impl FnOnce(&str, &str)) -> u8 {
    let mut argv = std::env::args_os();
    let argv0 = argv.next().unwrap_or_default();
    let args: Vec<OsString> = argv.collect();
    let env = ShimEnv::from_process(argv0);
    let lease_bin = std::env::var_os("LEASE_BIN").filter(|v| !v.is_empty());
    set_var(SHIM_PID_VAR, &env.pid.to_string());
    match shim::decide(&env) {
        Step::Run(git) => exec_failed(&git, shim::exec(&git, &args)),
        Step::Join(git) => {
            let Some(bin) = lease_bin else {
                let mut command = vec![git.into_os_string()];
                command.extend(args);
                // `join` reads no config: the built-in policy, as `lease join`.
                return super::join::join_code(&crate::ops::Ctx::defaults(), command, false);
            };
            let Some(found) = shim::find_program(&bin, env.path.as_deref()) else {
                return fail(&format!(
                    "LEASE_FILE is set but `{}` is not found; set LEASE_BIN to the lease binary",
                    bin.to_string_lossy()
                ));
            };
            let mut join = vec![OsString::from("join"), "--".into(), git.into()];
            join.extend(args);
            exec_failed(&found, shim::exec(&found, &join))
        }
        Step::Fail(m) => fail(&m),
    }
}

/// `lease-shim: MESSAGE` on stderr, exit 125.
fn fail(message: &str) -> u8 {
    err!("lease-shim: {message}");
    super::exit::EXEC_FAILED
}

/// Reports an exec of `program` that failed: 127 when it is not found,
/// else 126 (as a shell's `exec`).
fn exec_failed(program: &std::path::Path, e: std::io::Error) -> u8 {
    err!("lease-shim: cannot run `{}`: {e}", program.display());
    if e.kind() == std::io::ErrorKind::NotFound {
        super::exit::NOT_FOUND
    } else {
        super::exit::NOT_EXECUTABLE
    }
}
