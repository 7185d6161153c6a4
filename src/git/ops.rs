//! One typed function per git subcommand lease runs, built on the
//! sanitized builder of [`crate::git`] (ARCHITECTURE.md "git/ops.rs").
//! One file past 800 lines on purpose: it is the inventory of every git
//! command lease runs, each with its exact arguments, read as one list.
//!
//! First residents: `git worktree add --lock`, `lock` and `unlock`, for
//! git's own worktree lock that lease keeps on every worktree whose record
//! is not `removed` (SPEC "A lease every tool can see"; the reason it
//! writes: [`crate::git::admin::lock_reason`]).

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

use crate::error::Result;
use crate::git::admin::PRIVATE_REFS;
use crate::git::parse::{
    WorktreeEntry, first_line, parse_batch_commits, parse_filter_attrs, parse_heads,
    parse_ls_remote, parse_oids, parse_status, parse_worktrees,
};
use crate::git::{Git, Output, RepoGit};
use crate::model::evidence::StatusEntry;

/// How `git worktree add` sees repository config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddConfig {
    /// The user's own config, hooks and filters ([`Git::user`]): `lease
    /// exec` only, whose command runs arbitrary code in that tree anyway
    /// (SPEC "Sanitized git").
    User,
    /// The sanitized builder: every other command (restore) runs no
    /// repository-configured program.
    Sanitized,
}

/// What `git worktree add` checks out.
#[derive(Debug, Clone, Copy)]
pub enum Checkout<'a> {
    /// An existing branch (short name).
    Branch(&'a str),
    /// A new branch at `base`, made with `--no-track` so the shared config
    /// is not written (SPEC "Commands").
    NewBranch {
        /// The short branch name.
        branch: &'a str,
        /// The commit it starts at.
        base: &'a str,
    },
}

/// Runs `git worktree add -q --lock --reason REASON` of `checkout` into
/// `wt`, in `common`, with the git `config` names (the user's own, for
/// exec, or a sanitized one). `--reason` with `add` needs git 2.33. Returns the
/// output whatever the exit status: a non-zero exit may still have left a
/// registered (and locked) worktree, when a `post-checkout` hook failed
/// (git 2.47 runs the hook after the worktree is complete and keeps it).
pub fn worktree_add(
    rg: &RepoGit,
    config: AddConfig,
    common: &Path,
    wt: &Path,
    checkout: Checkout,
    reason: &str,
) -> Result<Output> {
    let mut c = match config {
        AddConfig::User => rg.git().user(common),
        AddConfig::Sanitized => rg.cmd(common),
    };
    c.args(["worktree", "add", "-q", "--lock", "--reason", reason]);
    match checkout {
        Checkout::Branch(b) => c.arg("--").arg(wt).arg(b),
        Checkout::NewBranch { branch, base } => {
            c.args(["--no-track", "-b", branch, "--"]).arg(wt).arg(base)
        }
    };
    c.output()
}

/// Runs `git worktree lock --reason REASON -- WT` in `common`. Fails if the
/// worktree is already locked (git keeps the first reason).
pub fn worktree_lock(rg: &RepoGit, common: &Path, wt: &Path, reason: &str) -> Result<()> {
    rg.cmd(common)
        .args(["worktree", "lock", "--reason", reason, "--"])
        .arg(wt)
        .run()
        .map(drop)
}

/// Runs `git worktree unlock -- WT` in `common`. Fails if it is not locked.
pub fn worktree_unlock(rg: &RepoGit, common: &Path, wt: &Path) -> Result<()> {
    rg.cmd(common)
        .args(["worktree", "unlock", "--"])
        .arg(wt)
        .run()
        .map(drop)
}

