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

mod adopt;
mod archive;
mod archives;
mod audit;
mod config;
mod create;
mod doctor;
mod du;
mod exec;
mod fast;
mod generate;
mod hint;
mod hold;
mod hook;
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
pub mod shim;
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
    /// Quieter stderr: -q silences lease's reports there (exec's notes and after-exit report, progress) and logs errors only; -qq silences everything lease prints there. stdout is never silenced.
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
    command: Verb,
}

/// The subcommands (one file per verb under `cli/`; `git::Cmd` is the one
/// git command builder).
#[derive(Debug, Subcommand)]
enum Verb {
    /// Run a command in a leased worktree (created, or adopted with --adopt).
    ///
    /// The command and every descendant that keeps the inherited descriptor
    /// hold the lease; retire refuses while any of them lives. lease's exit
    /// status is the command's.
    Exec(exec::Args),
    /// Create a leased worktree for a process lease does not start, and a
    /// keeper that holds the lease until that process exits.
    ///
    /// For agent hosts and CI runners that create worktrees from hooks.
    /// Prints the worktree's path (one JSON object with --json) only once
    /// the keeper holds the lease. The bound process's descendants do not
    /// inherit the lease.
    Create(create::Args),
    /// The keeper `lease create` starts (not for direct use).
    #[command(hide = true)]
    Keeper(create::KeeperArgs),
    /// Remove worktrees nobody uses and nothing would be lost from.
    Retire(retire::Args),
    /// List records, their states and holders.
    List(list::Args),
    /// Show one record.
    Show(show::Args),
    /// Show the disk each worktree holds, by class, and what a retire would reclaim now.
    ///
    /// Classes: tracked, untracked, ignored work, provisioned and unchanged,
    /// declared rebuildable, git admin. One walk per worktree; reads only
    /// (the record keeps the measured size), never locks the lease.
    Du(du::Args),
    /// Keep a worktree for a named owner (the record becomes retained).
    ///
    /// On an active record the hold is recorded now and takes effect when
    /// the record turns terminal.
    Hold(hold::Args),
    /// Let a retained worktree be retired again (retained -> terminal).
    Release(release::Args),
    /// Reconcile: finish what crashes left half-done, retire candidates,
    /// report orphans. A dry run unless --apply.
    Reap(reap::Args),
    /// Record an unrecorded linked worktree as adopted and terminal, running nothing.
    ///
    /// For an orphan registration that reap reported: `lease retire` can then
    /// take it through the gates. Reap itself never retires adopted worktrees.
    Adopt(adopt::Args),
    /// Remove the registration of one worktree whose directory is missing.
    ///
    /// Never a repository-wide `git worktree prune`.
    Repair(repair::Args),
    /// Take the lease named by LEASE_* again and run a command holding it.
    ///
    /// For a process started inside `lease exec` that lost the inherited
    /// descriptor (Python's subprocess and Node's child_process close it).
    /// lease checks the lease file, locks it shared without waiting, and
    /// replaces itself with the command, which inherits the lock at
    /// LEASE_FD. Exit 125 when it cannot join, with the reason code.
    Join(join::Args),
    /// Bring back an archived worktree: a new leased worktree at the archived
    /// HEAD, after re-verifying the bundle. One-shot per archive.
    ///
    /// Writes only into a directory it creates; never moves an existing ref
    /// (a moved branch gets `<branch>-restored-<id prefix>`).
    Restore(restore::Args),
    /// List the records that have archives.
    Archives(archives::Args),
    /// Work with one archive.
    Archive {
        #[command(subcommand)]
        action: archive::ArchiveCmd,
    },
    /// Work with the audit log.
    Audit {
        #[command(subcommand)]
        action: audit::AuditCmd,
    },
    /// Show the effective policy and where each value came from.
    ///
    /// Layers: /etc/lease/config.toml, $XDG_CONFIG_HOME/lease/config.toml
    /// (else ~/.config/lease/config.toml), --config FILE (else
    /// $LEASE_CONFIG), the documented LEASE_* variables, then flags; safety
    /// settings join to the stricter value whatever the order.
    Config(config::Args),
    /// Check this machine for lease: git, the state root, flock support, the
    /// current repository's trusted remote, lease and its git shim on PATH.
    ///
    /// Each check says what it found and the command to run when something
    /// is off. Reads only. Exit 0, or 3 when lease cannot work here.
    Doctor(doctor::Args),
    /// Print Prometheus metrics of the state root (for node_exporter's textfile collector).
    Metrics(metrics::Args),
    /// Speak an agent host's hook contract (Claude Code's WorktreeCreate and WorktreeRemove).
    ///
    /// A JSON payload on stdin; only the worktree's path on stdout. See the
    /// guide's chapter "Using lease with your agent host".
    Hook(hook::Args),
    /// Write the man page and shell completions (for packagers and scripts/gen-docs).
    #[command(hide = true)]
    Generate(generate::Args),
}

