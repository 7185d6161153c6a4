//! The command line: clap types, requests, rendering (table and `--json`)
//! and the exit-code table. The only module that prints.
#![allow(clippy::print_stdout, clippy::print_stderr)]

/// Writes one line of human output to stdout, its control characters
/// escaped ([`crate::model::fmt::escape_controls`]: a file name cannot
/// forge a line or drive the terminal), ignoring write errors: a closed
/// pipe (`lease list | head`) must neither panic nor change the exit status.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let _ = writeln!(
            std::io::stdout().lock(),
            "{}",
            crate::model::fmt::escape_controls(&line)
        );
    }};
}

/// Writes machine output (JSON, which keeps names exact) to stdout as it
/// is, ignoring write errors.
macro_rules! out_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// Writes one line of human output to stderr, control characters escaped
/// as by `out!`, ignoring write errors.
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let _ = writeln!(
            std::io::stderr().lock(),
            "{}",
            crate::model::fmt::escape_controls(&line)
        );
    }};
}

/// Writes machine output to stderr as it is (exec's `--json` report).
macro_rules! err_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::{Class, Error, Result};
use crate::git::Git;
use crate::launcher::ExecRequest;
use crate::os::process::Ended;
use crate::paths::StateRoot;
use crate::plan::Disposition;
use crate::registry::{Loaded, Owner, Record, Registry, State};
use crate::report::{GitInfo, RetireReport, TargetReport};
use crate::retire::{ArchiveMode, Engine};

mod audit;
mod config;
mod generate;
mod log;
mod metrics;
mod progress;
mod reconcile;
mod restore;

/// Exit codes of every command but `exec` (SPEC "Exit codes").
pub mod exit {
    /// Done, or nothing to do.
    pub const OK: u8 = 0;
    /// Held: a gate refused.
    pub const HELD: u8 = 1;
    /// Usage error; nothing opened for writing.
    pub const USAGE: u8 = 2;
    /// lease could not work at all.
    pub const FAILED: u8 = 3;
    /// `exec`: lease failed before the command ran (the `env` convention).
    pub const EXEC_FAILED: u8 = 125;
    /// `exec` and `join`: the command was found but could not be executed.
    pub const NOT_EXECUTABLE: u8 = 126;
    /// `exec` and `join`: the command was not found.
    pub const NOT_FOUND: u8 = 127;
}