/// Returns the raw output of `git worktree list --porcelain -z` run in
/// `dir` (`-z` needs git 2.36, [`crate::git::MIN_GIT`]). A concurrent `git
/// worktree add` (ours are serialized, a user's may not be) can be caught
/// with its admin directory half written (`failed to read
/// worktrees/<id>/commondir`); the listing is then retried, at most twice,
/// a few milliseconds later.
pub fn worktree_list(rg: &RepoGit, dir: &Path) -> Result<Vec<u8>> {
    let mut last = None;
    for attempt in 0..3u64 {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(20 * attempt));
        }
        match rg
            .cmd(dir)
            .args(["worktree", "list", "--porcelain", "-z"])
            .probe()
        {
            Ok(out) => return Ok(out),
            Err(e) => last = Some(e),
        }
    }
    Err(last.expect("three attempts ran"))
}

/// The worktrees of the repository whose common git dir is `common`, as
/// [`parse_worktrees`] reads `git worktree list`: read in process by
/// [`crate::git::libgit2`] where libgit2 reads the repository as git does,
/// else by the CLI ([`worktree_list`]).
pub fn worktrees(rg: &RepoGit, common: &Path) -> Result<Vec<WorktreeEntry>> {
    if let Some(v) = crate::git::libgit2::Reader::open(common).and_then(|r| r.worktrees()) {
        return Ok(v);
    }
    Ok(parse_worktrees(&worktree_list(rg, common)?))
}

/// Like [`worktrees`] without a [`RepoGit`]: the filter config is read
/// (one more git) only if the CLI has to list.
pub fn worktrees_of(git: &Git, common: &Path) -> Result<Vec<WorktreeEntry>> {
    if let Some(v) = crate::git::libgit2::Reader::open(common).and_then(|r| r.worktrees()) {
        return Ok(v);
    }
    worktrees(&git.repo(common)?, common)
}

/// Runs `git worktree remove -- WT` in `dir`: never `--force` (SPEC gate
/// 8). Returns the output whatever the exit status; the caller reads back
/// what git left.
pub fn worktree_remove(rg: &RepoGit, dir: &Path, wt: &Path) -> Result<Output> {
    rg.cmd(dir)
        .args(["worktree", "remove", "--"])
        .arg(wt)
        .output()
}

/// Runs `git rev-parse --path-format=absolute --git-common-dir` in `dir`
/// with a sanitized git before the repository is known (`--path-format`
/// needs git 2.31). Returns the output whatever the exit status: a
/// failure means `dir` is in no repository, and its stderr says why.
pub fn common_dir(git: &Git, dir: &Path) -> Result<Output> {
    git.plain(dir)
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .output()
}

/// Runs `git symbolic-ref -q HEAD` in `common` (the common git dir, so
/// the HEAD read is the main worktree's, or a bare repository's): the full
/// ref name it points at, or `None` when HEAD is detached (git exits 1).
pub fn main_head_ref(rg: &RepoGit, common: &Path) -> Result<Option<String>> {
    let out = rg
        .cmd(common)
        .args(["symbolic-ref", "-q", "HEAD"])
        .output()?;
    let name = first_line(&out.stdout);
    Ok((out.ok && !name.is_empty()).then_some(name))
}

/// `git rev-parse --verify -q REV^{commit}` in `dir`: the commit `rev`
/// names, or `None` when it names none (git then prints nothing).
pub fn resolve_commit(rg: &RepoGit, dir: &Path, rev: &str) -> Result<Option<String>> {
    let out = rg
        .cmd(dir)
        .args(["rev-parse", "--verify", "-q"])
        .arg(format!("{rev}^{{commit}}"))
        .output()?;
    Ok(out.ok.then(|| first_line(&out.stdout)))
}

/// [`resolve_commit`] that must find one: a `rev` naming no commit is
/// [`crate::Error::Git`] (`git rev-parse --verify -q REV^{commit}`, exit 1).
pub fn require_commit(rg: &RepoGit, dir: &Path, rev: &str) -> Result<String> {
    let out = rg
        .cmd(dir)
        .args(["rev-parse", "--verify", "-q"])
        .arg(format!("{rev}^{{commit}}"))
        .run()?;
    Ok(first_line(&out))
}

