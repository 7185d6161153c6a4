//! The only way lease reaches git: the sanitized command builder (SPEC
//! "Sanitized git"). Nothing outside `git/` builds a git command
//! (`scripts/forbid.sh`): [`ops`] has one typed function per git
//! subcommand lease runs, [`parse`] the pure parsers of their output,
//! [`refs`] the trusted remote and the durable ref, [`admin`] what lease
//! reads of a worktree's admin directory, and [`libgit2`] the in-process
//! reads that stand in for some of them. (Over 800 lines with its unit
//! tests, and one thing: the binary, the environment and overrides every
//! git gets, the filter drivers it neutralizes, and the command it yields.)
//!
//! Every probe runs the git binary resolved once, with an empty environment
//! plus an allowlist, no system or global config, every program-running
//! setting neutralized with `-c` (or, for filter drivers whose names may hold
//! `=`, through `GIT_CONFIG_COUNT`), `--no-optional-locks` so probes never
//! rewrite the index, `LC_ALL=C`, null stdin, and machine formats only.
//! The one exception is [`Git::user`], for `git worktree add` in exec, which
//! keeps the user's own config (their hooks and LFS filters are theirs).
//!
//! One file past 800 lines on purpose: the builder, its fixed `-c`
//! overrides and the environment it clears are one security boundary,
//! reviewed together.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{Error, Result};
use crate::model::evidence::TrustedFilter;

pub mod admin;
pub mod libgit2;
pub mod ops;
pub mod parse;
pub mod refs;

use parse::{parse_filter_drivers, parse_process_drivers, parse_user_filter, parse_version};

/// The oldest git lease accepts: `git worktree list -z` arrived in 2.36.
pub const MIN_GIT: (u32, u32) = (2, 36);

/// Settings that would let repository config run a program during lease's
/// own git calls (git-config(1): a repository's `core.fsmonitor` runs during
/// `git worktree remove`, and its `filter.<driver>.clean` even under
/// `--no-optional-locks`; every program-valued key of git 2.47 and why it
/// is or is not reachable: docs/sanitized-git.md).
const OVERRIDES: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "diff.external=",
    "credential.helper=",
    "credential.interactive=false",
    "core.askPass=",
    "core.editor=false",
    "sequence.editor=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "status.showUntrackedFiles=all",
    // Stat shortcuts a hostile config can use to hide a same-size edit with
    // a restored mtime (core.trustctime=false, core.checkStat=minimal), or
    // a `.GIT` entry (core.ignoreCase), from status; a stale untracked cache
    // must not hide untracked files either.
    "core.trustctime=true",
    "core.checkStat=default",
    "core.ignoreStat=false",
    "core.ignoreCase=false",
    "core.untrackedCache=false",
    // log.showSignature makes `reflog show` run gpg.program.
    "log.showSignature=false",
    // A fetch first downloads bundles from this URI (or from ones the
    // server advertises): no repository-chosen download.
    "fetch.bundleURI=",
    "transfer.bundleURI=false",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "push.recurseSubmodules=no",
    // OpenSSH option syntax for the ssh lease passes (`Git::ssh_command`).
    "ssh.variant=ssh",
    "protocol.allow=never",
];

/// The transports a sanitized git may use, as `GIT_ALLOW_PROTOCOL`, which
/// overrides every `protocol.*.allow` key of any config (git(1)): a
/// repository's `protocol.ext.allow=always` beats a `-c protocol.allow=never`
/// (measured), and an `ext::` or `<helper>::` URL would run a program.
/// `git://` is left out: `core.gitProxy` would choose its program.
pub const ALLOWED_PROTOCOLS: &str = "file:https:http:ssh";

/// The far side of a push or fetch to a local-path or `file://` remote is a
/// `receive-pack` or `upload-pack` that git starts on this machine and
/// that reads *that* repository's config: its hooks, its
/// `core.alternateRefsCommand`, its auto gc. lease names this sanitized
/// git as the far side instead (`--receive-pack`/`--upload-pack`), with
/// these settings and [`Git::alternate_refs_command`].
const FAR_SIDE: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "receive.autogc=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "receive.denyCurrentBranch=refuse",
    "transfer.bundleURI=false",
    "uploadpack.advertiseBundleURIs=false",
];