/// Decide when a git worktree may be deleted by who still uses it.
#[derive(Debug, Parser)]
#[command(name = "lease", version, about, max_term_width = 100)]
struct Cli {
    /// Log more to stderr (-v info, -vv debug, -vvv trace; default warn).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Log less to stderr (-q errors only, -qq nothing).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    quiet: u8,
    /// Log line format on stderr (RUST_LOG, when set, chooses what is logged).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t,
        value_name = "FORMAT"
    )]
    log_format: log::LogFormat,
    /// Config file read after the system and user files (also $LEASE_CONFIG).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run a command in a leased worktree (created, or adopted with --adopt).
    ///
    /// The command and every descendant that keeps the inherited descriptor
    /// hold the lease; retire refuses while any of them lives. lease's exit
    /// status is the command's.
    Exec {
        /// Repository (default: the one containing the current directory).
        #[arg(long, value_name = "R")]
        repo: Option<PathBuf>,
        /// Branch to check out (created at the base if missing; default lease/ID-PREFIX).
        #[arg(long, value_name = "B")]
        branch: Option<String>,
        /// Base commit for a new branch (default: the repository's HEAD).
        #[arg(long, value_name = "REV")]
        base: Option<String>,
        /// Lease an existing linked worktree instead of creating one.
        #[arg(long, value_name = "PATH", conflicts_with_all = ["branch", "base", "repo"])]
        adopt: Option<PathBuf>,
        /// Run in the worktree of a retained or terminal record (a new session).
        #[arg(long, value_name = "ID", conflicts_with_all = ["branch", "base", "repo", "adopt"])]
        resume: Option<String>,
        /// Keep the worktree after the command exits (record it `retained`).
        #[arg(long)]
        keep: bool,
        /// Owner as KIND:NAME (default: config `owner` or $LEASE_OWNER, else manual:USER).
        #[arg(long, value_name = "KIND:NAME")]
        owner: Option<String>,
        /// Free-space watermark, bytes with a unit or a percentage (default 1G); joins config and $LEASE_MIN_FREE, the larger wins.
        #[arg(long, value_name = "SIZE")]
        min_free: Option<String>,
        /// Below the watermark, run a safe reap (as `lease reap --apply`, not waiting for another reaper), then check again.
        #[arg(long)]
        reap_if_low: bool,
        /// Allow a worktree root under /tmp, /var/tmp or $TMPDIR (unless a config layer says false).
        #[arg(long)]
        allow_temp_root: bool,
        /// Output path (relative to the worktree top) that may be deleted: ignored files there do not hold the after-exit retire (intersected with config).
        #[arg(long, value_name = "PATH")]
        rebuildable: Vec<String>,
        /// Print the after-exit retire disposition as JSON on stderr.
        #[arg(long)]
        json: bool,
        /// The command and its arguments.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<OsString>,
    },
    /// Remove worktrees nobody uses and nothing would be lost from.
    Retire {
        /// Record ids (or unique prefixes of 8+ hex digits) or worktree top directories.
        targets: Vec<String>,
        /// Every terminal or interrupted record.
        #[arg(long)]
        all: bool,
        /// Say what would happen; change nothing, take no lock.
        #[arg(long)]
        dry_run: bool,
        /// Output path (relative to the worktree top, e.g. `target`) declared rebuildable: ignored files there do not hold and are deleted by lease (intersected with config `rebuildable` and `$LEASE_REBUILDABLE`).
        #[arg(long, value_name = "PATH")]
        rebuildable: Vec<String>,
        /// Where commits that are not durable are archived: a verified bundle under the state root, archival refs pushed to the trusted remote and read back, or both (default bundle; joined with config `archive` and $LEASE_ARCHIVE to every destination asked for).
        #[arg(long, value_enum, value_name = "MODE")]
        archive: Option<ArchiveMode>,
        /// After a removal, delete the task branch if its tip is durable or archived and it is checked out nowhere (kept otherwise, exit 1).
        #[arg(long)]
        delete_branch: bool,
        /// Confirm the trusted remote's branches first, by URL: fetch them into its tracking refs (a dry run only lists them with ls-remote); commits on them count as durable in this retire.
        #[arg(long)]
        fetch: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List records, their states and holders.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one record.
    Show {
        /// Record id or unique prefix.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Keep a worktree for a named owner (the record becomes retained).
    ///
    /// On an active record the hold is recorded now and takes effect when
    /// the record turns terminal.
    Hold {
        /// Record id or unique prefix.
        id: String,
        /// Why it is kept.
        #[arg(long, value_name = "R")]
        reason: String,
        /// Who keeps it, as KIND:NAME (default: config `owner` or $LEASE_OWNER, else manual:USER).
        #[arg(long, value_name = "KIND:NAME")]
        owner: Option<String>,
        /// Until when: RFC 3339 or a span such as 7d or 12h (default: no expiry).
        #[arg(long, value_name = "WHEN")]
        until: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Let a retained worktree be retired again (retained -> terminal).
    Release {
        /// Record id or unique prefix.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Reconcile: finish what crashes left half-done, retire candidates,
    /// report orphans. A dry run unless --apply.
    Reap {
        /// Say what would happen; change nothing (the default).
        #[arg(long, conflicts_with = "apply")]
        dry_run: bool,
        /// Act: finish, retire and persist orphans.
        #[arg(long)]
        apply: bool,
        /// Where retires archive commits that are not durable (see `lease retire --archive`).
        #[arg(long, value_enum, value_name = "MODE")]
        archive: Option<ArchiveMode>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Record an unrecorded linked worktree as adopted and terminal, running nothing.
    ///
    /// For an orphan registration that reap reported: `lease retire` can then
    /// take it through the gates. Reap itself never retires adopted worktrees.
    Adopt {
        /// The worktree's top directory (as `git worktree list` names it).
        path: PathBuf,
        /// Owner as KIND:NAME (default: config `owner` or $LEASE_OWNER, else manual:USER).
        #[arg(long, value_name = "KIND:NAME")]
        owner: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove the registration of one worktree whose directory is missing.
    ///
    /// Never a repository-wide `git worktree prune`.
    Repair {
        /// The worktree's registered path.
        path: PathBuf,
        /// Say what would happen; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Take the lease named by LEASE_* again and run a command holding it.
    ///
    /// For a process started inside `lease exec` that lost the inherited
    /// descriptor (Python's subprocess and Node's child_process close it).
    /// lease checks the lease file, locks it shared without waiting, and
    /// replaces itself with the command, which inherits the lock at
    /// LEASE_FD. Exit 125 when it cannot join, with the reason code.
    Join {
        /// The command and its arguments.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<OsString>,
    },
    /// Bring back an archived worktree: a new leased worktree at the archived
    /// HEAD, after re-verifying the bundle. One-shot per archive.
    ///
    /// Writes only into a directory it creates; never moves an existing ref
    /// (a moved branch gets `<branch>-restored-<id prefix>`).
    Restore {
        /// Record id (or unique prefix) of the retired worktree.
        id: String,
        /// Where to create the worktree (must not exist).
        #[arg(long, value_name = "PATH")]
        to: Option<PathBuf>,
        /// Branch name to use (held `branch-moved` if it exists elsewhere).
        #[arg(long, value_name = "NAME")]
        branch: Option<String>,
        /// Restore again although the archive was restored before.
        #[arg(long)]
        again: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the records that have archives.
    Archives {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Work with one archive.
    Archive {
        #[command(subcommand)]
        action: ArchiveCmd,
    },
    /// Work with the audit log.
    Audit {
        #[command(subcommand)]
        action: AuditCmd,
    },
    /// Show the effective policy and where each value came from.
    ///
    /// Layers: /etc/lease/config.toml, $XDG_CONFIG_HOME/lease/config.toml
    /// (else ~/.config/lease/config.toml), --config FILE (else
    /// $LEASE_CONFIG), the documented LEASE_* variables, then flags; safety
    /// settings join to the stricter value whatever the order.
    Config {
        /// Show the effective values (the default and only action).
        #[arg(long)]
        show: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print Prometheus metrics of the state root (for node_exporter's textfile collector).
    Metrics {
        /// Write to FILE atomically (a temp file in its directory, then rename) instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Write the man page and shell completions (for packagers and scripts/gen-docs).
    #[command(hide = true)]
    Generate {
        /// Directory to write `man/lease.1` and `completions/` into.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum AuditCmd {
    /// Walk the audit log's hash chain: exit 0 when intact, 3 at the first
    /// break (line and kind: torn, malformed, too-long, edited, reordered,
    /// duplicate, truncated).
    ///
    /// A torn line (a crash or a full disk cut a write short) that the next
    /// line records the recovery of is reported, not a break. Reads only.
    Verify {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum ArchiveCmd {
    /// Re-verify an archive (sha256, unbundle with fsck): exit 0 or 1.
    Verify {
        /// Record id or unique prefix.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete an archive (bundle and archive record) once every commit it
    /// holds is reachable from the trusted remote's branches, confirmed
    /// with `git ls-remote`; held `archive-unreachable` otherwise (exit 1).
    ///
    /// Archival refs on the remote are deleted too, with a push guarded by
    /// their recorded commits.
    Drop {
        /// Record id or unique prefix.
        id: String,
        /// Drop it even though some commits exist nowhere else (written to the audit log).
        #[arg(long)]
        unreachable_ok: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Returns the clap definition of the whole command line, for the man page
/// and completions generators.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Parses the arguments, runs the command, and returns the exit code.
pub fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let is_exec = subcommand_name().is_some_and(|a| a == "exec" || a == "join");
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ if is_exec => ExitCode::from(exit::EXEC_FAILED),
                _ => ExitCode::from(exit::USAGE),
            };
        }
    };
    log::install(cli.verbose, cli.quiet, cli.log_format);
    let is_exec = matches!(cli.command, Cmd::Exec { .. });
    if !matches!(cli.command, Cmd::Join { .. } | Cmd::Generate { .. }) {
        let flags = flag_layer(&cli.command);
        let resolved = crate::policy::load_layers(cli.config.as_deref()).and_then(|mut l| {
            l.push((crate::policy::LayerFrom::Flags, flags));
            crate::policy::resolve(&l)
        });
        match resolved {
            Ok(p) => crate::policy::install(p),
            Err(e) => {
                print_error(&e);
                return ExitCode::from(if is_exec {
                    exit::EXEC_FAILED
                } else {
                    class_code(e.class())
                });
            }
        }
    }
    match &cli.command {
        Cmd::Retire { json, .. }
        | Cmd::Reap { json, .. }
        | Cmd::Restore { json, .. }
        | Cmd::Archive {
            action: ArchiveCmd::Verify { json, .. },
        } => progress::install(*json, cli.quiet),
        _ => {}
    }
    match cli.command {
        Cmd::Exec {
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
        } => {
            let req = (|| -> Result<ExecRequest> {
                Ok(ExecRequest {
                    repo,
                    branch,
                    base,
                    adopt,
                    resume,
                    keep,
                    owner: owner.as_deref().map(Owner::parse).transpose()?,
                    reap_if_low,
                    command,
                })
            })();
            exec(req, json)
        }
        Cmd::Retire {
            targets,
            all,
            dry_run,
            delete_branch,
            fetch,
            json,
            ..
        } => finish({
            // The archive mode comes from the policy, which joined `--archive`.
            let engine = |reg, git| {
                Engine::new(reg, git, dry_run)
                    .with_delete_branch(delete_branch)
                    .with_fetch(fetch)
            };
            retire(&targets, all, dry_run, engine, json)
        }),
        Cmd::List { json } => finish(list(json)),
        Cmd::Show { id, json } => finish(show(&id, json)),
        Cmd::Hold {
            id,
            reason,
            owner,
            until,
            json,
        } => finish(reconcile::hold(
            &id,
            reason,
            owner.as_deref(),
            until.as_deref(),
            json,
        )),
        Cmd::Release { id, json } => finish(reconcile::release(&id, json)),
        Cmd::Reap {
            dry_run: _,
            apply,
            archive: _,
            json,
        } => finish(reconcile::reap(apply, json)),
        Cmd::Adopt { path, owner, json } => finish(adopt(&path, owner.as_deref(), json)),
        Cmd::Repair {
            path,
            dry_run,
            json,
        } => finish(reconcile::repair(&path, dry_run, json)),
        Cmd::Join { command } => join(command),
        Cmd::Restore {
            id,
            to,
            branch,
            again,
            json,
        } => finish(restore::restore(id, to, branch, again, json)),
        Cmd::Archives { json } => finish(restore::archives(json)),
        Cmd::Archive {
            action: ArchiveCmd::Verify { id, json },
        } => finish(restore::verify(&id, json)),
        Cmd::Archive {
            action:
                ArchiveCmd::Drop {
                    id,
                    unreachable_ok,
                    json,
                },
        } => finish(restore::drop(&id, unreachable_ok, json)),
        Cmd::Audit {
            action: AuditCmd::Verify { json },
        } => finish(audit::verify(json)),
        Cmd::Config { show: _, json } => finish(config::show(json)),
        Cmd::Metrics { out } => finish(metrics::metrics(out.as_deref())),
        Cmd::Generate { out } => finish(generate::generate(&out)),
    }
}

/// Returns the first argument that is not a global flag (or its value): the
/// subcommand's name, for picking the exit code of a parse error.
fn subcommand_name() -> Option<OsString> {
    let mut args = std::env::args_os().skip(1);
    while let Some(a) = args.next() {
        if a == "--log-format" || a == "--config" {
            args.next();
        } else if !a.to_string_lossy().starts_with('-') {
            return Some(a);
        }
    }
    None
}

fn class_code(c: Class) -> u8 {
    match c {
        Class::Held => exit::HELD,
        Class::Usage => exit::USAGE,
        Class::Failed => exit::FAILED,
    }
}

fn print_error(e: &Error) {
    match e.reason() {
        Some(r) => {
            err!("error: {e} [{}]", r.code());
            err!("hint: {}", r.next_action());
        }
        None => err!("error: {e}"),
    }
}

fn finish(r: Result<u8>) -> ExitCode {
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            print_error(&e);
            ExitCode::from(class_code(e.class()))
        }
    }
}

fn exec(req: Result<ExecRequest>, json: bool) -> ExitCode {
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

/// Runs `lease join`: on success this process becomes the command and never
/// returns here.
fn join(command: Vec<OsString>) -> ExitCode {
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

/// The flags of `cmd` that feed config (the last layer of the policy).
fn flag_layer(cmd: &Cmd) -> crate::policy::Layer {
    let listed = |v: &[String]| (!v.is_empty()).then(|| v.to_vec());
    match cmd {
        Cmd::Exec {
            min_free,
            rebuildable,
            allow_temp_root,
            ..
        } => crate::policy::Layer {
            min_free: min_free.clone(),
            rebuildable: listed(rebuildable),
            allow_temp_worktree_root: allow_temp_root.then_some(true),
            ..Default::default()
        },
        Cmd::Retire {
            rebuildable,
            archive,
            ..
        } => crate::policy::Layer {
            rebuildable: listed(rebuildable),
            archive: *archive,
            ..Default::default()
        },
        Cmd::Reap { archive, .. } => crate::policy::Layer {
            archive: *archive,
            ..Default::default()
        },
        _ => crate::policy::Layer::default(),
    }
}

fn adopt(path: &std::path::Path, owner: Option<&str>, json: bool) -> Result<u8> {
    let owner = owner.map(Owner::parse).transpose()?;
    let r = crate::launcher::adopt_only(path, owner)?;
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&r).expect("a report serializes")
        );
    } else {
        out!(
            "adopted `{}` as {} ({}); `lease retire {}` takes it through the gates",
            r.worktree,
            r.id,
            r.state.name(),
            &r.id[..8]
        );
    }
    Ok(exit::OK)
}

fn retire(
    targets: &[String],
    all: bool,
    dry_run: bool,
    engine: impl FnOnce(Registry, Git) -> Engine,
    json: bool,
) -> Result<u8> {
    if targets.is_empty() && !all {
        return Err(Error::Usage(
            "name a record id or worktree path, or pass --all".into(),
        ));
    }
    if !targets.is_empty() && all {
        return Err(Error::Usage("--all takes no targets".into()));
    }
    let root = if dry_run {
        match StateRoot::open_existing()? {
            Some(r) => r,
            None => {
                return Err(Error::Usage(
                    "no state root yet: nothing is recorded".into(),
                ));
            }
        }
    } else {
        StateRoot::open_or_create()?
    };
    let reg = Registry::new(root);
    let git = Git::resolve()?;
    let info = GitInfo {
        path: git.path().to_string_lossy().into_owned(),
        version: git.version().to_string(),
    };
    let engine = engine(reg.clone(), git);
    let mut ids: Vec<Result<String, TargetReport>> = Vec::new();
    if all {
        for l in reg.scan()? {
            match l {
                // Terminal and interrupted records, and active ones whose every
                // launcher is gone (gate 3 then proves them interrupted).
                Loaded::Ok(r)
                    if matches!(r.state, State::Terminal | State::Interrupted)
                        || (r.state == State::Active && !r.any_launcher_alive()) =>
                {
                    ids.push(Ok(r.id.clone()))
                }
                Loaded::Ok(_) => {}
                Loaded::Bad { id, path, problem } => {
                    let mut t = TargetReport::new(Some(id), None, Disposition::Held);
                    t.error = Some(format!("record `{}` is {problem}", path.display()));
                    ids.push(Err(t));
                }
            }
        }
    } else {
        for t in targets {
            let target = resolve_target(&engine, t)?;
            let dup =
                matches!(&target, Ok(id) if ids.iter().any(|i| i.as_ref().is_ok_and(|x| x == id)));
            if !dup {
                ids.push(target);
            }
        }
    }
    let reports: Vec<TargetReport> = ids
        .into_iter()
        .map(|r| match r {
            Ok(id) => engine.retire(&id),
            Err(t) => t,
        })
        .collect();
    let code = reports.iter().map(target_code).max().unwrap_or(exit::OK);
    let report = RetireReport {
        dry_run,
        git: info,
        targets: reports,
    };
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&report).expect("a report serializes")
        );
    } else if report.targets.is_empty() {
        out!("nothing to retire");
    } else {
        for t in &report.targets {
            for line in render_target(t) {
                out!("{line}");
            }
        }
    }
    Ok(code)
}

/// Maps a target name to a record id; an unrecorded worktree is a held target.
fn resolve_target(engine: &Engine, t: &str) -> Result<Result<String, TargetReport>> {
    let looks_like_id = t.len() >= 8
        && t.bytes().all(|b| b.is_ascii_hexdigit())
        && !std::path::Path::new(t).exists();
    if looks_like_id {
        return engine.registry().resolve(t).map(Ok);
    }
    crate::paths::refuse_newline("worktree", std::path::Path::new(t))?;
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Usage(format!("cannot read the current directory: {e}")))?;
    let Some(absolute) = lexical_absolute(&cwd, t) else {
        return Err(Error::Usage(format!(
            "`{t}` is not a normal path (`.` or `..` after a name, or `//`); name the worktree's top directory"
        )));
    };
    let path = PathBuf::from(t);
    if path.exists() && std::fs::canonicalize(&path).ok().as_deref() != Some(absolute.as_path()) {
        return Err(Error::Usage(format!(
            "`{t}` is reached through a symlink; name the worktree's physical top directory"
        )));
    }
    if !path.exists() {
        return Err(Error::Usage(format!(
            "`{t}` is neither a record id nor an existing path"
        )));
    }
    match engine.find_by_path(&path)? {
        Some(id) => Ok(Ok(id)),
        None => {
            let hold = crate::plan::Hold::new(
                crate::plan::HoldReason::NotRecorded,
                format!("`{t}` has no lease record"),
            );
            Ok(Err(TargetReport::new(
                None,
                Some(t.to_string()),
                Disposition::Held,
            )
            .held(&[hold])))
        }
    }
}

/// Returns true if `t` has no `.`, `..` or empty component (a single
/// trailing `/` is allowed): paths are resolved physically, never by lexical
/// normalization followed by acting on the result.
/// The absolute path `t` names from `cwd` (a physical directory, as
/// getcwd(3) returns it), or `None` if `t` is not normal: leading `./` and
/// `../` are resolved against `cwd` (no symlink can hide there), but a `.`
/// or `..` after a name, or an empty component (`//`), is refused, since a
/// symlinked name before `..` would make the lexical and physical paths
/// differ.
fn lexical_absolute(cwd: &std::path::Path, t: &str) -> Option<PathBuf> {
    let t = t.strip_suffix('/').unwrap_or(t);
    let (mut out, body) = match t.strip_prefix('/') {
        Some(b) => (PathBuf::from("/"), b),
        None => (cwd.to_path_buf(), t),
    };
    let mut parts = body.split('/').peekable();
    while let Some(&c) = parts.peek() {
        match c {
            "." if !t.starts_with('/') => {}
            ".." if !t.starts_with('/') => {
                out.pop();
            }
            _ => break,
        }
        parts.next();
    }
    let mut named = false;
    for c in parts {
        if c.is_empty() || c == "." || c == ".." {
            return None;
        }
        out.push(c);
        named = true;
    }
    named.then_some(out)
}

fn target_code(t: &TargetReport) -> u8 {
    if t.error.is_some() {
        return exit::FAILED;
    }
    match t.disposition {
        // A removal whose requested branch deletion was refused: a hold.
        Disposition::Removed if t.branch.as_ref().is_some_and(|b| b.reason.is_some()) => exit::HELD,
        Disposition::Removed | Disposition::WouldRemove => exit::OK,
        Disposition::Held | Disposition::Retained => exit::HELD,
    }
}

fn render_target(t: &TargetReport) -> Vec<String> {
    let what = t.worktree.clone().unwrap_or_default();
    let id =
        t.id.as_deref()
            .map(|i| &i[..12.min(i.len())])
            .unwrap_or("-");
    let mut out = Vec::new();
    if let Some(e) = &t.error
        && t.worktree.is_none()
    {
        out.push(format!("error ({id}): {e}"));
        return out;
    }
    match t.disposition {
        Disposition::Removed => {
            let mut s = format!("removed `{what}` ({id})");
            if let Some(a) = &t.archive {
                s.push_str(&format!(
                    "; archived {} commit(s) to `{}`",
                    a.commits, a.location
                ));
            }
            if let Some(tb) = &t.tombstone {
                s.push_str(&format!("; reclaimed {} bytes", tb.bytes_reclaimed));
            }
            out.push(s);
            if let Some(b) = &t.branch {
                match (b.deleted, b.reason) {
                    (true, _) => out.push(format!(
                        "  deleted branch `{}` (was {})",
                        b.name,
                        b.old_tip.as_deref().unwrap_or("-")
                    )),
                    (false, Some(r)) => {
                        out.push(format!(
                            "  kept branch `{}`: {} ({})",
                            b.name,
                            r.code(),
                            b.detail
                        ));
                        out.push(format!("  hint: {}", r.next_action()));
                    }
                    (false, None) => out.push(format!("  branch `{}`: {}", b.name, b.detail)),
                }
            }
        }
        Disposition::WouldRemove => {
            out.push(format!(
                "would remove `{what}` ({id}): {}",
                t.detail.join("; ")
            ));
        }
        Disposition::Held | Disposition::Retained => {
            let word = if t.disposition == Disposition::Retained {
                "retained"
            } else {
                "held"
            };
            let codes: Vec<String> = t.reasons.iter().map(|r| r.code()).collect();
            out.push(format!("{word} `{what}` ({id}): {}", codes.join(", ")));
            for d in &t.detail {
                out.push(format!("  {d}"));
            }
            if let Some(e) = &t.error {
                out.push(format!("  error: {e}"));
            }
            if let Some(n) = &t.next {
                out.push(format!("  hint: {n}"));
            }
        }
    }
    for f in &t.filters {
        let cmds: Vec<&str> = [f.process.as_deref(), f.clean.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        out.push(format!(
            "  ran trusted filter `{}` (`{}`, {})",
            f.driver,
            cmds.join("` / `"),
            f.origin
        ));
    }
    out
}

/// A record as JSON with its current `holders` (pids, from `holders`, a
/// map built by one `/proc` scan).
/// What `/proc` says about the leases of a listing: descriptors per lease
/// (one scan of `/proc`), the flocks of `/proc/locks` (one read), and the
/// superblock device of the lease directory's mount when it differs from
/// `st_dev` (btrfs), to match `/proc/locks` lines.
struct SeenLeases {
    holders: std::collections::HashMap<(u64, u64), Vec<u32>>,
    flocks: Option<crate::os::procfs::Flocks>,
    table_dev: Option<u64>,
}

impl SeenLeases {
    fn of(reg: &Registry, ids: &[(u64, u64)]) -> SeenLeases {
        SeenLeases {
            holders: crate::os::procfs::holders_of(ids),
            flocks: crate::os::procfs::Flocks::read(),
            table_dev: crate::os::procfs::table_dev_of(&reg.root().leases()),
        }
    }

    /// What `/proc` shows of record `r`'s lease (a removed record's lease
    /// file was unlinked: its inode number may name another file now).
    fn of_record(&self, r: &Record) -> crate::plan::LeaseSeen {
        let Some(l) = r.lease.as_ref().filter(|_| r.state != State::Removed) else {
            return crate::plan::LeaseSeen {
                complete: true,
                ..Default::default()
            };
        };
        crate::plan::LeaseSeen {
            pids: self.holders.get(&l.id()).cloned().unwrap_or_default(),
            lock: self
                .flocks
                .as_ref()
                .and_then(|f| f.on(l.id(), self.table_dev)),
            complete: self.flocks.as_ref().is_some_and(|f| f.complete()),
        }
    }
}

/// `holders` (pids with a descriptor on the lease) and `locked`: `shared`
/// or `exclusive` when `/proc/locks` lists that flock on it, `none`, or
/// `unknown` when this `/proc` cannot show every lock and none is listed.
fn record_json(r: &Record, seen: &crate::plan::LeaseSeen) -> serde_json::Value {
    let mut v = serde_json::to_value(r).expect("a record serializes");
    v["holders"] = serde_json::json!(seen.pids);
    v["locked"] = serde_json::json!(locked_word(seen));
    v
}

fn locked_word(seen: &crate::plan::LeaseSeen) -> &'static str {
    match seen.lock {
        Some(crate::plan::FlockSeen::Shared) => "shared",
        Some(crate::plan::FlockSeen::Exclusive) => "exclusive",
        None if seen.complete || !seen.pids.is_empty() => "none",
        None => "unknown",
    }
}

fn list(json: bool) -> Result<u8> {
    let Some(root) = StateRoot::open_existing()? else {
        if json {
            out_raw!("[]");
        } else {
            out!("no records");
        }
        return Ok(exit::OK);
    };
    let reg = Registry::new(root);
    let loaded = reg.scan()?;
    // One /proc scan for every lease that can still be held.
    let ids: Vec<(u64, u64)> = loaded
        .iter()
        .filter_map(|l| match l {
            Loaded::Ok(r) if r.state != State::Removed => r.lease.as_ref().map(|l| l.id()),
            _ => None,
        })
        .collect();
    let seen = SeenLeases::of(&reg, &ids);
    if json {
        let items: Vec<serde_json::Value> = loaded
            .iter()
            .map(|l| match l {
                Loaded::Ok(r) => record_json(r, &seen.of_record(r)),
                Loaded::Bad { id, path, problem } => serde_json::json!({
                    "id": id, "state": "unreadable", "path": path.to_string_lossy(), "problem": problem
                }),
            })
            .collect();
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&items).expect("json serializes")
        );
        return Ok(exit::OK);
    }
    if loaded.is_empty() {
        out!("no records");
        return Ok(exit::OK);
    }
    out!(
        "{:<12}  {:<11}  {:<7}  {:<8}  {:<20}  {:<20}  WORKTREE",
        "ID",
        "STATE",
        "ORIGIN",
        "HOLDERS",
        "OWNER",
        "BRANCH"
    );
    for l in &loaded {
        match l {
            Loaded::Ok(r) => {
                // A count of visible holders; `locked` when only
                // /proc/locks shows the lease held, `?` when this /proc
                // cannot tell.
                let seen = seen.of_record(r);
                let holders = match (seen.pids.len(), locked_word(&seen)) {
                    (0, "shared" | "exclusive") => "locked".to_string(),
                    (0, "unknown") => "?".to_string(),
                    (n, _) => n.to_string(),
                };
                out!(
                    "{:<12}  {:<11}  {:<7}  {:<8}  {:<20}  {:<20}  {}",
                    &r.id[..12],
                    r.state.name(),
                    match r.origin {
                        crate::registry::Origin::Created => "created",
                        crate::registry::Origin::Adopted => "adopted",
                    },
                    holders,
                    format!("{}:{}", r.owner.kind, r.owner.name),
                    r.branch.as_deref().unwrap_or("(detached)"),
                    r.worktree.as_ref().map(|w| w.path.as_str()).unwrap_or("-"),
                );
            }
            Loaded::Bad { id, problem, .. } => {
                out!(
                    "{:<12}  {:<11}  {problem}",
                    &id[..12.min(id.len())],
                    "unreadable"
                );
            }
        }
    }
    Ok(exit::OK)
}

fn show(id: &str, json: bool) -> Result<u8> {
    let Some(root) = StateRoot::open_existing()? else {
        return Err(Error::Usage(format!("no record matches `{id}`")));
    };
    let reg = Registry::new(root);
    let id = reg.resolve(id)?;
    let r = reg.get(&id)?;
    let ids: Vec<(u64, u64)> = r.lease.iter().map(|l| l.id()).collect();
    let seen = SeenLeases::of(&reg, &ids).of_record(&r);
    let v = record_json(&r, &seen);
    if json {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(&v).expect("json serializes")
        );
        return Ok(exit::OK);
    }
    out!("id:        {}", r.id);
    out!("state:     {}", r.state.name());
    out!(
        "worktree:  {}",
        r.worktree.as_ref().map(|w| w.path.as_str()).unwrap_or("-")
    );
    out!("repo:      {}", r.repo);
    out!("branch:    {}", r.branch.as_deref().unwrap_or("(detached)"));
    out!("owner:     {}:{}", r.owner.kind, r.owner.name);
    let pids: Vec<String> = v["holders"]
        .as_array()
        .into_iter()
        .flatten()
        .map(ToString::to_string)
        .collect();
    match (pids.is_empty(), locked_word(&seen)) {
        (false, _) => out!("holders:   pid {} (hold the lease)", pids.join(", ")),
        (true, "shared" | "exclusive") => out!(
            "holders:   none visible, but /proc/locks lists a {} flock on the lease: it is held (by a process in another pid namespace, or through a descriptor in flight over a unix socket)",
            locked_word(&seen)
        ),
        (true, "unknown") => out!(
            "holders:   none visible; this /proc (another pid namespace's) cannot show every lock, so the lease may be held"
        ),
        _ => out!("holders:   none (the lease is free)"),
    }
    if let Some(s) = r.sessions.last() {
        let alive = s.launcher_alive();
        out!(
            "launcher:  pid {} ({})",
            s.pid,
            match (alive, s.ended_at.as_deref()) {
                (true, _) => "running".to_string(),
                (false, Some(at)) => format!("ended at {at}"),
                (false, None) => "gone without recording an end".to_string(),
            }
        );
    }
    if let Some(o) = &r.outcome {
        match (o.code, o.signal) {
            (Some(c), _) => out!("outcome:   exit {c} at {}", o.at),
            (_, Some(s)) => out!("outcome:   signal {s} at {}", o.at),
            _ => {}
        }
    }
    if let Some(a) = &r.archive {
        out!(
            "archive:   {} ({} commit(s), sha256 {})",
            a.location,
            a.commits,
            a.sha256
        );
    }
    if let Some(at) = r.attempts.last() {
        let codes: Vec<String> = at.reasons.iter().map(|c| c.code()).collect();
        out!("last hold: {} at {}", codes.join(", "), at.at);
    }
    if let Some(t) = &r.tombstone {
        out!(
            "removed:   {} ({} bytes reclaimed)",
            t.removed_at,
            t.bytes_reclaimed
        );
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_paths() {
        let cwd = std::path::Path::new("/w/cwd");
        for (ok, abs) in [
            ("wt", "/w/cwd/wt"),
            ("/a/b", "/a/b"),
            ("/a/b/", "/a/b"),
            ("rel/wt", "/w/cwd/rel/wt"),
            ("./a", "/w/cwd/a"),
            ("../wt", "/w/wt"),
            ("../../x/y", "/x/y"),
            ("./../wt/", "/w/wt"),
        ] {
            assert_eq!(
                lexical_absolute(cwd, ok).as_deref(),
                Some(std::path::Path::new(abs)),
                "{ok}"
            );
        }
        for bad in [
            "", ".", "..", "/", "/a/../b", "a/.", "a/../b", "/a//b", "a/b/..", "/../a", "./",
        ] {
            assert_eq!(lexical_absolute(cwd, bad), None, "{bad}");
        }
    }
}