/// `git rev-parse --verify -q NAME` in `dir`, unpeeled: the object `name`
/// names, or `None` when it names none.
pub fn resolve_ref(rg: &RepoGit, dir: &Path, name: &str) -> Result<Option<String>> {
    let out = rg
        .cmd(dir)
        .args(["rev-parse", "--verify", "-q", name])
        .output()?;
    Ok(out.ok.then(|| first_line(&out.stdout)))
}

/// The object format of the repository whose common git dir is `common`:
/// `sha1` or `sha256`. Read in process when libgit2 reads the repository
/// as git does ([`crate::git::libgit2::Reader::open`]), which it refuses
/// for any `extensions.objectformat` but `sha1`: then it is `sha1`. Else
/// `git rev-parse --show-object-format` in `common` answers.
pub fn object_format(rg: &RepoGit, common: &Path) -> Result<String> {
    if crate::git::libgit2::Reader::open(common).is_some() {
        return Ok("sha1".into());
    }
    let out = rg
        .cmd(common)
        .args(["rev-parse", "--show-object-format"])
        .run()?;
    Ok(first_line(&out))
}

/// `git check-ref-format --branch NAME` in `dir`: true if `name` is a
/// valid branch name.
pub fn is_branch_name(rg: &RepoGit, dir: &Path, name: &str) -> Result<bool> {
    Ok(rg
        .cmd(dir)
        .args(["check-ref-format", "--branch", name])
        .output()?
        .ok)
}

/// `git cat-file -e OID^{commit}` in `dir`: true if the repository has
/// commit `oid` (its objects, or an alternate's).
pub fn has_commit(rg: &RepoGit, dir: &Path, oid: &str) -> Result<bool> {
    Ok(rg
        .cmd(dir)
        .args(["cat-file", "-e"])
        .arg(format!("{oid}^{{commit}}"))
        .output()?
        .ok)
}

/// `git cat-file --batch-check='%(objectname) %(objecttype)'` in `dir`,
/// fed `oids` one a line: those of `oids` that are commits the repository
/// has, in their order.
pub fn commits_present(rg: &RepoGit, dir: &Path, oids: &[String]) -> Result<Vec<String>> {
    let mut input = Vec::new();
    for oid in oids {
        input.extend_from_slice(format!("{oid}\n").as_bytes());
    }
    let out = rg
        .cmd(dir)
        .args(["cat-file", "--batch-check=%(objectname) %(objecttype)"])
        .input(input)
        .run()?;
    Ok(parse_batch_commits(&out))
}

/// `git cat-file blob OID` in `dir`: the blob's bytes.
pub fn blob(rg: &RepoGit, dir: &Path, oid: &str) -> Result<Vec<u8>> {
    rg.cmd(dir).args(["cat-file", "blob", oid]).run()
}

/// `git hash-object --stdin --path=PATH` in worktree `wt`, fed `file`: the
/// blob id of its content cleaned as the attributes of `path` (relative to
/// the top) say, by the filter drivers this git runs.
pub fn hash_cleaned(rg: &RepoGit, wt: &Path, file: File, path: &[u8]) -> Result<String> {
    let mut arg = b"--path=".to_vec();
    arg.extend_from_slice(path);
    let out = rg
        .cmd(wt)
        .args(["hash-object", "--stdin"])
        .arg(OsString::from_vec(arg))
        .stdin(file)
        .run()?;
    Ok(first_line(&out))
}

/// `git hash-object --no-filters --stdin` in worktree `wt`, fed `file`:
/// the blob id of its bytes as they are.
pub fn hash_raw(rg: &RepoGit, wt: &Path, file: File) -> Result<String> {
    let out = rg
        .cmd(wt)
        .args(["hash-object", "--no-filters", "--stdin"])
        .stdin(file)
        .run()?;
    Ok(first_line(&out))
}

