//! `lease doctor [--json]`: is this machine ready for lease? Each check
//! says what it found and, when something is off, the command to run.
//! Reads only: it creates no state root and takes no exclusive lock.

use std::path::{Path, PathBuf};

use super::exit;
use crate::error::Result;
use crate::git::Git;
use crate::store::root::StateRoot;

/// The arguments of `lease doctor`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Print JSON.
    #[arg(long)]
    pub(super) json: bool,
}

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
enum Status {
    /// Fine.
    Ok,
    /// lease works, but something is worth doing.
    Warn,
    /// lease cannot work until this is fixed (exit 3).
    Fail,
}

/// One check: its name, status, what was found, and what to do.
#[derive(Debug, serde::Serialize)]
struct Check {
    check: &'static str,
    status: Status,
    detail: String,
    next: Option<String>,
}

fn check(check: &'static str, status: Status, detail: String, next: Option<String>) -> Check {
    Check {
        check,
        status,
        detail,
        next,
    }
}

/// Runs `lease doctor`: exit 0 unless a check fails (3).
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args) -> Result<u8> {
    let mut checks = Vec::new();
    let git = check_git(ctx, &mut checks);
    check_state_root(ctx, &mut checks);
    check_repo(ctx, &mut checks, git.as_ref());
    check_path(&mut checks);
    let code = if checks.iter().any(|c| c.status == Status::Fail) {
        exit::FAILED
    } else {
        exit::OK
    };
    if a.json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "checks": checks }))
                .expect("json serializes")
        );
        return Ok(code);
    }
    for c in &checks {
        let word = match c.status {
            Status::Ok => "ok  ",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        };
        out!("{word}  {:<13} {}", c.check, c.detail);
        if let Some(n) = &c.next {
            out!("      {:<13} next: {n}", "");
        }
    }
    Ok(code)
}

/// git: found (config `git`, `$LEASE_GIT`, else `PATH` without lease's
/// shim), and at least [`crate::git::MIN_GIT`].
fn check_git(ctx: &crate::ops::Ctx, out: &mut Vec<Check>) -> Option<Git> {
    match ctx.git() {
        Ok(g) => {
            out.push(check(
                "git",
                Status::Ok,
                format!("{} at `{}`", g.version(), g.path().display()),
                None,
            ));
            Some(g)
        }
        Err(e) => {
            out.push(check(
                "git",
                Status::Fail,
                e.to_string(),
                Some(format!(
                    "install git {}.{} or newer, or set LEASE_GIT=/path/to/git",
                    crate::git::MIN_GIT.0,
                    crate::git::MIN_GIT.1
                )),
            ));
            None
        }
    }
}

/// The state root: where, whether it is private and local, and whether
/// flock works there (a shared, non-blocking flock on the directory
/// itself, closed at once: nothing else is touched).
fn check_state_root(ctx: &crate::ops::Ctx, out: &mut Vec<Check>) {
    let path = match StateRoot::locate() {
        Ok(p) => p,
        Err(e) => {
            out.push(check(
                "state root",
                Status::Fail,
                e.to_string(),
                Some("export LEASE_HOME=\"$HOME/.local/state/lease\"".into()),
            ));
            return;
        }
    };
    let shown = path.display().to_string();
    match ctx.existing_root() {
        Ok(Some(_)) => out.push(check(
            "state root",
            Status::Ok,
            format!("`{shown}`: private (0700, yours), on a local filesystem"),
            None,
        )),
        Ok(None) => out.push(check(
            "state root",
            Status::Ok,
            format!("`{shown}` does not exist yet; the first `lease exec` creates it (0700)"),
            None,
        )),
        Err(e) => out.push(check(
            "state root",
            Status::Fail,
            e.to_string(),
            Some(format!("chmod 0700 {}", super::hint::quote(&shown))),
        )),
    }
    // The nearest existing directory: where the state root will live.
    let mut probe: PathBuf = path.clone();
    while !probe.is_dir() {
        if !probe.pop() {
            return;
        }
    }
    let locked = std::fs::File::open(&probe).map(|f| f.try_lock_shared());
    let (status, detail) = match locked {
        Ok(Ok(())) | Ok(Err(std::fs::TryLockError::WouldBlock)) => {
            (Status::Ok, format!("flock works on `{}`", probe.display()))
        }
        Ok(Err(std::fs::TryLockError::Error(e))) => (
            Status::Fail,
            format!("flock fails on `{}`: {e}", probe.display()),
        ),
        Err(e) => (
            Status::Fail,
            format!("cannot open `{}`: {e}", probe.display()),
        ),
    };
    let next = (status == Status::Fail)
        .then(|| "export LEASE_HOME=\"$HOME/.local/state/lease\" (a local filesystem)".into());
    out.push(check("locks", status, detail, next));
}

