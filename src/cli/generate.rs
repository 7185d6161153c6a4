//! `lease generate --out DIR`: the man page and shell completions, rendered
//! from the clap definitions so they cannot say something the parser does
//! not accept. `scripts/gen-docs` writes them into `docs/`; `scripts/test`
//! regenerates them into a temp dir and diffs.

use std::fs;
use std::path::Path;

use clap_complete::Shell;

use super::exit;
use crate::error::{IoResultExt, Result};

/// The arguments of `lease generate`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Directory to write `man/lease.1` and `completions/` into.
    #[arg(long, value_name = "DIR")]
    pub(super) out: std::path::PathBuf,
}

/// Runs `lease generate`.
pub(super) fn run(a: Args) -> Result<u8> {
    generate(&a.out)
}

/// The completion scripts written, one per shell, in this order.
const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// Writes `DIR/man/lease.1` and `lease-SUBCOMMAND.1`, and `DIR/completions/{lease.bash,_lease,lease.fish}`.
pub(super) fn generate(out: &Path) -> Result<u8> {
    let man_dir = out.join("man");
    let comp_dir = out.join("completions");
    fs::create_dir_all(&man_dir).at_do("cannot create", &man_dir)?;
    fs::create_dir_all(&comp_dir).at_do("cannot create", &comp_dir)?;

    // One page per subcommand (`lease-exec.1`, ...): `lease.1` refers to them.
    let mut root = super::command().disable_help_subcommand(true);
    root.build();
    write_pages(&root, &man_dir, true)?;

    for shell in SHELLS {
        let mut cmd = super::command();
        clap_complete::generate_to(shell, &mut cmd, "lease", &comp_dir)
            .at_do("cannot write completions into", &comp_dir)?;
    }
    Ok(exit::OK)
}

/// Writes the page of `cmd` and of each visible subcommand: clap's sections
/// (name, synopsis, description, options, subcommands), then EXIT STATUS,
/// and on the top page (`top`) ENVIRONMENT, FILES and EXAMPLES, then the
/// version.
fn write_pages(cmd: &clap::Command, dir: &Path, top: bool) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, false)?;
    }
    let man = clap_mangen::Man::new(cmd.clone());
    let path = dir.join(man.get_filename());
    let mut page: Vec<u8> = Vec::new();
    let render = |page: &mut Vec<u8>| -> std::io::Result<()> {
        man.render_title(page)?;
        man.render_name_section(page)?;
        man.render_synopsis_section(page)?;
        man.render_description_section(page)?;
        if cmd.get_arguments().any(|a| !a.is_hide_set()) {
            man.render_options_section(page)?;
        }
        if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
            man.render_subcommands_section(page)?;
        }
        let name = cmd.get_name();
        page.extend_from_slice(if name == "exec" || name == "join" {
            EXIT_STATUS_EXEC.as_bytes()
        } else {
            EXIT_STATUS.as_bytes()
        });
        if top {
            page.extend_from_slice(ENVIRONMENT.as_bytes());
            page.extend_from_slice(FILES.as_bytes());
            page.extend_from_slice(EXAMPLES.as_bytes());
        }
        if cmd.get_version().is_some() {
            man.render_version_section(page)?;
        }
        Ok(())
    };
    render(&mut page).at_do("cannot render the man page", &path)?;
    fs::write(&path, page).at_do("cannot write", &path)
}

/// EXIT STATUS of every command but `exec` and `join` (SPEC "Exit codes";
/// docs/exit-codes.md).
const EXIT_STATUS: &str = r#".SH "EXIT STATUS"
.TP
\fB0\fR
Done, or nothing to do.
.TP
\fB1\fR
Held: a gate refused (the reason codes are in the report; docs/reason\-codes.md). Nothing changed.
.TP
\fB2\fR
Usage error; nothing was opened for writing.
.TP
\fB3\fR
lease could not work at all: the state root is unusable or unsafe, a record it would change is corrupt or of a newer schema, or a reap's discovery was incomplete.
.PP
With \fB\-\-json\fR, stdout is exactly one JSON document whatever the status (docs/record.md).
"#;

/// EXIT STATUS of `exec` and `join`: the command's, transparently.
const EXIT_STATUS_EXEC: &str = r#".SH "EXIT STATUS"
The command's exit status, or 128+N when it died of signal N (lease re\-raises the signal on itself).
.TP
\fB125\fR
lease failed before the command ran (a usage error included).
.TP
\fB126\fR
The command was found but could not be executed.
.TP
\fB127\fR
The command was not found.
"#;