/// NUL-separated paths of `-z` output, empty ones dropped.
fn nul_paths(out: &[u8]) -> Vec<Vec<u8>> {
    out.split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// `git ls-files -z --others --ignored --exclude-standard` in worktree
/// `wt`: every file git ignores there (the repository's `.gitignore`
/// files, `info/exclude`, `core.excludesFile`), relative to the top.
pub fn ignored_files(rg: &RepoGit, wt: &Path) -> Result<Vec<Vec<u8>>> {
    let out = rg
        .cmd(wt)
        .args([
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
        ])
        .probe()?;
    Ok(nul_paths(&out))
}

/// `git ls-files -z --others --ignored [--exclude-from=FILE]
/// [--exclude=PATTERN ...]` in worktree `wt`: the untracked files that
/// match the given gitignore patterns (and only those: no standard
/// excludes), so git itself matches `.worktreeinclude`'s syntax.
pub fn untracked_matching(
    rg: &RepoGit,
    wt: &Path,
    from: Option<&Path>,
    patterns: &[String],
) -> Result<Vec<Vec<u8>>> {
    if from.is_none() && patterns.is_empty() {
        return Ok(Vec::new());
    }
    let mut c = rg.cmd(wt);
    c.args(["ls-files", "-z", "--others", "--ignored"]);
    if let Some(f) = from {
        let mut a = std::ffi::OsString::from("--exclude-from=");
        a.push(f);
        c.arg(a);
    }
    for p in patterns {
        c.arg(format!("--exclude={p}"));
    }
    Ok(nul_paths(&c.probe()?))
}

/// `git ls-files -z --cached --ignored --exclude=PATTERN` in worktree
/// `wt`: the tracked files a gitignore pattern matches.
pub fn tracked_matching(rg: &RepoGit, wt: &Path, pattern: &str) -> Result<Vec<Vec<u8>>> {
    let out = rg
        .cmd(wt)
        .args(["ls-files", "-z", "--cached", "--ignored"])
        .arg(format!("--exclude={pattern}"))
        .probe()?;
    Ok(nul_paths(&out))
}

/// `git ls-files -z --cached -- PATH` in worktree `wt`: the tracked
/// files at or below `path` (empty when none is).
pub fn tracked_under(rg: &RepoGit, wt: &Path, path: &str) -> Result<Vec<Vec<u8>>> {
    let out = rg
        .cmd(wt)
        .args(["ls-files", "-z", "--cached", "--"])
        .arg(path)
        .probe()?;
    Ok(nul_paths(&out))
}

/// `git ls-files -v -s -z` in worktree `wt`, the raw listing (a probe: any
/// warning fails it). Read with [`crate::git::parse::parse_hidden`] and
/// [`crate::git::parse::parse_gitlinks`].
pub fn index_listing(rg: &RepoGit, wt: &Path) -> Result<Vec<u8>> {
    rg.cmd(wt).args(["ls-files", "-v", "-s", "-z"]).probe()
}

/// `git status --porcelain=v1 -z --untracked-files=all --ignored=matching
/// --ignore-submodules=none` in worktree `wt` (a probe: any warning fails
/// it, as an unreadable directory makes git warn and exit 0).
pub fn status(rg: &RepoGit, wt: &Path) -> Result<Vec<StatusEntry>> {
    let out = rg
        .cmd(wt)
        .args([
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--ignored=matching",
            "--ignore-submodules=none",
        ])
        .probe()?;
    Ok(parse_status(&out))
}

/// `git check-attr -z --stdin filter` in worktree `wt`, fed `paths`
/// (relative to the top): the `filter` attribute of each that names a
/// driver, as `(path, driver)`. Reads `.gitattributes` files and
/// `info/attributes` and runs nothing.
pub fn filter_attrs(rg: &RepoGit, wt: &Path, paths: &[Vec<u8>]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut input = Vec::new();
    for p in paths {
        input.extend_from_slice(p);
        input.push(0);
    }
    let out = rg
        .cmd(wt)
        .args(["check-attr", "-z", "--stdin", "filter"])
        .input(input)
        .probe()?;
    Ok(parse_filter_attrs(&out))
}

/// `git config -z --name-only --get-regexp PATTERN` in `dir`: the names of
/// the keys that match, as the config `dir` sees (empty when none does,
/// git's exit 1).
pub fn config_names(rg: &RepoGit, dir: &Path, pattern: &str) -> Result<Vec<String>> {
    let out = rg
        .cmd(dir)
        .args(["config", "-z", "--name-only", "--get-regexp", pattern])
        .output()?;
    if !out.ok && out.code != Some(1) {
        return Err(out.error());
    }
    Ok(out
        .stdout
        .split(|&b| b == 0)
        .filter(|k| !k.is_empty())
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect())
}

/// `git config -z --get-regexp '^url\..*\.pushinsteadof$'` in `dir`: true
/// if the repository configures any `url.*.pushInsteadOf` (a push could
/// then reach another URL than a fetch or `ls-remote` of the same URL).
pub fn has_push_rewrites(rg: &RepoGit, dir: &Path) -> Result<bool> {
    let out = rg
        .cmd(dir)
        .args(["config", "-z", "--get-regexp", r"^url\..*\.pushinsteadof$"])
        .output()?;
    if out.ok {
        return Ok(true);
    }
    if out.code != Some(1) {
        return Err(out.error());
    }
    Ok(false)
}

/// `git remote` in `common`: the names of the configured remotes.
pub fn remotes(rg: &RepoGit, common: &Path) -> Result<Vec<String>> {
    let out = rg.cmd(common).arg("remote").probe()?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .map(str::to_string)
        .collect())
}