/// Environment variables a sanitized git keeps from lease's own
/// environment: the search path, home and temp dir, and what the user's
/// ssh and https need to reach a remote (the ssh agent, proxies).
const KEEP_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "SSH_AUTH_SOCK",
    "http_proxy",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
];

/// How git reaches a remote URL, by git's own rules (transport.c
/// `transport_get`, connect.c `url_is_local_not_ssh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A path or `file://`: the far side runs here, as this user.
    Local,
    /// `ssh://`, `git+ssh://`, `ssh+git://` or scp-like `[user@]host:path`.
    Ssh,
    /// `http://` or `https://` (git's curl helper).
    Http,
    /// Anything else (`git://`, `<helper>::`, `ftp://`): refused by
    /// [`ALLOWED_PROTOCOLS`].
    Other,
}

/// Classifies `url` as git would.
pub fn transport_of(url: &str) -> Transport {
    let scheme_end = url
        .char_indices()
        .take_while(|(i, c)| {
            c.is_ascii_alphabetic() || (*i > 0 && matches!(c, '0'..='9' | '+' | '-' | '.'))
        })
        .last()
        .map(|(i, c)| i + c.len_utf8());
    if let Some(end) = scheme_end {
        let (scheme, rest) = url.split_at(end);
        if rest.starts_with("::") {
            return Transport::Other;
        }
        if rest.starts_with("://") {
            return match scheme.to_ascii_lowercase().as_str() {
                "file" => Transport::Local,
                "ssh" | "git+ssh" | "ssh+git" => Transport::Ssh,
                "http" | "https" => Transport::Http,
                _ => Transport::Other,
            };
        }
    }
    let colon = url.find(':');
    let slash = url.find('/');
    match (colon, slash) {
        (None, _) => Transport::Local,
        (Some(c), Some(s)) if s < c => Transport::Local,
        _ => Transport::Ssh,
    }
}

/// Quotes `s` for a POSIX shell: single quotes, each `'` as `'\''`.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A resolved git binary.
#[derive(Debug, Clone)]
pub struct Git {
    bin: PathBuf,
    /// `git --version`, run once on first need: a `lease exec --adopt`
    /// whose reads all succeed in process never spawns git at all. `Err`
    /// holds the refusal text.
    version: Arc<OnceLock<std::result::Result<String, String>>>,
}

/// Filter-driver names per directory, read once per process: every
/// sanitized git of one run neutralizes the drivers the first read found
/// (the config is repository-owned; a process that rewrites it while lease
/// runs can already run code itself).
/// Each entry is the raw `git config -z --get-regexp '^filter\.'` output.
static FILTERS: Mutex<Vec<(PathBuf, Vec<u8>)>> = Mutex::new(Vec::new());

impl Git {
    /// Resolves git once: the policy's `git` (config or `$LEASE_GIT`,
    /// absolute), else the first `git` on `PATH` that is not lease's own
    /// shim. Checks the version is at least [`MIN_GIT`].
    pub fn resolve(policy: &crate::policy::Policy) -> Result<Git> {
        let git = Git {
            bin: Git::resolve_bin(policy)?,
            version: Arc::new(OnceLock::new()),
        };
        git.check_version()?;
        Ok(git)
    }

    fn resolve_bin(policy: &crate::policy::Policy) -> Result<PathBuf> {
        let bin = match &policy.git {
            Some(p) => p.value.clone(),
            None => find_on_path().ok_or_else(|| {
                Error::refused(
                    crate::model::reason::HoldReason::GitFailed,
                    "no git found on PATH; install git or set `git` in the config (or LEASE_GIT)",
                )
            })?,
        };
        Ok(bin)
    }

    /// Like [`Git::resolve`], but checks the version only when a git is
    /// first run (or [`Git::version`] is asked), so a command that reads
    /// everything in process spawns nothing.
    pub fn resolve_lazy(policy: &crate::policy::Policy) -> Result<Git> {
        let git = Git::resolve_bin(policy)?;
        Ok(Git {
            bin: git,
            version: Arc::new(OnceLock::new()),
        })
    }

