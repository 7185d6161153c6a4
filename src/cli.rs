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
use crate::launcher::ExecRequest;
use crate::registry::Owner;
use crate::retire::{ArchiveMode, Engine};

mod adopt;
mod archive;
mod archives;
mod audit;
mod config;
mod exec;
mod generate;
mod hold;
mod join;
mod list;
mod log;
mod metrics;
mod progress;
mod reap;
mod release;
mod repair;
mod restore;
mod retire;
mod show;
mod target;

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
            exec::exec(req, json)
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
            retire::retire(&targets, all, dry_run, engine, json)
        }),
        Cmd::List { json } => finish(list::list(json)),
        Cmd::Show { id, json } => finish(show::show(&id, json)),
        Cmd::Hold {
            id,
            reason,
            owner,
            until,
            json,
        } => finish(hold::hold(
            &id,
            reason,
            owner.as_deref(),
            until.as_deref(),
            json,
        )),
        Cmd::Release { id, json } => finish(release::release(&id, json)),
        Cmd::Reap {
            dry_run: _,
            apply,
            archive: _,
            json,
        } => finish(reap::reap(apply, json)),
        Cmd::Adopt { path, owner, json } => finish(adopt::adopt(&path, owner.as_deref(), json)),
        Cmd::Repair {
            path,
            dry_run,
            json,
        } => finish(repair::repair(&path, dry_run, json)),
        Cmd::Join { command } => join::join(command),
        Cmd::Restore {
            id,
            to,
            branch,
            again,
            json,
        } => finish(restore::restore(id, to, branch, again, json)),
        Cmd::Archives { json } => finish(archives::archives(json)),
        Cmd::Archive {
            action: ArchiveCmd::Verify { id, json },
        } => finish(archive::verify(&id, json)),
        Cmd::Archive {
            action:
                ArchiveCmd::Drop {
                    id,
                    unreachable_ok,
                    json,
                },
        } => finish(archive::drop(&id, unreachable_ok, json)),
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

pub(super) fn print_error(e: &Error) {
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