/// `git remote get-url -- NAME` in `common`: the fetch URL of remote `name`
/// as git resolves it (`url.*.insteadOf` applied); empty if it has none.
pub fn remote_get_url(rg: &RepoGit, common: &Path, name: &str) -> Result<String> {
    let out = rg
        .cmd(common)
        .args(["remote", "get-url", "--", name])
        .run()?;
    Ok(first_line(&out))
}

/// `git for-each-ref --format=%(upstream:remotename) refs/heads/BRANCH` in
/// `common`: the remote `branch` tracks, empty if none.
pub fn upstream_remote(rg: &RepoGit, common: &Path, branch: &str) -> Result<String> {
    let out = rg
        .cmd(common)
        .args(["for-each-ref", "--format=%(upstream:remotename)"])
        .arg(format!("refs/heads/{branch}"))
        .probe()?;
    Ok(first_line(&out))
}

/// `git for-each-ref --format='%(objectname) %(refname)'` of the
/// per-worktree namespaces ([`PRIVATE_REFS`]) in worktree `wt`: `(oid,
/// ref)` pairs of the refs that die with it.
pub fn private_refs(rg: &RepoGit, wt: &Path) -> Result<Vec<(String, String)>> {
    let out = rg
        .cmd(wt)
        .args(["for-each-ref", "--format=%(objectname) %(refname)"])
        .args(PRIVATE_REFS)
        .probe()?;
    Ok(parse_heads(&out))
}

/// `git --git-dir=ADMIN for-each-ref --format=%(objectname)` of the
/// per-worktree namespaces ([`PRIVATE_REFS`]), run in `common` for the
/// linked worktree whose admin directory is `admin` (its tree may be
/// gone): the commits they name.
pub fn private_tips_of_admin(rg: &RepoGit, common: &Path, admin: &Path) -> Result<Vec<String>> {
    let out = rg
        .cmd(common)
        .arg(format!("--git-dir={}", admin.display()))
        .args(["for-each-ref", "--format=%(objectname)"])
        .args(PRIVATE_REFS)
        .probe()?;
    Ok(parse_oids(&out))
}

/// `git symbolic-ref -q NAME` in `common`: the ref `name` points at, or
/// `None` when it is not a symbolic ref.
pub fn symbolic_ref(rg: &RepoGit, common: &Path, name: &str) -> Result<Option<String>> {
    let out = rg.cmd(common).args(["symbolic-ref", "-q", name]).output()?;
    Ok(out.ok.then(|| first_line(&out.stdout)))
}

