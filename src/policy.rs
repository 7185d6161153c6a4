//! Layered policy: config files, the documented `LEASE_*` variables and
//! flags, joined into one [`Policy`] resolved once by the CLI.
//!
//! # Theory of operation
//! Layers, in order (SPEC "Commands"): `/etc/lease/config.toml`, then
//! `$XDG_CONFIG_HOME/lease/config.toml` (else `~/.config/lease/config.toml`),
//! then `--config FILE` (else `$LEASE_CONFIG`), then the variables of
//! [`ENV_KEYS`], then flags. Loading the files and the environment is the
//! CLI's (`cli/config.rs`: `load_layers`); parsing them ([`parse_file`],
//! [`env_layer`]) and joining them ([`resolve`]) are pure functions here.
//!
//! - Plain settings (`worktree_root`, `trusted_remote`, `git`, `owner`): the
//!   last layer that sets one wins.
//! - Safety settings join to the stricter value whatever the order:
//!   `min_free` keeps the largest byte value and the largest percentage of
//!   every layer and requires both; `orphan_grace` the longest;
//!   `process_audit` is `strict` if any layer says so; `rebuildable` is the
//!   intersection of the layers that set it (fewer deletable paths protect
//!   more); `allow_temp_worktree_root` is true only if some layer says true
//!   and none says false; `archive` is the union of the destinations the
//!   layers ask for (`bundle` and `remote` join to `both`);
//!   `trusted_filters` is the intersection of the layers that set it
//!   (fewer trusted programs protect more); `teardown` runs every command
//!   some file layer names, in layer order (none is skipped);
//!   `teardown_timeout` is the shortest of the layers that set it.
//!
//! Unknown keys in a file are errors naming the file and the key. Only the
//! variables of [`ENV_KEYS`] (plus `LEASE_HOME` and `LEASE_CONFIG`) are read:
//! `LEASE_ID`, `LEASE_FD` and the rest that exec sets for its command are
//! never config, so lease behaves the same inside a leased command.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::record::Owner;

/// Admission's default watermark: 1 GiB free (SPEC/Commands).
pub const DEFAULT_MIN_FREE: MinFree = MinFree::Bytes(1 << 30);

/// A free-space watermark: bytes, or a percentage of the filesystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinFree {
    /// At least this many bytes free.
    Bytes(u64),
    /// At least this percentage (0 to 100) of the filesystem free.
    Percent(u8),
}

impl MinFree {
    /// Parses SIZE: bytes with an optional binary unit (`500M`, `10G`, `1T`,
    /// `4096`, `64K`) or a percentage (`5%`).
    pub fn parse(s: &str) -> Result<MinFree> {
        let bad = || {
            Error::Usage(format!(
                "size `{s}` is not bytes with an optional unit (500M, 10G) or a percentage (5%)"
            ))
        };
        let s = s.trim();
        if let Some(p) = s.strip_suffix('%') {
            let p: u8 = p.parse().map_err(|_| bad())?;
            return if p <= 100 {
                Ok(MinFree::Percent(p))
            } else {
                Err(bad())
            };
        }
        parse_size(s).map(MinFree::Bytes).ok_or_else(bad)
    }

    /// Returns the free bytes this bound requires on a filesystem of
    /// `total` bytes (statvfs `f_blocks * f_frsize`, read by
    /// `os::atomic::total_bytes`); a percentage of an unknown size (`None`)
    /// requires `u64::MAX`, which is never free.
    pub fn required(self, total: Option<u64>) -> u64 {
        match self {
            MinFree::Bytes(b) => b,
            MinFree::Percent(p) => total.map_or(u64::MAX, |total| total / 100 * u64::from(p)),
        }
    }
}