impl Verb {
    /// Returns true if the command was asked for JSON output (`--json`).
    fn json(&self) -> bool {
        match self {
            Verb::Exec(a) => a.json,
            Verb::Create(a) => a.json,
            // The keeper's stdio is /dev/null; the hook speaks its host's
            // contract (docs/guide.md), never lease's JSON document.
            Verb::Keeper(_) | Verb::Hook(_) => false,
            Verb::Retire(a) => a.json,
            Verb::List(a) => a.json,
            Verb::Show(a) => a.json,
            Verb::Du(a) => a.json,
            Verb::Hold(a) => a.json,
            Verb::Release(a) => a.json,
            Verb::Reap(a) => a.json,
            Verb::Adopt(a) => a.json,
            Verb::Repair(a) => a.json,
            Verb::Join(a) => a.json,
            Verb::Restore(a) => a.json,
            Verb::Archives(a) => a.json,
            Verb::Archive { action } => match action {
                archive::ArchiveCmd::Verify { json, .. }
                | archive::ArchiveCmd::Drop { json, .. } => *json,
            },
            Verb::Audit { action } => match action {
                audit::AuditCmd::Verify { json } => *json,
            },
            Verb::Config(a) => a.json,
            Verb::Doctor(a) => a.json,
            Verb::Metrics(a) => a.json,
            Verb::Generate(_) => false,
        }
    }
}