/// `git reflog show --format=%H REF --` in `dir`: the commits of `refname`'s
/// reflog (new side), or `None` when git cannot show it (no reflog).
pub fn reflog(rg: &RepoGit, dir: &Path, refname: &str) -> Result<Option<Vec<String>>> {
    let out = rg
        .cmd(dir)
        .args(["reflog", "show", "--format=%H", refname, "--"])
        .output()?;
    Ok(out.ok.then(|| parse_oids(&out.stdout)))
}

/// `git rev-list --single-worktree --reflog --no-walk` in worktree `wt`:
/// every commit a reflog of this worktree mentions, old and new side, and
/// those of the shared branch reflogs; `None` when git fails.
pub fn reflog_commits(rg: &RepoGit, wt: &Path) -> Result<Option<Vec<String>>> {
    let out = rg
        .cmd(wt)
        .args(["rev-list", "--single-worktree", "--reflog", "--no-walk"])
        .output()?;
    Ok(out.ok.then(|| parse_oids(&out.stdout)))
}

/// The shared refs a [`unreached`] walk also stops at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shared {
    /// None: only the commits named.
    None,
    /// `--branches --tags --remotes`.
    Refs,
    /// `--branches --tags --remotes --glob=refs/stash`.
    RefsAndStash,
}

/// `git rev-list REVS --not HIDE [SHARED] --` in `dir` (a probe): the
/// commits reachable from `revs` and from none of `hide` (commits or
/// refs) and, as `shared` says, no branch, tag, remote-tracking ref or
/// stash.
pub fn unreached(
    rg: &RepoGit,
    dir: &Path,
    revs: &[String],
    hide: &[String],
    shared: Shared,
) -> Result<Vec<String>> {
    let mut c = rg.cmd(dir);
    c.arg("rev-list").args(revs).arg("--not").args(hide);
    match shared {
        Shared::None => {}
        Shared::Refs => {
            c.args(["--branches", "--tags", "--remotes"]);
        }
        Shared::RefsAndStash => {
            c.args(["--branches", "--tags", "--remotes", "--glob=refs/stash"]);
        }
    }
    c.arg("--");
    Ok(parse_oids(&c.probe()?))
}

/// `git rev-list OIDS --not --all --` in `dir`, whatever its exit: the
/// commits of `oids` and their history that no ref reaches (none printed
/// and exit 0: every one is reachable; a failure's stderr says which
/// object is missing).
pub fn unreached_by_any_ref(rg: &RepoGit, dir: &Path, oids: &[String]) -> Result<Output> {
    let mut c = rg.cmd(dir);
    c.arg("rev-list").args(oids).args(["--not", "--all", "--"]);
    c.output()
}

/// `git rev-list --objects --quiet TIPS [--not PREREQUISITES] --` in
/// `dir`: succeeds only if every object the tips reach, down to the
/// prerequisites, is present (connectivity, as `fetch` checks it).
pub fn check_connected(
    rg: &RepoGit,
    dir: &Path,
    tips: &[String],
    prerequisites: &[String],
) -> Result<()> {
    let mut c = rg.cmd(dir);
    c.args(["rev-list", "--objects", "--quiet"]).args(tips);
    if !prerequisites.is_empty() {
        c.arg("--not").args(prerequisites);
    }
    c.arg("--");
    c.run().map(drop)
}

/// `git update-ref --stdin` in `dir`, fed one `update NAME OID` line per
/// ref of `refs` (name, object id): every ref set in one git process and
/// one transaction (git-update-ref(1): all or none). Ref names cannot hold
/// a space or a newline (git-check-ref-format(1)).
pub fn update_refs(rg: &RepoGit, dir: &Path, refs: &[(String, String)]) -> Result<()> {
    let mut input = Vec::new();
    for (name, oid) in refs {
        input.extend_from_slice(format!("update {name} {oid}\n").as_bytes());
    }
    rg.cmd(dir)
        .args(["update-ref", "--stdin"])
        .input(input)
        .run()
        .map(drop)
}