/// Parses SIZE: a count of bytes with an optional binary unit `K`, `M`,
/// `G` or `T` (powers of 1024; a trailing `B` or `iB` is accepted, any
/// case): `4096`, `64K`, `500M`, `10GiB`. `None` for anything else and for
/// a size that does not fit in 64 bits (a usage error, exit 2).
pub fn parse_size(s: &str) -> Option<u64> {
    let upper = s.trim().to_ascii_uppercase();
    let digits = upper.trim_end_matches('B').trim_end_matches('I');
    let (num, shift) = match digits.chars().last() {
        Some('K') => (&digits[..digits.len() - 1], 10),
        Some('M') => (&digits[..digits.len() - 1], 20),
        Some('G') => (&digits[..digits.len() - 1], 30),
        Some('T') => (&digits[..digits.len() - 1], 40),
        _ => (digits, 0),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    num.parse::<u64>().ok()?.checked_mul(1u64 << shift)
}

/// Checks a config `provision` pattern or `provision_symlink` entry:
/// non-empty, no NUL or newline, not absolute, no `..` component (it
/// would escape the repository). A leading `/` anchors a gitignore
/// pattern to the top and is allowed only in a pattern (`/.env`).
pub fn check_provision_entry(p: &str) -> std::result::Result<(), String> {
    let body = p.strip_prefix('/').unwrap_or(p);
    if body.is_empty()
        || p.contains(['\0', '\n'])
        || p.starts_with("//")
        || body.split('/').any(|c| c == "..")
    {
        return Err(format!(
            "provision entry `{}` escapes the repository or is empty; name a path inside it (like `.env` or `node_modules`)",
            p.escape_debug()
        ));
    }
    Ok(())
}

/// Where gate 6 archives commits that are not durable (`--archive`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ArchiveMode {
    /// A verified bundle under the state root.
    #[default]
    Bundle,
    /// Archival refs pushed to the trusted remote and read back.
    Remote,
    /// Both a bundle and archival refs.
    Both,
}

impl ArchiveMode {
    /// True if this mode writes a bundle.
    pub fn bundle(self) -> bool {
        self != ArchiveMode::Remote
    }
    /// True if this mode pushes archival refs.
    pub fn remote(self) -> bool {
        self != ArchiveMode::Bundle
    }

    /// The stricter join of two layers' modes: every destination either
    /// asks for (`bundle` and `remote` join to `both`).
    pub fn join(self, other: ArchiveMode) -> ArchiveMode {
        if self == other {
            self
        } else {
            ArchiveMode::Both
        }
    }
}

/// The default bound on one teardown command (`teardown_timeout`).
pub const DEFAULT_TEARDOWN_TIMEOUT: Duration = Duration::from_secs(60);

/// The default orphan grace: orphans first seen longer ago are flagged.
pub const DEFAULT_ORPHAN_GRACE: Duration = Duration::from_secs(7 * 24 * 3600);

/// The documented environment list: variable, config key. Nothing else
/// named `LEASE_*` is config.
pub const ENV_KEYS: &[(&str, &str)] = &[
    ("LEASE_WORKTREE_ROOT", "worktree_root"),
    ("LEASE_TRUSTED_REMOTE", "trusted_remote"),
    ("LEASE_GIT", "git"),
    ("LEASE_OWNER", "owner"),
    ("LEASE_MIN_FREE", "min_free"),
    ("LEASE_ORPHAN_GRACE", "orphan_grace"),
    ("LEASE_REBUILDABLE", "rebuildable"),
    ("LEASE_PROCESS_AUDIT", "process_audit"),
    ("LEASE_ALLOW_TEMP_ROOT", "allow_temp_worktree_root"),
    ("LEASE_ARCHIVE", "archive"),
    ("LEASE_TRUSTED_FILTERS", "trusted_filters"),
];

/// The flags that feed config: flag, config key.
const FLAG_KEYS: &[(&str, &str)] = &[
    ("--min-free", "min_free"),
    ("--rebuildable", "rebuildable"),
    ("--allow-temp-root", "allow_temp_worktree_root"),
    ("--archive", "archive"),
];

/// `process_audit`: what gate 4 does with processes it could not audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProcessAudit {
    /// Report how many processes could not be audited.
    Normal,
    /// Hold (`unprovable`) when any could not be audited.
    Strict,
}