/// Returns the clap definition of the whole command line, for the man page
/// and completions generators.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Parses the arguments, runs the command, and returns the exit code.
pub fn run() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if let Some(code) = fast::run(&args) {
        return code;
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let is_exec = subcommand_name().is_some_and(|a| a == "exec" || a == "join");
            let _ = e.print();
            if let Some(tip) = dash_dash_tip(&e) {
                err!("tip: {tip}");
            }
            let code = match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    return ExitCode::SUCCESS;
                }
                _ if is_exec => exit::EXEC_FAILED,
                _ => exit::USAGE,
            };
            if json_asked() {
                // clap's first line (`error: unexpected argument '--x' found`).
                let rendered = e.render().to_string();
                let first = rendered.lines().next().unwrap_or_default();
                let message = first.strip_prefix("error: ").unwrap_or(first);
                print_error_json(is_exec, &usage_json(message, code));
            }
            return ExitCode::from(code);
        }
    };
    log::install(cli.verbose, cli.quiet, cli.log_format);
    QUIET.store(cli.quiet, std::sync::atomic::Ordering::Relaxed);
    let is_exec = matches!(cli.command, Verb::Exec(_));
    // The policy is resolved once, here, and handed to the command
    // (`ops::Ctx`); `join` and `generate` read no config.
    let ctx = if matches!(cli.command, Verb::Join(_) | Verb::Generate(_)) {
        crate::ops::Ctx::defaults()
    } else {
        let flags = flag_layer(&cli.command);
        let resolved = config::load_layers(cli.config.as_deref()).and_then(|mut l| {
            l.push((crate::policy::LayerFrom::Flags, flags));
            crate::policy::resolve(&l)
        });
        match resolved {
            Ok(p) => crate::ops::Ctx::new(p),
            Err(e) => {
                print_error(&e);
                let code = if is_exec {
                    exit::EXEC_FAILED
                } else {
                    class_code(e.class())
                };
                if cli.command.json() {
                    print_error_json(is_exec, &error_json(&e, code));
                }
                return ExitCode::from(code);
            }
        }
    };
    match &cli.command {
        Verb::Retire(retire::Args { json, .. })
        | Verb::Reap(reap::Args { json, .. })
        | Verb::Restore(restore::Args { json, .. })
        | Verb::Archive {
            action: archive::ArchiveCmd::Verify { json, .. },
        } => progress::install(*json, cli.quiet),
        _ => {}
    }
    let json = cli.command.json();
    let finish = |r: Result<u8>| finish(r, json);
    match cli.command {
        Verb::Exec(a) => exec::run(&ctx, a),
        Verb::Create(a) => create::run(&ctx, a, cli.config.clone()),
        Verb::Keeper(a) => create::keeper(&ctx, a),
        Verb::Retire(a) => finish(retire::run(&ctx, a)),
        Verb::List(a) => finish(list::run(&ctx, a)),
        Verb::Show(a) => finish(show::run(&ctx, a)),
        Verb::Du(a) => finish(du::run(&ctx, a)),
        Verb::Hold(a) => finish(hold::run(&ctx, a)),
        Verb::Release(a) => finish(release::run(&ctx, a)),
        Verb::Reap(a) => finish(reap::run(&ctx, a)),
        Verb::Adopt(a) => finish(adopt::run(&ctx, a)),
        Verb::Repair(a) => finish(repair::run(&ctx, a)),
        Verb::Join(a) => join::run(&ctx, a),
        Verb::Restore(a) => finish(restore::run(&ctx, a)),
        Verb::Archives(a) => finish(archives::run(&ctx, a)),
        Verb::Archive {
            action: archive::ArchiveCmd::Verify { id, json },
        } => finish(archive::verify(&ctx, &id, json)),
        Verb::Archive {
            action:
                archive::ArchiveCmd::Drop {
                    id,
                    unreachable_ok,
                    json,
                },
        } => finish(archive::drop(&ctx, &id, unreachable_ok, json)),
        Verb::Audit {
            action: audit::AuditCmd::Verify { json },
        } => finish(audit::verify(&ctx, json)),
        Verb::Config(a) => finish(config::run(&ctx, a)),
        Verb::Doctor(a) => finish(doctor::run(&ctx, a)),
        Verb::Metrics(a) => finish(metrics::run(&ctx, a)),
        Verb::Generate(a) => finish(generate::run(a)),
        Verb::Hook(a) => hook::run(&ctx, a, cli.config.clone()),
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

pub(super) fn class_code(c: Class) -> u8 {
    match c {
        Class::Held => exit::HELD,
        Class::Usage => exit::USAGE,
        Class::Failed => exit::FAILED,
    }
}

/// How many `-q` were given: 1 silences lease's reports on stderr (exec's
/// notes and after-exit report, progress), 2 everything lease prints on
/// stderr (errors too). stdout, a command's result, is never silenced.
static QUIET: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Returns the number of `-q` flags.
pub(super) fn quiet() -> u8 {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

pub(super) fn print_error(e: &Error) {
    if quiet() >= 2 {
        return;
    }
    match e.reason() {
        Some(r) => {
            err!("error: {e} [{}]", r.code());
            err!("hint: {}", r.next_action());
        }
        None => err!("error: {e}"),
    }
    if let Some(n) = hint::for_error(e) {
        err!("next: {n}");
    }
}

/// Turns a command's result into its exit code; an error is printed on
/// stderr, and under `--json` also as the one JSON document on stdout
/// ([`error_json`]).
fn finish(r: Result<u8>, json: bool) -> ExitCode {
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            print_error(&e);
            let code = class_code(e.class());
            if json {
                print_error_json(false, &error_json(&e, code));
            }
            ExitCode::from(code)
        }
    }
}

/// Returns the display form of record id `id` in human output: its first
/// 8 hex digits, widened (for every id of this run alike) only as far as
/// needed to tell apart two records of the state root that share them.
pub(super) fn short_id(id: &str) -> &str {
    static WIDTH: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let w = *WIDTH.get_or_init(|| {
        // The records directory does not depend on the policy.
        let ids = crate::ops::Ctx::defaults()
            .existing_root()
            .ok()
            .flatten()
            .and_then(|r| crate::store::registry::Registry::new(r).ids().ok())
            .unwrap_or_default();
        id_width(ids)
    });
    &id[..w.min(id.len())]
}

/// The shortest width, at least 8, at which every id of `ids` differs from
/// the others.
fn id_width(mut ids: Vec<String>) -> usize {
    ids.sort();
    let common = ids
        .windows(2)
        .map(|w| {
            w[0].bytes()
                .zip(w[1].bytes())
                .take_while(|(a, b)| a == b)
                .count()
        })
        .max()
        .unwrap_or(0);
    (common + 1).clamp(8, 32)
}

