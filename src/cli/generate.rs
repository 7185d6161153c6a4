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
    clap_mangen::generate_to(super::command(), &man_dir)
        .at_do("cannot write man pages into", &man_dir)?;

    for shell in SHELLS {
        let mut cmd = super::command();
        clap_complete::generate_to(shell, &mut cmd, "lease", &comp_dir)
            .at_do("cannot write completions into", &comp_dir)?;
    }
    Ok(exit::OK)
}