    /// Runs `git --version` once and refuses a git older than [`MIN_GIT`].
    pub fn check_version(&self) -> Result<&str> {
        let v = self.version.get_or_init(|| {
            let out = self
                .raw(None)
                .arg("--version")
                .run()
                .map_err(|e| e.to_string())?;
            let text = String::from_utf8_lossy(&out).trim().to_string();
            match parse_version(&text) {
                Some(v) if v >= MIN_GIT => Ok(text),
                _ => Err(format!(
                    "`{}` reports `{text}`; lease needs git {}.{} or newer",
                    self.bin.display(),
                    MIN_GIT.0,
                    MIN_GIT.1
                )),
            }
        });
        v.as_deref()
            .map_err(|m| Error::refused(crate::model::reason::HoldReason::GitFailed, m.clone()))
    }

    /// The binary's path.
    pub fn path(&self) -> &Path {
        &self.bin
    }

    /// The ssh every sanitized git uses, whatever `core.sshCommand` the
    /// repository sets: the user's own `ssh` (the first on `PATH`,
    /// reading their `~/.ssh/config` and agent), with `BatchMode=yes` so it
    /// never prompts; `false` when there is no ssh.
    pub fn ssh_command(&self) -> String {
        match find_program(&std::env::var_os("PATH").unwrap_or_default(), "ssh") {
            Some(p) => format!("{} -o BatchMode=yes", shell_quote(&p.to_string_lossy())),
            None => "false".to_string(),
        }
    }

    /// `core.alternateRefsCommand=...` as git's own default, run by this
    /// git: a fetch (and the far side of a push) lists an alternate's refs
    /// with that command when the repository has `objects/info/alternates`,
    /// and a repository's config could name any program there. Git runs
    /// the value with the shell and the alternate's path appended
    /// (git-config(1)); the default it replaces is `git --git-dir=<path>
    /// for-each-ref --format=%(objectname)`. (An empty value lists nothing,
    /// and then a bundle whose prerequisites only an alternate's refs
    /// connect fails to unbundle: measured with a shallow clone.)
    pub fn alternate_refs_command(&self) -> String {
        format!(
            "core.alternateRefsCommand=f() {{ exec {} -c core.hooksPath=/dev/null -c core.fsmonitor=false --git-dir=\"$1\" for-each-ref '--format=%(objectname)'; }}; f",
            shell_quote(&self.bin.to_string_lossy())
        )
    }

    /// The `--receive-pack` or `--upload-pack` value (`service` is
    /// `receive-pack` or `upload-pack`) for a transport to `url`: for a
    /// local remote, this git with hooks, `core.alternateRefsCommand`
    /// and auto gc off (`FAR_SIDE`); for ssh, the server's own
    /// `git-<service>` (a server's hooks are its policy, and hosts accept
    /// no other command); over http the option is not used.
    ///
    /// The far side of a local transport inherits the sanitized
    /// environment of the near side minus git's `local_repo_env`
    /// (environment.c: `GIT_DIR`, `GIT_CONFIG_PARAMETERS`,
    /// `GIT_CONFIG_COUNT`, ... are cleared): `PATH`, `HOME`, `TMPDIR`,
    /// `LC_ALL=C`, `GIT_CONFIG_NOSYSTEM=1`, `GIT_CONFIG_GLOBAL=/dev/null`,
    /// `GIT_ALLOW_PROTOCOL`, `GIT_NO_REPLACE_OBJECTS=1`,
    /// `GIT_TERMINAL_PROMPT=0`, and git's `GIT_PROTOCOL`. So it reads that
    /// repository's own config only, with `FAR_SIDE` on top.
    pub fn far_side(&self, url: &str, service: &str) -> String {
        if transport_of(url) != Transport::Local {
            return format!("git-{service}");
        }
        let mut cmd = shell_quote(&self.bin.to_string_lossy());
        for o in FAR_SIDE {
            cmd.push_str(" -c ");
            cmd.push_str(&shell_quote(o));
        }
        cmd.push_str(" -c ");
        cmd.push_str(&shell_quote(&self.alternate_refs_command()));
        cmd.push(' ');
        cmd.push_str(service);
        cmd
    }

    /// What `git --version` printed (runs it if nothing has yet; empty if
    /// it failed).
    pub fn version(&self) -> &str {
        self.check_version().unwrap_or("")
    }