/// ENVIRONMENT: every `LEASE_*` variable lease reads or sets (docs/config.md).
const ENVIRONMENT: &str = r#".SH ENVIRONMENT
.TP
\fBLEASE_HOME\fR
The state root (default \fI$XDG_STATE_HOME/lease\fR, else \fI~/.local/state/lease\fR).
.TP
\fBLEASE_CONFIG\fR
A config file read after the system and user files (as \fB\-\-config\fR).
.TP
\fBLEASE_WORKTREE_ROOT\fR, \fBLEASE_TRUSTED_REMOTE\fR, \fBLEASE_GIT\fR, \fBLEASE_OWNER\fR, \fBLEASE_MIN_FREE\fR, \fBLEASE_ORPHAN_GRACE\fR, \fBLEASE_REBUILDABLE\fR, \fBLEASE_PROCESS_AUDIT\fR, \fBLEASE_ALLOW_TEMP_ROOT\fR, \fBLEASE_ARCHIVE\fR, \fBLEASE_TRUSTED_FILTERS\fR
The config keys \fBworktree_root\fR, \fBtrusted_remote\fR, \fBgit\fR, \fBowner\fR, \fBmin_free\fR, \fBorphan_grace\fR, \fBrebuildable\fR, \fBprocess_audit\fR, \fBallow_temp_worktree_root\fR, \fBarchive\fR and \fBtrusted_filters\fR, as a layer above the config files (docs/config.md); safety settings join to the stricter value.
.TP
\fBLEASE_ID\fR, \fBLEASE_FD\fR, \fBLEASE_FILE\fR, \fBLEASE_IDENTITY\fR, \fBLEASE_WORKTREE\fR
Set by \fBlease exec\fR for its command (the record id, the lease descriptor's number, the lease file, its identity, the worktree); read by \fBlease join\fR. Never configuration.
.TP
\fBLEASE_SLOT\fR
Set by \fBlease exec\fR for its command (and for config \fBteardown\fR): the record's slot, the lowest integer (from 0) no other record of the state root that is not removed holds; for ports. Absent for records made before slots existed. Never configuration.
.TP
\fBRUST_LOG\fR
When set and not empty, chooses what is logged on stderr (it replaces \fB\-v\fR and \fB\-q\fR).
.PP
Unknown \fBLEASE_*\fR variables are ignored, so lease runs inside a leased command.
"#;

/// FILES: the state root's layout (docs/record.md) and the config files.
const FILES: &str = r#".SH FILES
.TP
\fI/etc/lease/config.toml\fR, \fI$XDG_CONFIG_HOME/lease/config.toml\fR
System and user configuration (TOML; unknown keys are errors).
.TP
\fI<state root>/records/<id>.json\fR
One record per worktree, written atomically.
.TP
\fI<state root>/leases/<id>.lease\fR
The lease file; consumers hold its flock shared.
.TP
\fI<state root>/archives/<id>/<n>.bundle\fR
Verified bundles of commits that were not durable.
.TP
\fI<state root>/worktrees/\fR
The default worktree root.
.TP
\fI<state root>/audit.jsonl\fR
The append\-only, hash\-chained audit log.
"#;

/// EXAMPLES: the common jobs, as in README.md and docs/guide.md.
const EXAMPLES: &str = r#".SH EXAMPLES
.TP
\fBlease exec \-\- my\-agent \-\-task 42\fR
Run a command in a new leased worktree of the current repository; retire it when the command exits.
.TP
\fBlease exec \-\-keep \-\-branch fix \-\- make\fR
Keep the worktree afterwards (retained).
.TP
\fBlease list\fR
The live records: id, state, repository, branch, age, size, holders.
.TP
\fBlease retire \-\-dry\-run 3f2a9c1e\fR
What a retire would do; takes no lock, writes nothing.
.TP
\fBlease retire ../wt\fR
Retire a worktree by its path.
.TP
\fBlease reap \-\-apply\fR
Finish what crashes left half\-done and retire what nobody uses.
.TP
\fBlease restore 3f2a9c1e\fR
Bring archived commits back as a new leased worktree.
.TP
\fBlease doctor\fR
Check git, the state root, flock support, the trusted remote and the shim.
"#;

#[cfg(test)]
mod tests {
    use super::*;

    /// The top page names every `LEASE_*` variable docs/config.md names.
    #[test]
    fn environment_lists_every_documented_variable() {
        let docs = include_str!("../../docs/config.md");
        let mut rest = docs;
        while let Some(i) = rest.find("LEASE_") {
            rest = &rest[i..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect();
            rest = &rest[name.len()..];
            if name.len() > "LEASE_".len() {
                assert!(
                    ENVIRONMENT.contains(&format!("\\fB{name}\\fR")),
                    "{name} is in docs/config.md but not in ENVIRONMENT"
                );
            }
        }
    }
}