/// `git update-ref -d NAME OLD` in `dir`: deletes ref `name` only if it
/// still points at `old`. Returns the output whatever the exit status.
pub fn delete_ref(rg: &RepoGit, dir: &Path, name: &str, old: &str) -> Result<Output> {
    rg.cmd(dir).args(["update-ref", "-d", name, old]).output()
}

/// `git init -q --bare --template= --object-format=FORMAT PATH`, run in
/// `dir`: an empty bare repository with no hooks or other template files
/// (`--object-format` needs git 2.29).
pub fn init_bare(rg: &RepoGit, dir: &Path, path: &Path, object_format: &str) -> Result<()> {
    rg.cmd(dir)
        .args(["init", "-q", "--bare", "--template="])
        .arg(format!("--object-format={object_format}"))
        .arg(path)
        .run()
        .map(drop)
}

/// `git bundle create -q PATH REFS... [--not NOT]` in `dir`: a bundle of
/// what `refs` (names, never raw ids: git refuses those) reach beyond
/// `not`.
pub fn bundle_create(
    rg: &RepoGit,
    dir: &Path,
    path: &Path,
    refs: &[&str],
    not: Option<&str>,
) -> Result<()> {
    let mut c = rg.cmd(dir);
    c.args(["bundle", "create", "-q"]).arg(path).args(refs);
    if let Some(d) = not {
        c.arg("--not").arg(d);
    }
    c.run().map(drop)
}

/// `git -c transfer.fsckObjects=true -c fetch.fsckObjects=true bundle
/// unbundle PATH` in `dir`: indexes the bundle's pack into the repository,
/// every object checked (`git bundle verify` checks only the header and
/// the prerequisites).
pub fn bundle_unbundle(rg: &RepoGit, dir: &Path, bundle: &Path) -> Result<()> {
    rg.cmd(dir)
        .args([
            "-c",
            "transfer.fsckObjects=true",
            "-c",
            "fetch.fsckObjects=true",
            "bundle",
            "unbundle",
        ])
        .arg(bundle)
        .run()
        .map(drop)
}

/// `git ls-remote --upload-pack=FAR -- URL PATTERNS...` in `dir` by URL,
/// with the far side named explicitly (SPEC "durable": a repository's
/// `uploadpack` cannot be overridden with `-c`; for a local remote, the
/// sanitized far side of [`Git::far_side`]): `(oid, ref)` pairs.
/// `patterns` are passed as they are (git matches them against the ends of
/// ref names).
pub fn ls_remote(
    rg: &RepoGit,
    dir: &Path,
    url: &str,
    patterns: &[&str],
) -> Result<Vec<(String, String)>> {
    let out = rg
        .cmd(dir)
        .arg("ls-remote")
        .arg(format!(
            "--upload-pack={}",
            rg.git().far_side(url, "upload-pack")
        ))
        .arg("--")
        .arg(url)
        .args(patterns)
        .run()?;
    Ok(parse_ls_remote(&out))
}

/// `git -c transfer.fsckObjects=true fetch --no-tags --no-prune
/// --no-write-fetch-head --no-recurse-submodules --upload-pack=FAR -- URL
/// +refs/heads/*:refs/remotes/REMOTE/*` in `common`: the branches of `url`
/// into `remote`'s tracking refs, objects checked, nothing pruned
/// (`--no-write-fetch-head` needs git 2.29).
pub fn fetch_branches(rg: &RepoGit, common: &Path, url: &str, remote: &str) -> Result<()> {
    rg.cmd(common)
        .args([
            "-c",
            "transfer.fsckObjects=true",
            "fetch",
            "--no-tags",
            "--no-prune",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
        ])
        .arg(format!(
            "--upload-pack={}",
            rg.git().far_side(url, "upload-pack")
        ))
        .arg("--")
        .arg(url)
        .arg(format!("+refs/heads/*:refs/remotes/{remote}/*"))
        .run()
        .map(drop)
}