    fn raw(&self, dir: Option<&Path>) -> Cmd {
        let mut c = Command::new(&self.bin);
        c.env_clear();
        for k in KEEP_ENV {
            if let Some(v) = std::env::var_os(k) {
                c.env(k, v);
            }
        }
        c.env("LC_ALL", "C")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ALLOW_PROTOCOL", ALLOWED_PROTOCOLS)
            .stdin(Stdio::null());
        if let Some(d) = dir {
            c.current_dir(d);
        }
        Cmd {
            inner: c,
            shown: Vec::new(),
            gate: None,
            input: None,
        }
    }

    /// Reads the filter-driver config `git config` sees in `dir` (raw
    /// `-z --get-regexp` output), once per process and directory.
    fn filters_in(&self, dir: &Path) -> Result<Vec<u8>> {
        let cache =
            |f: &Vec<(PathBuf, Vec<u8>)>| f.iter().find(|(d, _)| d == dir).map(|(_, v)| v.clone());
        if let Some(v) = cache(&FILTERS.lock().unwrap_or_else(|p| p.into_inner())) {
            return Ok(v);
        }
        let out = self
            .sanitized(Some(dir), &[], &[])
            .args(["config", "-z", "--get-regexp", r"^filter\."])
            .output()?;
        // Exit 1 means no filter driver is configured.
        if !out.ok && out.code != Some(1) {
            return Err(out.error());
        }
        let v = out.stdout;
        let mut f = FILTERS.lock().unwrap_or_else(|p| p.into_inner());
        if cache(&f).is_none() {
            f.push((dir.to_path_buf(), v.clone()));
        }
        Ok(v)
    }