/// The repository of the current directory, if any, and its trusted remote.
fn check_repo(ctx: &crate::ops::Ctx, out: &mut Vec<Check>, git: Option<&Git>) {
    let Some(git) = git else { return };
    let Ok(cwd) = std::env::current_dir() else {
        return;
    };
    let common = match crate::git::ops::common_dir(git, &cwd) {
        Ok(o) if o.ok => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim_end_matches('\n')),
        _ => {
            out.push(check(
                "repository",
                Status::Ok,
                format!(
                    "`{}` is in no git repository (run lease doctor in one to check its remote)",
                    cwd.display()
                ),
                None,
            ));
            return;
        }
    };
    let configured = ctx.policy.trusted_remote.as_ref().map(|s| s.value.clone());
    let remote = git
        .repo(&common)
        .and_then(|rg| crate::git::refs::trusted_remote(&rg, &common, configured.as_deref(), None));
    let top = repo_top(&common);
    match remote {
        Ok(Some(r)) => out.push(check(
            "remote",
            Status::Ok,
            format!(
                "trusted remote of `{}`: `{r}` (commits reachable from it are durable; the rest is archived)",
                top.display()
            ),
            None,
        )),
        Ok(None) => out.push(check(
            "remote",
            Status::Warn,
            format!(
                "`{}` has no trusted remote: every commit unique to a worktree is archived into a bundle, and `durable: local`",
                top.display()
            ),
            Some(format!(
                "git -C {} remote add origin <url>",
                super::hint::quote(&top.to_string_lossy())
            )),
        )),
        Err(e) => out.push(check(
            "remote",
            Status::Warn,
            e.to_string(),
            Some(format!(
                "git -C {} remote -v",
                super::hint::quote(&top.to_string_lossy())
            )),
        )),
    }
}

/// `lease` itself on `PATH` (the shim and the systemd unit call it), and
/// the git shim: the first `git` on `PATH` being lease's shim lets git
/// calls that lost the lease descriptor rejoin it (shim/README.md).
fn check_path(out: &mut Vec<Check>) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let find = |name: &str| {
        std::env::split_paths(&path)
            .filter(|d| d.is_absolute())
            .map(|d| d.join(name))
            .find(|p| is_executable(p))
    };
    match find("lease") {
        Some(p) => out.push(check(
            "lease on PATH",
            Status::Ok,
            format!("`{}`", p.display()),
            None,
        )),
        None => out.push(check(
            "lease on PATH",
            Status::Warn,
            "no `lease` on PATH (shim/git, shim/ci.sh and the systemd unit call it; the unit expects ~/.cargo/bin/lease)".into(),
            Some("cargo install --path . && export PATH=\"$HOME/.cargo/bin:$PATH\"".into()),
        )),
    }
    match find("git") {
        Some(p) if is_lease_shim(&p) => out.push(check(
            "git shim",
            Status::Ok,
            format!(
                "`{}` is lease's git shim: git calls in leased commands rejoin the lease",
                p.display()
            ),
            None,
        )),
        _ => out.push(check(
            "git shim",
            Status::Warn,
            "the first git on PATH is not lease's shim: a git started by a process that closed LEASE_FD (Python's subprocess, Node's child_process) does not hold the lease (optional: the script shim/git, or the compiled `lease-git-shim` installed as `git`; see shim/README.md)".into(),
            Some("export PATH=\"$PWD/shim:$PATH\"   # from a checkout of lease, in the leased command's environment".into()),
        )),
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// True if `p` starts (first 4 KiB) with lease's shim marker, as shim/git does.
fn is_lease_shim(p: &Path) -> bool {
    use std::io::Read as _;
    let mut buf = [0u8; 4096];
    let n = std::fs::File::open(p)
        .and_then(|mut f| f.read(&mut buf))
        .unwrap_or(0);
    buf[..n].windows(10).any(|w| w == b"lease-shim")
}

/// The directory a common git dir belongs to (`/x/repo` for `/x/repo/.git`).
fn repo_top(common: &Path) -> &Path {
    match common.file_name() {
        Some(n) if n == ".git" => common.parent().unwrap_or(common),
        _ => common,
    }
}