/// `git -c transfer.fsckObjects=true -c fetch.fsckObjects=true fetch
/// --no-tags --no-write-fetch-head --no-recurse-submodules
/// --upload-pack=FAR -- SOURCE FROM:TO` in `dir`: one ref of `source` (a
/// bundle or a URL) into local ref `to`, objects checked.
pub fn fetch_ref(rg: &RepoGit, dir: &Path, source: &str, from: &str, to: &str) -> Result<()> {
    rg.cmd(dir)
        .args([
            "-c",
            "transfer.fsckObjects=true",
            "-c",
            "fetch.fsckObjects=true",
            "fetch",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
        ])
        .arg(format!(
            "--upload-pack={}",
            rg.git().far_side(source, "upload-pack")
        ))
        .arg("--")
        .arg(source)
        .arg(format!("{from}:{to}"))
        .run()
        .map(drop)
}

/// Runs the sanitized `git push` by URL with `refspecs`: `-c
/// push.gpgSign=false -c push.pushOption= -c push.negotiate=false push
/// --porcelain --atomic --no-verify --no-signed --no-follow-tags
/// --no-recurse-submodules --receive-pack=FAR OPTS -- URL REFSPECS` in
/// `common`; `opts` go before the URL (`--dry-run`,
/// `--force-with-lease=<ref>:<oid>`). Returns the output whatever the exit
/// status.
pub fn push(
    rg: &RepoGit,
    common: &Path,
    url: &str,
    opts: &[String],
    refspecs: impl IntoIterator<Item = String>,
) -> Result<Output> {
    let mut c = rg.cmd(common);
    c.args([
        "-c",
        "push.gpgSign=false",
        "-c",
        "push.pushOption=",
        "-c",
        "push.negotiate=false",
        "push",
        "--porcelain",
        "--atomic",
        "--no-verify",
        "--no-signed",
        "--no-follow-tags",
        "--no-recurse-submodules",
    ])
    .arg(format!(
        "--receive-pack={}",
        rg.git().far_side(url, "receive-pack")
    ))
    .args(opts)
    .arg("--")
    .arg(url)
    .args(refspecs);
    c.output()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::git::admin::lock_reason;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn lock_and_unlock_write_and_remove_git_s_locked_file() {
        let git = crate::git::Git::resolve(&crate::policy::defaults()).unwrap();
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("r");
        std::fs::create_dir(&repo).unwrap();
        git.plain(&repo).args(["init", "-q"]).run().unwrap();
        git.plain(&repo)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["commit", "-q", "--allow-empty", "-m", "i"])
            .run()
            .unwrap();
        let common = repo.join(".git");
        let rg = git.repo(&common).unwrap();
        let wt = t.path().join("w");
        let reason = lock_reason(ID, Path::new("/s/root"));
        let out = worktree_add(
            &rg,
            AddConfig::Sanitized,
            &common,
            &wt,
            Checkout::NewBranch {
                branch: "w",
                base: "HEAD",
            },
            &reason,
        )
        .unwrap();
        assert!(out.ok, "{out:?}");
        let locked = common.join("worktrees/w/locked");
        assert_eq!(
            std::fs::read_to_string(&locked).unwrap(),
            format!("{reason}\n")
        );
        worktree_unlock(&rg, &common, &wt).unwrap();
        assert!(!locked.exists());
        assert!(worktree_unlock(&rg, &common, &wt).is_err(), "not locked");
        worktree_lock(&rg, &common, &wt, &reason).unwrap();
        assert_eq!(
            std::fs::read_to_string(&locked).unwrap(),
            format!("{reason}\n")
        );
        assert!(
            worktree_lock(&rg, &common, &wt, "another").is_err(),
            "git keeps the first lock"
        );
    }
}