/// One layer's settings: a config file's keys, or what the environment or
/// the flags set. `None` means the layer does not set the key.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layer {
    /// Directory under which `lease exec` creates worktrees (absolute).
    pub worktree_root: Option<PathBuf>,
    /// The remote whose tracking refs make commits durable.
    pub trusted_remote: Option<String>,
    /// The git binary (absolute).
    pub git: Option<PathBuf>,
    /// The default owner, `KIND:NAME`.
    pub owner: Option<String>,
    /// Free-space watermark (SIZE: `500M`, `10G`, `5%`).
    pub min_free: Option<String>,
    /// How long an orphan may be seen before reap flags it (`7d`, `12h`).
    pub orphan_grace: Option<String>,
    /// Output paths (relative to a worktree top) lease may delete.
    pub rebuildable: Option<Vec<String>>,
    /// `normal` or `strict`.
    pub process_audit: Option<ProcessAudit>,
    /// Allow a worktree root under `/tmp`, `/var/tmp` or `$TMPDIR`.
    pub allow_temp_worktree_root: Option<bool>,
    /// Where retires archive commits that are not durable: `bundle`,
    /// `remote` or `both`.
    pub archive: Option<ArchiveMode>,
    /// Filter drivers (`lfs`) whose `clean`/`process` commands, as the
    /// user's own git config defines them, the status probe may run.
    pub trusted_filters: Option<Vec<String>>,
    /// A shell command line (`sh -c`) a retire runs once per record after
    /// the last consumer is gone and before removal. Operator config files
    /// only: no environment variable or flag sets it, and no repository
    /// file is ever read for it.
    pub teardown: Option<String>,
    /// The bound on each teardown command (`60s`, `5m`).
    pub teardown_timeout: Option<String>,
    /// Gitignore patterns of ignored files copied into each new worktree
    /// from the main worktree (besides `.worktreeinclude`'s).
    pub provision: Option<Vec<String>>,
    /// Ignored paths (`node_modules`) symlinked in each new worktree to
    /// the main worktree's copy.
    pub provision_symlink: Option<Vec<String>>,
}

/// Where a layer comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerFrom {
    /// A config file.
    File(PathBuf),
    /// The documented environment variables.
    Env,
    /// Command-line flags.
    Flags,
}

/// Where one effective value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "kebab-case")]
pub enum Source {
    /// Built in.
    Default,
    /// A config file (its path).
    File(String),
    /// An environment variable (its name).
    Env(String),
    /// A flag (its name).
    Flag(String),
    /// Several layers joined (the intersection of `rebuildable`, every
    /// `teardown`): the join rule of the key says how.
    Joined(Vec<Source>),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(p) => write!(f, "file {p}"),
            Source::Env(v) => write!(f, "env {v}"),
            Source::Flag(v) => write!(f, "flag {v}"),
            Source::Joined(s) => {
                let parts: Vec<String> = s.iter().map(ToString::to_string).collect();
                write!(f, "joined from {}", parts.join(", "))
            }
        }
    }
}

