//! `create`, the hidden `keeper`, and `retire --when-free`: requests,
//! rendering and exit codes (SPEC "Hosts that lease does not start").

use std::path::PathBuf;
use std::process::ExitCode;

use super::{exit, print_error};
use crate::error::{Error, Result};
use crate::model::record::Bound;
use crate::model::record::Owner;
use crate::model::report::{GitInfo, RetireReport};
use crate::ops::create::CreateRequest;
use crate::ops::retire::Engine;
use crate::store::registry::Registry;

/// The arguments of `lease create`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Repository (default: the one containing the current directory).
    #[arg(long, value_name = "R")]
    pub(super) repo: Option<PathBuf>,
    /// Branch to check out (created at the base if missing; default lease/ID-PREFIX).
    #[arg(long, value_name = "B")]
    pub(super) branch: Option<String>,
    /// Base commit for a new branch (default: the repository's HEAD).
    #[arg(long, value_name = "REV")]
    pub(super) base: Option<String>,
    /// Owner as KIND:NAME (default: config `owner` or $LEASE_OWNER, else manual:USER).
    #[arg(long, value_name = "KIND:NAME")]
    pub(super) owner: Option<String>,
    /// The process that uses the worktree: the keeper holds the lease until it exits.
    #[arg(long, value_name = "PID", required = true)]
    pub(super) bind_pid: u32,
    /// Print one JSON object: id, path, branch, keeper_pid.
    #[arg(long)]
    pub(super) json: bool,
}

/// The arguments of the hidden `lease keeper`, which only `lease create`
/// passes.
#[derive(Debug, clap::Args)]
pub(super) struct KeeperArgs {
    /// The record id.
    #[arg(long)]
    pub(super) id: String,
    /// The bound process's pid.
    #[arg(long)]
    pub(super) bind_pid: u32,
    /// Its start time (clock ticks since boot).
    #[arg(long)]
    pub(super) bind_start: u64,
    /// The pid of `lease create`, whose session the keeper takes over.
    #[arg(long)]
    pub(super) creator: u32,
    /// The readiness pipe's descriptor.
    #[arg(long)]
    pub(super) ready_fd: i32,
}

/// `lease create`: stdout is exactly the worktree's path and a newline, or
/// one JSON object with `--json`, printed only once the keeper holds the
/// lease. On failure the reason goes to stderr, and with `--json` the
/// error document of docs/record.md ("The --json contract") to stdout.
pub(super) fn run(ctx: &crate::ops::Ctx, a: Args, config: Option<PathBuf>) -> ExitCode {
    let Args {
        repo,
        branch,
        base,
        owner,
        bind_pid,
        json,
    } = a;
    let made = owner
        .as_deref()
        .map(Owner::parse)
        .transpose()
        .map_err(crate::error::Error::from)
        .and_then(|owner| {
            crate::ops::create::create(
                ctx,
                CreateRequest {
                    repo,
                    branch,
                    base,
                    owner,
                    bind_pid,
                    config,
                },
            )
        });
    match made {
        Ok(c) if json => {
            out_raw!(
                "{}",
                serde_json::to_string(&c).expect("a report serializes")
            );
            ExitCode::from(exit::OK)
        }
        Ok(c) => {
            // The path as is: a host reads this line back verbatim.
            out_raw!("{}", c.path);
            ExitCode::from(exit::OK)
        }
        Err(e) => {
            print_error(&e);
            let code = super::class_code(e.class());
            if json {
                // The one error document of every command (docs/record.md).
                super::print_error_json(false, &super::error_json(&e, code));
            }
            ExitCode::from(code)
        }
    }
}

/// The hidden `lease keeper`: runs until the bound process exits. Its
/// stdout and stderr are `/dev/null`; the exit code is for tests.
pub(super) fn keeper(ctx: &crate::ops::Ctx, a: KeeperArgs) -> ExitCode {
    let args = crate::ops::keeper::KeeperArgs {
        id: a.id,
        bound: Bound {
            pid: a.bind_pid,
            start_time: a.bind_start,
        },
        creator: a.creator,
        ready_fd: a.ready_fd,
    };
    match crate::ops::keeper::keep(ctx, &args) {
        Ok(()) => ExitCode::from(exit::OK),
        Err(e) => {
            print_error(&e);
            ExitCode::from(super::class_code(e.class()))
        }
    }
}

/// `lease retire --when-free ID|PATH ...`: per target, removed (0), held
/// (1) or pending (0); the worst wins.
pub(super) fn when_free(
    ctx: &crate::ops::Ctx,
    targets: &[String],
    opts: crate::ops::intent::WhenFree,
    json: bool,
) -> Result<u8> {
    if targets.is_empty() {
        return Err(Error::Usage(
            "name a record id or worktree path for --when-free".into(),
        ));
    }
    let reg = Registry::new(ctx.open_root()?);
    let git = ctx.git()?;
    let info = GitInfo {
        path: git.path().to_string_lossy().into_owned(),
        version: git.version().to_string(),
    };
    // Targets are named as for retire.
    let resolver = Engine::new(reg.clone(), git.clone(), true);
    let mut reports = Vec::new();
    for t in targets {
        let report = match super::target::resolve_target(&resolver, t)? {
            Ok(id) => crate::ops::intent::retire_when_free(&reg, &git, &id, opts),
            Err(held) => held,
        };
        let mut report = report;
        super::hint::fill_target(&mut report);
        reports.push(report);
    }
    let code = reports
        .iter()
        .map(super::retire::target_code)
        .max()
        .unwrap_or(exit::OK);
    let report = RetireReport {
        dry_run: false,
        git: info,
        targets: reports,
    };
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&report).expect("a report serializes")
        );
    } else {
        for t in &report.targets {
            for line in super::retire::render_target(t) {
                out!("{line}");
            }
        }
    }
    Ok(code)
}