    /// Forgets every filter-driver read: `lease exec` calls it once its
    /// command has ended, so the retire that follows a long session reads
    /// the config as it is then.
    pub fn forget_filters() {
        FILTERS.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// A sanitized git for the repository whose common git dir is `common`.
    /// Reads the names of its filter drivers once, to neutralize them.
    pub fn repo(&self, common: &Path) -> Result<RepoGit> {
        let config = self.filters_in(common)?;
        Ok(RepoGit {
            git: self.clone(),
            filters: parse_filter_drivers(&config),
            with_process: parse_process_drivers(&config),
            trusted: Vec::new(),
            pin: None,
        })
    }

    fn sanitized(&self, dir: Option<&Path>, filters: &[Vec<u8>], trusted: &[TrustedFilter]) -> Cmd {
        let mut c = self.raw(dir);
        // Replace refs can fake "already pushed": a `git replace --graft`
        // makes an unpushed commit look reachable (git-replace(1)).
        c.args(["--no-pager", "--no-optional-locks", "--no-replace-objects"]);
        for o in OVERRIDES {
            c.arg("-c").arg(o);
        }
        // Not shown in error messages: lease's own settings, not the command.
        c.inner
            .arg("-c")
            .arg(format!("core.sshCommand={}", self.ssh_command()))
            .arg("-c")
            .arg(self.alternate_refs_command());
        let mut n = 0;
        let mut set = |d: &[u8], key: &str, value: &[u8]| {
            let mut k = b"filter.".to_vec();
            k.extend_from_slice(d);
            k.push(b'.');
            k.extend_from_slice(key.as_bytes());
            c.inner
                .env(format!("GIT_CONFIG_KEY_{n}"), OsString::from_vec(k));
            c.inner.env(
                format!("GIT_CONFIG_VALUE_{n}"),
                OsString::from_vec(value.to_vec()),
            );
            n += 1;
        };
        for d in filters {
            if trusted.iter().any(|t| t.driver.as_bytes() == d.as_slice()) {
                continue;
            }
            for (key, value) in [
                ("clean", ""),
                ("smudge", ""),
                ("process", ""),
                ("required", "false"),
            ] {
                set(d, key, value.as_bytes());
            }
        }
        // A trusted driver runs as the user's own config defines it, whatever
        // the repository's config says; it never smudges (no lease git
        // checks anything out, and a repository-defined smudge is not the
        // user's).
        for t in trusted {
            let d = t.driver.as_bytes();
            set(d, "clean", t.clean.as_deref().unwrap_or("").as_bytes());
            // An empty `process` would disable `clean` as well: set it only
            // when the user's config does (`with_trusted` refuses a driver
            // whose `process` only the repository sets).
            if let Some(p) = &t.process {
                set(d, "process", p.as_bytes());
            }
            set(d, "smudge", b"");
            set(
                d,
                "required",
                t.required.as_deref().unwrap_or("false").as_bytes(),
            );
        }
        if n > 0 {
            c.inner.env("GIT_CONFIG_COUNT", n.to_string());
        }
        c.gate = Some(self.clone());
        c
    }

    /// Reads how the user's own git config (system and global scope only,
    /// includes followed; never the repository's or a worktree's) defines
    /// filter driver `driver` for the repository at `dir`: its `clean`,
    /// `process` and `required` keys, the last definition winning as in
    /// git. `Ok(None)` if it defines neither `clean` nor `process`. The
    /// user's config is found as their git finds it: `HOME`,
    /// `XDG_CONFIG_HOME`, `GIT_CONFIG_GLOBAL`, `GIT_CONFIG_SYSTEM` and
    /// `GIT_CONFIG_NOSYSTEM` from lease's environment. `git config` runs
    /// in `dir`, so the user's `includeIf "gitdir:..."` sections apply as
    /// for their own git; `--show-scope` (git 2.26) is what keeps the
    /// repository's `local` and `worktree` scopes (and their includes) out.
    pub fn user_filter(&self, driver: &str, dir: &Path) -> Result<Option<TrustedFilter>> {
        let mut c = Command::new(&self.bin);
        c.env_clear();
        for k in [
            "PATH",
            "HOME",
            "XDG_CONFIG_HOME",
            "GIT_CONFIG_GLOBAL",
            "GIT_CONFIG_SYSTEM",
            "GIT_CONFIG_NOSYSTEM",
        ] {
            if let Some(v) = std::env::var_os(k) {
                c.env(k, v);
            }
        }
        c.env("LC_ALL", "C").current_dir(dir).stdin(Stdio::null());
        let mut cmd = Cmd {
            inner: c,
            shown: Vec::new(),
            gate: Some(self.clone()),
            input: None,
        };
        cmd.args([
            "config",
            "-z",
            "--includes",
            "--show-scope",
            "--show-origin",
            "--get-regexp",
            r"^filter\.",
        ]);
        let out = cmd.output()?;
        if !out.ok && out.code != Some(1) {
            return Err(out.error());
        }
        Ok(parse_user_filter(&out.stdout, driver))
    }

    /// Like [`Git::repo`], and also neutralizes filter drivers that only
    /// `dir` sees (a worktree's `config.worktree` under
    /// `extensions.worktreeConfig`).
    pub fn repo_at(&self, common: &Path, dir: &Path) -> Result<RepoGit> {
        let mut rg = self.repo(common)?;
        let config = self.filters_in(dir)?;
        for d in parse_filter_drivers(&config) {
            if !rg.filters.contains(&d) {
                rg.filters.push(d);
            }
        }
        for d in parse_process_drivers(&config) {
            if !rg.with_process.contains(&d) {
                rg.with_process.push(d);
            }
        }
        Ok(rg)
    }

    /// A sanitized git run in `dir`, before the repository is known (no
    /// filter-driver overrides; use it only for commands that run no filter,
    /// such as `rev-parse`).
    pub fn plain(&self, dir: &Path) -> Cmd {
        self.sanitized(Some(dir), &[], &[])
    }

    /// A git with the user's own config (but no `GIT_*` or `LEASE_*` from the
    /// environment, so git never sees the lease), for `git worktree add`.
    pub fn user(&self, dir: &Path) -> Cmd {
        let mut c = Command::new(&self.bin);
        for (k, _) in std::env::vars_os() {
            let k = k.as_bytes();
            if k.starts_with(b"GIT_") || k.starts_with(b"LEASE_") {
                c.env_remove(OsStr::from_bytes(k));
            }
        }
        c.current_dir(dir).stdin(Stdio::null());
        Cmd {
            inner: c,
            shown: Vec::new(),
            gate: Some(self.clone()),
            input: None,
        }
    }
}

/// A sanitized git bound to one repository's filter-driver overrides, and
/// optionally pinned to one worktree.
#[derive(Debug, Clone)]
pub struct RepoGit {
    git: Git,
    filters: Vec<Vec<u8>>,
    /// Drivers whose repository config sets `process`.
    with_process: Vec<Vec<u8>>,
    /// Drivers the operator trusts (`trusted_filters`), as the user's own
    /// config defines them: these run; every other driver is neutralized.
    trusted: Vec<TrustedFilter>,
    /// `(admin dir, worktree)`: commands run in the worktree get
    /// `GIT_DIR`/`GIT_WORK_TREE` set explicitly, as git's own
    /// `check_clean_worktree` does, so a `core.worktree` in the worktree's
    /// config cannot point lease's probes at a decoy tree.
    pin: Option<(PathBuf, PathBuf)>,
}

impl RepoGit {
    /// A sanitized command run in `dir` (a worktree, or the common git dir).
    pub fn cmd(&self, dir: &Path) -> Cmd {
        let mut c = self.git.sanitized(Some(dir), &self.filters, &self.trusted);
        if let Some((admin, wt)) = &self.pin
            && wt == dir
        {
            c.inner.env("GIT_DIR", admin).env("GIT_WORK_TREE", wt);
        }
        c
    }