/// For `lease exec make test` (a command given without `--`), the tip to
/// put `--` before it, as the exact command line to run instead.
fn dash_dash_tip(e: &clap::Error) -> Option<String> {
    if e.kind() != clap::error::ErrorKind::UnknownArgument {
        return None;
    }
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let verb = args.iter().position(|a| a == "exec" || a == "join")?;
    if args.iter().any(|a| a == "--") {
        return None;
    }
    // The first word after the verb that is neither an option nor an
    // option's value starts the command.
    let mut i = verb + 1;
    let takes_value = [
        "--repo",
        "--branch",
        "--base",
        "--adopt",
        "--resume",
        "--owner",
        "--min-free",
        "--rebuildable",
        "--log-format",
        "--config",
    ];
    while i < args.len() && args[i].starts_with('-') {
        let a = &args[i];
        i += if takes_value.contains(&a.as_str()) {
            2
        } else {
            1
        };
    }
    if i >= args.len() {
        return None;
    }
    let mut fixed: Vec<String> = vec!["lease".into()];
    fixed.extend(args[..i].iter().cloned());
    fixed.push("--".into());
    fixed.extend(args[i..].iter().cloned());
    let line: Vec<String> = fixed.iter().map(|a| crate::plan::shell_quote(a)).collect();
    Some(format!("put `--` before the command: `{}`", line.join(" ")))
}

/// Returns true if `--json` appears among the arguments before `--`: a
/// command line clap refused still gets its JSON document.
fn json_asked() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

/// Prints a JSON error document: on stdout, or for `exec` and `join`
/// (whose stdout is the command's) as one line on stderr.
pub(super) fn print_error_json(on_stderr: bool, v: &serde_json::Value) {
    if on_stderr {
        err_raw!("{}", serde_json::to_string(v).expect("json serializes"));
    } else {
        out_raw!(
            "{}",
            serde_json::to_string_pretty(v).expect("json serializes")
        );
    }
}

/// The JSON document of a command that failed with `e` and exits `code`
/// (docs/record.md "The --json contract"): `error.kind` names the variant
/// (`io`, `git`, `usage`, `environment`, `record`, `unsafe-dir`, `refused`), `error.path`
/// the file or directory concerned when there is one, `error.reason` the
/// reason code when the error stands for one, and `error.next` a command to
/// run next.
pub(super) fn error_json(e: &Error, code: u8) -> serde_json::Value {
    let (kind, path) = match e.inner() {
        Error::Io { path, .. } => ("io", Some(path.as_path())),
        Error::Git { .. } => ("git", None),
        Error::Usage(_) => ("usage", None),
        Error::Environment(_) => ("environment", None),
        Error::Record { path, .. } => ("record", Some(path.as_path())),
        Error::UnsafeDir { path, .. } => ("unsafe-dir", Some(path.as_path())),
        Error::Refused { .. } => ("refused", None),
        Error::Context { .. } => unreachable!("inner() unwraps every Context"),
    };
    let reason = e.reason();
    serde_json::json!({
        "exit": code,
        "error": {
            "kind": kind,
            "message": e.to_string(),
            "path": path.map(|p| p.to_string_lossy()),
            "reason": reason.map(|r| r.code()),
            "next": hint::for_error(e),
        }
    })
}

/// The JSON document of a usage error found before any command ran (a
/// command line clap refused).
fn usage_json(message: &str, code: u8) -> serde_json::Value {
    serde_json::json!({
        "exit": code,
        "error": {
            "kind": "usage",
            "message": message,
            "path": null,
            "reason": null,
            "next": null,
        }
    })
}

/// The flags of `cmd` that feed config (the last layer of the policy).
fn flag_layer(cmd: &Verb) -> crate::policy::Layer {
    match cmd {
        Verb::Exec(a) => exec::flag_layer(a),
        Verb::Retire(a) => retire::flag_layer(a),
        Verb::Reap(a) => reap::flag_layer(a),
        _ => crate::policy::Layer::default(),
    }
}

/// Returns `Some(v)` if the flag was given at least once (a config layer
/// that leaves the value to the layers below otherwise).
fn listed(v: &[String]) -> Option<Vec<String>> {
    (!v.is_empty()).then(|| v.to_vec())
}