impl LayerFrom {
    /// The source of `key` in this layer.
    fn source(&self, key: &str) -> Source {
        let named = |list: &[(&'static str, &str)]| {
            list.iter()
                .find(|(_, k)| *k == key)
                .map_or_else(|| key.to_string(), |(n, _)| (*n).to_string())
        };
        match self {
            LayerFrom::File(p) => Source::File(p.to_string_lossy().into_owned()),
            LayerFrom::Env => Source::Env(named(ENV_KEYS)),
            LayerFrom::Flags => Source::Flag(named(FLAG_KEYS)),
        }
    }

    /// Names `key` in this layer for an error message.
    fn context(&self, key: &str) -> String {
        match self {
            LayerFrom::File(p) => format!("config file `{}`, key `{key}`", p.display()),
            _ => format!("`{}`", self.source(key).name()),
        }
    }
}

impl Source {
    /// The variable or flag name, or the file path.
    fn name(&self) -> String {
        match self {
            Source::Env(n) | Source::Flag(n) | Source::File(n) => n.clone(),
            other => other.to_string(),
        }
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sourced<T> {
    /// The effective value.
    pub value: T,
    /// Where it came from.
    pub source: Source,
}

/// The effective free-space watermark: every bound set is required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Watermark {
    /// The largest byte bound of any layer.
    pub bytes: Option<Sourced<u64>>,
    /// The largest percentage bound of any layer.
    pub percent: Option<Sourced<u8>>,
}

impl Watermark {
    /// The bounds as [`MinFree`] values (the default 1 GiB when none is set).
    pub fn bounds(&self) -> Vec<MinFree> {
        let mut out: Vec<MinFree> = Vec::new();
        if let Some(b) = &self.bytes {
            out.push(MinFree::Bytes(b.value));
        }
        if let Some(p) = &self.percent {
            out.push(MinFree::Percent(p.value));
        }
        out
    }
}

/// The effective policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Policy {
    /// The config files read, in order.
    pub files: Vec<String>,
    /// Configured worktree root (`None`: `<state root>/worktrees`).
    pub worktree_root: Option<Sourced<PathBuf>>,
    /// Configured trusted remote (`None`: `origin`, else the branch's upstream).
    pub trusted_remote: Option<Sourced<String>>,
    /// Configured git binary (`None`: the first `git` on PATH).
    pub git: Option<Sourced<PathBuf>>,
    /// Configured default owner (`None`: `manual:<user>`).
    pub owner: Option<Sourced<Owner>>,
    /// The free-space watermark of exec's admission.
    pub min_free: Watermark,
    /// How long an orphan may be seen before reap flags it.
    pub orphan_grace: Sourced<u64>,
    /// Declared rebuildable output paths.
    pub rebuildable: Sourced<Vec<String>>,
    /// Gate 4's audit mode.
    pub process_audit: Sourced<ProcessAudit>,
    /// Whether a worktree root under a temp directory is allowed.
    pub allow_temp_worktree_root: Sourced<bool>,
    /// Where gate 6 archives commits that are not durable.
    pub archive: Sourced<ArchiveMode>,
    /// Filter drivers the status probe may run as the user's git config
    /// defines them (SPEC "Truthful content probes"); never repo config.
    pub trusted_filters: Sourced<Vec<String>>,
    /// Teardown command lines, in layer order (SPEC "Provisioned files,
    /// disk, and hygiene"): every one a file layer names runs.
    pub teardown: Sourced<Vec<String>>,
    /// The bound on each teardown command, in seconds (the shortest layer).
    pub teardown_timeout: Sourced<u64>,
    /// Provision patterns (the intersection of the layers that set it).
    pub provision: Sourced<Vec<String>>,
    /// Provision symlinks (the intersection of the layers that set it).
    pub provision_symlink: Sourced<Vec<String>>,
}

impl Policy {
    /// The rebuildable paths as bytes, for the retire engine.
    pub fn rebuildable_bytes(&self) -> Vec<Vec<u8>> {
        self.rebuildable
            .value
            .iter()
            .map(|p| p.as_bytes().to_vec())
            .collect()
    }

    /// True if gate 4 holds on processes it could not audit.
    pub fn strict_audit(&self) -> bool {
        self.process_audit.value == ProcessAudit::Strict
    }