    /// Lets the drivers of `trusted` run as the user's config defines them
    /// (SPEC "Truthful content probes"); the rest stay neutralized. A
    /// driver the user defines with `clean` only, while the repository's
    /// config sets its `process`, is left neutralized and returned: git
    /// runs a defined `process` instead of `clean`, and a `process` reset
    /// to empty disables `clean` too (convert.c `apply_filter`, git 2.47),
    /// so the user's definition cannot run without the repository's.
    pub fn with_trusted(mut self, trusted: Vec<TrustedFilter>) -> (RepoGit, Vec<TrustedFilter>) {
        let (usable, shadowed): (Vec<_>, Vec<_>) = trusted.into_iter().partition(|t| {
            t.process.is_some() || !self.with_process.iter().any(|d| d == t.driver.as_bytes())
        });
        self.trusted = usable;
        (self, shadowed)
    }

    /// The trusted drivers this git runs.
    pub fn trusted(&self) -> &[TrustedFilter] {
        &self.trusted
    }

    /// Pins commands run in `wt` to its admin directory `admin`.
    pub fn pinned(mut self, admin: &Path, wt: &Path) -> RepoGit {
        self.pin = Some((admin.to_path_buf(), wt.to_path_buf()));
        self
    }

    /// The underlying git.
    pub fn git(&self) -> &Git {
        &self.git
    }
}

/// One git invocation being built.
#[derive(Debug)]
pub struct Cmd {
    inner: Command,
    shown: Vec<String>,
    /// The git whose version must pass [`Git::check_version`] before this
    /// command runs (`None` for `git --version` itself).
    gate: Option<Git>,
    /// Bytes fed to stdin through a pipe (see [`Cmd::input`]).
    input: Option<Vec<u8>>,
}

/// What a git invocation produced.
#[derive(Debug)]
pub struct Output {
    /// True if it exited 0 and printed no warning lease must heed.
    pub ok: bool,
    /// The exit code, if it exited.
    pub code: Option<i32>,
    /// stdout bytes.
    pub stdout: Vec<u8>,
    /// stderr bytes.
    pub stderr: Vec<u8>,
    args: String,
}

impl Output {
    /// Turns a failed run into [`Error::Git`].
    pub fn error(&self) -> Error {
        Error::Git {
            args: self.args.clone(),
            status: self
                .code
                .map_or_else(|| "killed".to_string(), |c| format!("exit {c}")),
            stderr: String::from_utf8_lossy(&self.stderr)
                .lines()
                .take(4)
                .collect::<Vec<_>>()
                .join(" / ")
                .trim()
                .to_string(),
        }
    }
}

impl Cmd {
    /// Adds one argument.
    pub fn arg(&mut self, a: impl AsRef<OsStr>) -> &mut Self {
        self.shown.push(a.as_ref().to_string_lossy().into_owned());
        self.inner.arg(a);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for a in args {
            self.arg(a);
        }
        self
    }

    /// Feeds `file` as stdin.
    pub fn stdin(&mut self, file: File) -> &mut Self {
        self.inner.stdin(file);
        self
    }

    /// Feeds `bytes` as stdin, written from a thread so a large input
    /// cannot deadlock against git's output.
    pub fn input(&mut self, bytes: Vec<u8>) -> &mut Self {
        self.inner.stdin(Stdio::piped());
        self.input = Some(bytes);
        self
    }

