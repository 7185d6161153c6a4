//! Remotes and their tracking refs: which remote lease trusts, and its
//! default-branch tracking ref, the durable ref of gate 6 (SPEC "durable").

use std::path::Path;

use crate::error::Result;
use crate::git::{self, RepoGit};

/// The trusted remote (SPEC/Words): config `trusted_remote` if set (none if
/// no such remote exists), else `origin` if it exists, else the upstream
/// remote of `branch`, else none. Read in the common git dir.
pub fn trusted_remote(rg: &RepoGit, common: &Path, branch: Option<&str>) -> Result<Option<String>> {
    let remotes = rg.cmd(common).arg("remote").probe()?;
    let remotes: Vec<String> = String::from_utf8_lossy(&remotes)
        .lines()
        .map(str::to_string)
        .collect();
    if let Some(t) = &crate::policy::current().trusted_remote {
        // Configured: that remote or none (then nothing is durable).
        return Ok(remotes.contains(&t.value).then(|| t.value.clone()));
    }
    if remotes.iter().any(|r| r == "origin") {
        return Ok(Some("origin".to_string()));
    }
    let Some(b) = branch else {
        return Ok(None);
    };
    let up = rg
        .cmd(common)
        .args(["for-each-ref", "--format=%(upstream:remotename)"])
        .arg(format!("refs/heads/{b}"))
        .probe()?;
    Ok(Some(git::parse::first_line(&up)).filter(|r| !r.is_empty() && remotes.contains(r)))
}

/// The trusted remote's default-branch tracking ref and its commit (SPEC
/// "durable"): `refs/remotes/<r>/HEAD`, else `main`, else `master`. Refs are
/// read in the common git dir: a per-worktree ref is never durable.
pub fn durable_ref(
    rg: &RepoGit,
    common: &Path,
    remote: Option<&str>,
) -> Result<Option<(String, String)>> {
    let Some(remote) = remote else {
        return Ok(None);
    };
    for name in ["HEAD", "main", "master"] {
        let r = format!("refs/remotes/{remote}/{name}");
        // A symbolic tracking ref counts only if it stays among the
        // remote's own tracking refs (not, say, `refs/worktree/wip`).
        let sym = rg.cmd(common).args(["symbolic-ref", "-q", &r]).output()?;
        if sym.ok
            && !git::parse::first_line(&sym.stdout).starts_with(&format!("refs/remotes/{remote}/"))
        {
            continue;
        }
        let out = rg
            .cmd(common)
            .args(["rev-parse", "--verify", "-q"])
            .arg(format!("{r}^{{commit}}"))
            .output()?;
        if out.ok {
            return Ok(Some((r, git::parse::first_line(&out.stdout))));
        }
    }
    Ok(None)
}