    /// The default owner: the configured one, else `manual:<user name>`,
    /// the name asked of `user_name` only then (`ops::caller_name` reads it
    /// from the system).
    pub fn default_owner(&self, user_name: impl FnOnce() -> String) -> Owner {
        match &self.owner {
            Some(o) => o.value.clone(),
            None => Owner {
                kind: "manual".into(),
                name: user_name(),
            },
        }
    }
}

fn sourced<T>(value: T, source: Source) -> Sourced<T> {
    Sourced { value, source }
}

/// Joins `layers` (in order) into the effective policy. Pure: values are
/// validated here, and errors name the layer and key.
pub fn resolve(layers: &[(LayerFrom, Layer)]) -> Result<Policy> {
    let mut p = Policy {
        files: layers
            .iter()
            .filter_map(|(f, _)| match f {
                LayerFrom::File(p) => Some(p.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect(),
        worktree_root: None,
        trusted_remote: None,
        git: None,
        owner: None,
        min_free: Watermark {
            bytes: None,
            percent: None,
        },
        orphan_grace: sourced(DEFAULT_ORPHAN_GRACE.as_secs(), Source::Default),
        rebuildable: sourced(Vec::new(), Source::Default),
        process_audit: sourced(ProcessAudit::Normal, Source::Default),
        allow_temp_worktree_root: sourced(false, Source::Default),
        archive: sourced(ArchiveMode::default(), Source::Default),
        trusted_filters: sourced(Vec::new(), Source::Default),
        teardown: sourced(Vec::new(), Source::Default),
        teardown_timeout: sourced(DEFAULT_TEARDOWN_TIMEOUT.as_secs(), Source::Default),
        provision: sourced(Vec::new(), Source::Default),
        provision_symlink: sourced(Vec::new(), Source::Default),
    };
    let mut provision_sources: Vec<Source> = Vec::new();
    let mut symlink_sources: Vec<Source> = Vec::new();
    let mut teardown_sources: Vec<Source> = Vec::new();
    let mut grace_set = false;
    let mut rebuildable_sources: Vec<Source> = Vec::new();
    let mut filter_sources: Vec<Source> = Vec::new();
    let mut allow_denied = false;
    for (from, l) in layers {
        let usage =
            |key: &str, what: String| Error::Usage(format!("{}: {what}", from.context(key)));
        if let Some(v) = &l.worktree_root {
            p.worktree_root = Some(sourced(
                absolute(v).map_err(|w| usage("worktree_root", w))?,
                from.source("worktree_root"),
            ));
        }
        if let Some(v) = &l.trusted_remote {
            if v.is_empty() || v.contains('/') || v.starts_with('-') {
                return Err(usage(
                    "trusted_remote",
                    format!("`{v}` is not a remote name"),
                ));
            }
            p.trusted_remote = Some(sourced(v.clone(), from.source("trusted_remote")));
        }
        if let Some(v) = &l.git {
            p.git = Some(sourced(
                absolute(v).map_err(|w| usage("git", w))?,
                from.source("git"),
            ));
        }
        if let Some(v) = &l.owner {
            let o = Owner::parse(v).map_err(|e| usage("owner", e.to_string()))?;
            p.owner = Some(sourced(o, from.source("owner")));
        }
        if let Some(v) = &l.min_free {
            match MinFree::parse(v).map_err(|e| usage("min_free", e.to_string()))? {
                MinFree::Bytes(b) => {
                    if p.min_free.bytes.as_ref().is_none_or(|x| b > x.value) {
                        p.min_free.bytes = Some(sourced(b, from.source("min_free")));
                    }
                }
                MinFree::Percent(pc) => {
                    if p.min_free.percent.as_ref().is_none_or(|x| pc > x.value) {
                        p.min_free.percent = Some(sourced(pc, from.source("min_free")));
                    }
                }
            }
        }
        if let Some(v) = &l.orphan_grace {
            let d = humantime::parse_duration(v)
                .map_err(|e| usage("orphan_grace", format!("`{v}` is not a duration: {e}")))?;
            if !grace_set || d.as_secs() > p.orphan_grace.value {
                p.orphan_grace = sourced(d.as_secs(), from.source("orphan_grace"));
                grace_set = true;
            }
        }
        if let Some(v) = &l.rebuildable {
            let mut paths: Vec<String> = Vec::new();
            for r in v {
                let n = rebuildable_path(r).map_err(|w| usage("rebuildable", w))?;
                if !paths.contains(&n) {
                    paths.push(n);
                }
            }
            if rebuildable_sources.is_empty() {
                p.rebuildable.value = paths;
            } else {
                p.rebuildable.value.retain(|x| paths.contains(x));
            }
            rebuildable_sources.push(from.source("rebuildable"));
        }
        if let Some(v) = &l.trusted_filters {
            let mut names: Vec<String> = Vec::new();
            for d in v {
                let d = filter_driver(d).map_err(|w| usage("trusted_filters", w))?;
                if !names.contains(&d) {
                    names.push(d);
                }
            }
            if filter_sources.is_empty() {
                p.trusted_filters.value = names;
            } else {
                p.trusted_filters.value.retain(|x| names.contains(x));
            }
            filter_sources.push(from.source("trusted_filters"));
        }
        // Provisioned paths are not work at retire while unchanged: fewer
        // protect more, so layers intersect.
        for (key, v, target, sources) in [
            (
                "provision",
                &l.provision,
                &mut p.provision,
                &mut provision_sources,
            ),
            (
                "provision_symlink",
                &l.provision_symlink,
                &mut p.provision_symlink,
                &mut symlink_sources,
            ),
        ] {
            let Some(v) = v else { continue };
            let mut names: Vec<String> = Vec::new();
            for e in v {
                check_provision_entry(e).map_err(|w| usage(key, w))?;
                if !names.contains(e) {
                    names.push(e.clone());
                }
            }
            if sources.is_empty() {
                target.value = names;
            } else {
                target.value.retain(|x| names.contains(x));
            }
            sources.push(from.source(key));
        }
        if let Some(t) = &l.teardown {
            if !matches!(from, LayerFrom::File(_)) {
                return Err(usage(
                    "teardown",
                    "teardown is operator config: set it in a config file".into(),
                ));
            }
            if t.trim().is_empty() || t.contains('\0') {
                return Err(usage("teardown", format!("`{t}` is not a command line")));
            }
            if !p.teardown.value.contains(t) {
                p.teardown.value.push(t.clone());
            }
            teardown_sources.push(from.source("teardown"));
        }
        if let Some(v) = &l.teardown_timeout {
            let d = humantime::parse_duration(v)
                .map_err(|e| usage("teardown_timeout", format!("`{v}` is not a duration: {e}")))?;
            if d.is_zero() {
                return Err(usage("teardown_timeout", "must be longer than 0s".into()));
            }
            if p.teardown_timeout.source == Source::Default
                || d.as_secs() < p.teardown_timeout.value
            {
                p.teardown_timeout = sourced(d.as_secs().max(1), from.source("teardown_timeout"));
            }
        }
        if let Some(a) = l.process_audit
            && (p.process_audit.source == Source::Default || a > p.process_audit.value)
        {
            p.process_audit = sourced(a, from.source("process_audit"));
        }
        match l.allow_temp_worktree_root {
            Some(false) => {
                allow_denied = true;
                p.allow_temp_worktree_root =
                    sourced(false, from.source("allow_temp_worktree_root"));
            }
            Some(true) if !allow_denied => {
                p.allow_temp_worktree_root = sourced(true, from.source("allow_temp_worktree_root"));
            }
            _ => {}
        }
        if let Some(a) = l.archive {
            let src = from.source("archive");
            let joined = p.archive.value.join(a);
            if p.archive.source == Source::Default || joined == a && joined != p.archive.value {
                p.archive = sourced(a, src);
            } else if joined != p.archive.value {
                p.archive = sourced(joined, Source::Joined(vec![p.archive.source.clone(), src]));
            }
        }
    }
    match rebuildable_sources.len() {
        0 => {}
        1 => p.rebuildable.source = rebuildable_sources.remove(0),
        _ => p.rebuildable.source = Source::Joined(rebuildable_sources),
    }
    match filter_sources.len() {
        0 => {}
        1 => p.trusted_filters.source = filter_sources.remove(0),
        _ => p.trusted_filters.source = Source::Joined(filter_sources),
    }
    for (target, mut sources) in [
        (&mut p.provision, provision_sources),
        (&mut p.provision_symlink, symlink_sources),
    ] {
        match sources.len() {
            0 => {}
            1 => target.source = sources.remove(0),
            _ => target.source = Source::Joined(sources),
        }
    }
    match teardown_sources.len() {
        0 => {}
        1 => p.teardown.source = teardown_sources.remove(0),
        _ => p.teardown.source = Source::Joined(teardown_sources),
    }
    if p.min_free.bytes.is_none() && p.min_free.percent.is_none() {
        let MinFree::Bytes(b) = DEFAULT_MIN_FREE else {
            unreachable!("the default watermark is in bytes")
        };
        p.min_free.bytes = Some(sourced(b, Source::Default));
    }
    Ok(p)
}

/// An absolute path without a newline, normalized lexically (`//`, `/./`
/// and a trailing `/` removed, as `LEASE_HOME` is: SPEC "Bad input and
/// faults"), so paths built under it have the one spelling git prints.
fn absolute(p: &Path) -> std::result::Result<PathBuf, String> {
    use std::os::unix::ffi::OsStrExt;
    if !p.is_absolute() {
        return Err(format!("`{}` is not an absolute path", p.display()));
    }
    if p.as_os_str().as_bytes().contains(&b'\n') {
        return Err(format!(
            "`{}` contains a newline; lease refuses such paths",
            p.display().to_string().escape_debug()
        ));
    }
    Ok(p.components().collect())
}

/// Validates a trusted filter driver name: what follows `filter=` in
/// gitattributes (non-empty, no whitespace, NUL or control character).
fn filter_driver(d: &str) -> std::result::Result<String, String> {
    if d.is_empty() || d.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "`{d}` is not a filter driver name (like `lfs`, as in `filter=lfs` in .gitattributes)"
        ));
    }
    Ok(d.to_string())
}

/// Validates a declared rebuildable path: relative, normal (no `.`, `..` or
/// `//`), returned without a trailing `/`.
fn rebuildable_path(p: &str) -> std::result::Result<String, String> {
    let body = p.strip_suffix('/').unwrap_or(p);
    let normal = !body.is_empty()
        && body
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
    if p.starts_with('/') || !normal {
        return Err(format!(
            "rebuildable path `{p}` must be relative to the worktree top and normal (like `target`)"
        ));
    }
    Ok(body.to_string())
}

/// Builds the environment layer from the documented variables only
/// (`get` reads one variable; empty values are unset).
pub fn env_layer(get: &dyn Fn(&str) -> Option<String>) -> Result<Layer> {
    let var = |k: &str| get(k).filter(|v| !v.is_empty());
    let process_audit = match var("LEASE_PROCESS_AUDIT").as_deref() {
        None => None,
        Some("normal") => Some(ProcessAudit::Normal),
        Some("strict") => Some(ProcessAudit::Strict),
        Some(v) => {
            return Err(Error::Usage(format!(
                "`LEASE_PROCESS_AUDIT` is `{v}`; use `normal` or `strict`"
            )));
        }
    };
    let allow = match var("LEASE_ALLOW_TEMP_ROOT").as_deref() {
        None => None,
        Some("1" | "true" | "yes") => Some(true),
        Some("0" | "false" | "no") => Some(false),
        Some(v) => {
            return Err(Error::Usage(format!(
                "`LEASE_ALLOW_TEMP_ROOT` is `{v}`; use 1 or 0"
            )));
        }
    };
    let archive = match var("LEASE_ARCHIVE").as_deref() {
        None => None,
        Some("bundle") => Some(ArchiveMode::Bundle),
        Some("remote") => Some(ArchiveMode::Remote),
        Some("both") => Some(ArchiveMode::Both),
        Some(v) => {
            return Err(Error::Usage(format!(
                "`LEASE_ARCHIVE` is `{v}`; use `bundle`, `remote` or `both`"
            )));
        }
    };
    Ok(Layer {
        worktree_root: var("LEASE_WORKTREE_ROOT").map(PathBuf::from),
        trusted_remote: var("LEASE_TRUSTED_REMOTE"),
        git: var("LEASE_GIT").map(PathBuf::from),
        owner: var("LEASE_OWNER"),
        min_free: var("LEASE_MIN_FREE"),
        orphan_grace: var("LEASE_ORPHAN_GRACE"),
        rebuildable: var("LEASE_REBUILDABLE").map(|v| {
            v.split(':')
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect()
        }),
        process_audit,
        allow_temp_worktree_root: allow,
        archive,
        trusted_filters: var("LEASE_TRUSTED_FILTERS").map(|v| {
            v.split(',')
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect()
        }),
        // Operator config files only (SPEC: never repo config).
        teardown: None,
        teardown_timeout: None,
        provision: None,
        provision_symlink: None,
    })
}

/// Parses one config file's text; errors name the file and say what to do.
pub fn parse_file(path: &Path, text: &str) -> Result<Layer> {
    toml::from_str::<Layer>(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let at = line.map(|l| format!(" (line {l})")).unwrap_or_default();
        Error::Usage(format!(
            "config file `{}`{at}: {}; fix or remove the key (see `lease config --show` and docs/config.md for the keys)",
            path.display(),
            e.message().trim()
        ))
    })
}

/// The built-in defaults: the policy with no config file, environment or
/// flag (docs/config.md's "default" column).
pub fn defaults() -> Policy {
    resolve(&[]).expect("the defaults resolve")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