    /// A git that cannot even start is a failed probe, which holds
    /// (`git-failed`): most often its working directory is gone, because a
    /// concurrent retire removed the worktree after an earlier gate saw it.
    fn spawn_failed(&self, e: &std::io::Error) -> Error {
        let program = Path::new(self.inner.get_program()).display();
        let detail = match self.inner.get_current_dir() {
            Some(dir) => format!("cannot run git `{program}` in `{}`: {e}", dir.display()),
            None => format!("cannot run git `{program}`: {e}"),
        };
        Error::refused(crate::model::reason::HoldReason::GitFailed, detail)
    }

    /// Runs it and returns what it produced, whatever the exit status.
    pub fn output(&mut self) -> Result<Output> {
        if let Some(g) = &self.gate {
            g.check_version()?;
        }
        let args = self
            .shown
            .iter()
            .filter(|a| !OVERRIDES.contains(&a.as_str()) && !a.starts_with("--no-") && *a != "-c")
            .cloned()
            .collect::<Vec<_>>()
            .join(" ");
        tracing::debug!(git = %self.inner.get_program().to_string_lossy(), argv = ?self.shown, "running git");
        let started = std::time::Instant::now();
        let mut child = self
            .inner
            .stderr(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| self.spawn_failed(&e))?;
        let feeder = match (self.input.take(), child.stdin.take()) {
            (Some(bytes), Some(mut pipe)) => Some(std::thread::spawn(move || {
                // git may exit before reading everything: its status says why.
                let _ = std::io::Write::write_all(&mut pipe, &bytes);
            })),
            _ => None,
        };
        let out = child
            .wait_with_output()
            .map_err(|e| self.spawn_failed(&e))?;
        if let Some(f) = feeder {
            let _ = f.join();
        }
        tracing::debug!(
            args = %args,
            code = ?out.status.code(),
            ms = started.elapsed().as_millis(),
            "git exited"
        );
        Ok(Output {
            ok: out.status.success(),
            code: out.status.code(),
            stdout: out.stdout,
            stderr: out.stderr,
            args,
        })
    }

    /// Runs it and returns stdout; a non-zero exit is [`Error::Git`].
    pub fn run(&mut self) -> Result<Vec<u8>> {
        let out = self.output()?;
        if !out.ok {
            return Err(out.error());
        }
        Ok(out.stdout)
    }

    /// Runs it and returns stdout; a non-zero exit *or any stderr output* is
    /// [`Error::Git`]. For probes: git warns on stderr and exits 0 when it
    /// cannot read a directory (git 2.47; seen in
    /// `probe_fails_on_a_warning_even_when_git_exits_zero` below).
    pub fn probe(&mut self) -> Result<Vec<u8>> {
        let out = self.output()?;
        if !out.ok || !out.stderr.is_empty() {
            return Err(out.error());
        }
        Ok(out.stdout)
    }
}

fn find_on_path() -> Option<PathBuf> {
    let own_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf));
    find_git_in(&std::env::var_os("PATH")?, own_dir.as_deref())
}

/// The first executable `git` in the directories of `path` (a `$PATH`
/// value) that is absolute, is not `own_dir` (lease's own directory, where
/// its shim may live) and is not lease's shim.
fn find_git_in(path: &OsStr, own_dir: Option<&Path>) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|d| d.is_absolute() && Some(d.as_path()) != own_dir)
        .map(|d| d.join("git"))
        .find(|p| is_executable(p) && !is_lease_shim(p))
}

/// The first executable `name` in the absolute directories of `path`.
fn find_program(path: &OsStr, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// True if the first 4 KiB of `p` carry [`SHIM_MARKER`]: lease's own git
/// shim (shim/git, and the compiled `lease-git-shim` in an ELF note);
/// git must never be the shim. A file that cannot be read is not one (as
/// shim/git's `dd | grep` sees it).
pub fn is_lease_shim(p: &Path) -> bool {
    let mut buf = [0u8; 4096];
    let n = File::open(p)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut buf))
        .unwrap_or(0);
    // memchr's substring search: a byte-by-byte window compare cost about
    // 45,000 instructions per candidate on every launch (callgrind).
    memchr::memmem::find(&buf[..n], SHIM_MARKER).is_some()
}

/// The marker of lease's git shims (shim/README.md): in the first 4 KiB of
/// the file.
pub const SHIM_MARKER: &[u8] = b"lease-shim";

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
