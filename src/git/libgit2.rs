//! In-process, read-only reads of a repository with libgit2: worktree
//! enumeration and HEADs. Every git spawn costs about 2 ms here; these reads
//! replace `git worktree list` and `git rev-parse HEAD` where libgit2 can
//! read the repository exactly as git does, and return `None` everywhere
//! else, so the caller falls back to the sanitized CLI ([`crate::git`]).
//!
//! # Reading no more than the sanitized CLI
//! - libgit2's system, XDG, global and ProgramData config search paths are
//!   set to nothing before the first open (`confine`); the CLI runs with
//!   `GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null`.
//! - Repositories open with `NO_SEARCH` and without `FROM_ENV`: no upward
//!   discovery, no `GIT_DIR` or other variable of lease's environment.
//! - libgit2 runs no hook, fsmonitor or filter, ignores replace refs (as
//!   `--no-replace-objects` does), and nothing here writes: no index
//!   refresh, no ref, no reflog.
//!
//! # When the CLI reads instead ([`unsupported`])
//! Anything libgit2 might read differently from git: a repository format
//! above 1, any `extensions.*` key but `noop`, `objectformat=sha1` and
//! `worktreeconfig` (reftable, sha256, partial clone, ...), grafts, a shallow
//! clone, a HEAD or ref lease cannot parse, a per-worktree or symbolic ref
//! behind HEAD, and a main repository with no explicit `core.bare`.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::git::parse::WorktreeEntry;

/// The object id git prints for an unborn branch.
const ZERO: &str = "0000000000000000000000000000000000000000";

/// The largest git file (`.git`, `commondir`, `gitdir`, `locked`, `HEAD`)
/// read here, in bytes: each holds a path, a reason or a ref. A larger one,
/// a FIFO, a device or a symlink is not read ([`crate::os::fs::read_regular`]):
/// the CLI answers.
const MAX_GIT_FILE_BYTES: u64 = 64 << 10;

/// Reads one small git file of a worktree or admin directory: a regular
/// file, never followed, never waited on, at most [`MAX_GIT_FILE_BYTES`].
fn read_git_file(path: &Path) -> std::io::Result<Vec<u8>> {
    crate::os::fs::read_regular(path, MAX_GIT_FILE_BYTES)
}

/// Extension keys libgit2 1.9 reads as git does (lowercase, as config
/// normalizes them). `objectformat` is further limited to `sha1`.
const KNOWN_EXTENSIONS: &[&str] = &["noop", "objectformat", "worktreeconfig"];

/// Sets libgit2's config search paths to nothing, once per process.
/// Returns false if that failed: then no repository is opened in process.
fn confine() -> bool {
    static CONFINED: OnceLock<bool> = OnceLock::new();
    *CONFINED.get_or_init(|| {
        use git2::ConfigLevel;
        [
            ConfigLevel::ProgramData,
            ConfigLevel::System,
            ConfigLevel::XDG,
            ConfigLevel::Global,
        ]
        .into_iter()
        .all(|level| {
            // SAFETY: libgit2's global options are process-wide and not
            // synchronized; this runs once, under the OnceLock, before this
            // module opens any repository, and nothing else in lease uses
            // libgit2.
            #[allow(unsafe_code)]
            let set = unsafe { git2::opts::set_search_path(level, "") };
            set.is_ok()
        })
    })
}

/// Returns why libgit2 must not read the repository whose common git dir
/// is `common`, or `None` when it may. Reads only files in `common`.
pub fn unsupported(common: &Path) -> Option<String> {
    for f in ["info/grafts", "shallow"] {
        if fs::symlink_metadata(common.join(f)).is_ok() {
            return Some(format!("`{f}` exists"));
        }
    }
    let cfg = match git2::Config::open(&common.join("config")) {
        Ok(c) => c,
        Err(e) => return Some(format!("cannot read its config: {}", e.message())),
    };
    match cfg.get_i64("core.repositoryformatversion") {
        Ok(0 | 1) => {}
        Err(e) if e.code() == git2::ErrorCode::NotFound => {}
        Ok(v) => return Some(format!("repository format version {v}")),
        Err(e) => return Some(format!("core.repositoryformatversion: {}", e.message())),
    }
    let Ok(mut entries) = cfg.entries(Some(r"^extensions\.")) else {
        return Some("cannot list its extensions".into());
    };
    while let Some(Ok(e)) = entries.next() {
        let name = e.name().unwrap_or("").to_ascii_lowercase();
        let ext = name.strip_prefix("extensions.").unwrap_or(&name);
        let value = e.value().unwrap_or("");
        if !KNOWN_EXTENSIONS.contains(&ext)
            || (ext == "objectformat" && !value.eq_ignore_ascii_case("sha1"))
        {
            return Some(format!("extensions.{ext}={value}"));
        }
    }
    None
}

/// The canonical common git dir of the linked worktree whose top is `wt`,
/// read from its files as git's discovery does (`.git` file, then the admin
/// directory's `commondir`), with the admin `gitdir` pointing back and the
/// worktree, its `.git` file and the admin directory owned by this user (git
/// refuses "dubious ownership"). `None` means the CLI must answer.
pub fn common_of_linked(wt: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let uid = crate::os::process::euid();
    let owned = |p: &Path| fs::symlink_metadata(p).is_ok_and(|m| m.uid() == uid);
    let dotgit = wt.join(".git");
    if !owned(wt) || !owned(&dotgit) {
        return None;
    }
    let text = read_git_file(&dotgit).ok()?;
    let admin = Path::new(OsStr::from_bytes(trim_end(text.strip_prefix(b"gitdir: ")?)));
    let admin = fs::canonicalize(wt.join(admin)).ok()?;
    let common = read_git_file(&admin.join("commondir")).ok()?;
    let common = fs::canonicalize(admin.join(OsStr::from_bytes(trim_end(&common)))).ok()?;
    let back = crate::git::admin::linked_admin(&common, wt)?;
    (back == admin && owned(&admin)).then_some(common)
}

/// A repository opened read-only by libgit2 at its common git dir.
pub struct Reader {
    repo: git2::Repository,
    common: PathBuf,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("common", &self.common)
            .finish()
    }
}

impl Reader {
    /// Opens the repository whose common git dir is `common`, or returns
    /// `None` (the caller uses the CLI) if libgit2 cannot read it as git does.
    pub fn open(common: &Path) -> Option<Reader> {
        if !confine() {
            return None;
        }
        use std::os::unix::fs::MetadataExt;
        if fs::metadata(common).map(|m| m.uid()).ok() != Some(crate::os::process::euid()) {
            return None; // git refuses "dubious ownership"; let it say so
        }
        if let Some(why) = unsupported(common) {
            tracing::debug!(common = %common.display(), why, "libgit2 reader not used");
            return None;
        }
        let flags = git2::RepositoryOpenFlags::NO_SEARCH;
        let repo = git2::Repository::open_ext(common, flags, std::iter::empty::<&OsStr>())
            .map_err(
                |e| tracing::debug!(common = %common.display(), error = %e, "libgit2 cannot open"),
            )
            .ok()?;
        if repo.is_worktree() {
            return None;
        }
        let common = fs::canonicalize(repo.commondir()).ok()?;
        Some(Reader { repo, common })
    }

    /// The canonical common git dir.
    pub fn common(&self) -> &Path {
        &self.common
    }

    /// What `git worktree list --porcelain -z` would list, main worktree
    /// first, the linked ones in directory order, or `None` where this
    /// reading might differ from git's.
    pub fn worktrees(&self) -> Option<Vec<WorktreeEntry>> {
        let Ok(bare) = self.repo.config().ok()?.get_bool("core.bare") else {
            return None;
        };
        let main_path = {
            let p = self.common.as_os_str().as_bytes();
            p.strip_suffix(b"/.git").unwrap_or(p).to_vec()
        };
        let mut all = vec![if bare {
            WorktreeEntry {
                path: main_path,
                bare: true,
                ..Default::default()
            }
        } else {
            self.entry(main_path, &self.common.join("HEAD"))?
        }];
        let dir = match fs::read_dir(self.common.join("worktrees")) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(all),
            Err(_) => return None,
        };
        for ent in dir {
            let admin = ent.ok()?.path();
            // git skips an entry whose gitdir file is missing or empty.
            let gitdir = match read_git_file(&admin.join("gitdir")) {
                Ok(g) => g,
                // git skips an entry with no gitdir file, and a plain file
                // in `worktrees/` (ENOTDIR) has none.
                Err(e)
                    if e.kind() == std::io::ErrorKind::NotFound
                        || e.raw_os_error() == Some(libc::ENOTDIR) =>
                {
                    continue;
                }
                Err(_) => return None,
            };
            if gitdir.is_empty() {
                continue;
            }
            let raw = trim_end(&gitdir);
            let path = raw.strip_suffix(b"/.git").unwrap_or(raw).to_vec();
            if !path.starts_with(b"/") {
                return None; // relative worktree paths (git 2.48+)
            }
            let mut e = self.entry(path, &admin.join("HEAD"))?;
            let locked = admin.join("locked");
            match read_git_file(&locked) {
                Ok(r) => e.locked = Some(String::from_utf8_lossy(trim(&r)).into_owned()),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(_) => return None,
            }
            if e.locked.is_none() && fs::metadata(OsStr::from_bytes(raw)).is_err() {
                e.prunable = Some("gitdir file points to non-existent location".into());
            }
            all.push(e);
        }
        Some(all)
    }

    fn entry(&self, path: Vec<u8>, head_file: &Path) -> Option<WorktreeEntry> {
        let (head, branch) = self.head_file(head_file)?;
        Some(WorktreeEntry {
            path,
            head: Some(head.unwrap_or_else(|| ZERO.to_string())),
            detached: branch.is_none(),
            branch,
            ..Default::default()
        })
    }

    /// Reads a HEAD file: `(commit, branch)`; the commit is `None` for an
    /// unborn branch, the branch `None` for a detached HEAD.
    fn head_file(&self, file: &Path) -> Option<(Option<String>, Option<Vec<u8>>)> {
        // A symlinked HEAD (core.preferSymlinkRefs) is a symbolic ref to
        // git; reading through it would see a detached one. The CLI answers.
        if !fs::symlink_metadata(file).ok()?.file_type().is_file() {
            return None;
        }
        let text = read_git_file(file).ok()?;
        let text = trim_end(&text);
        if let Some(rest) = text.strip_prefix(b"ref:") {
            let name = std::str::from_utf8(trim(rest)).ok()?;
            if !name.starts_with("refs/")
                || !git2::Reference::is_valid_name(name)
                || ["refs/worktree/", "refs/bisect/", "refs/rewritten/"]
                    .iter()
                    .any(|p| name.starts_with(p))
            {
                return None;
            }
            let oid = match self.repo.find_reference(name) {
                Ok(r) if r.kind() == Some(git2::ReferenceType::Direct) => {
                    Some(r.target()?.to_string())
                }
                Ok(_) => return None,
                Err(e) if e.code() == git2::ErrorCode::NotFound => None,
                Err(_) => return None,
            };
            Some((oid, Some(name.as_bytes().to_vec())))
        } else {
            let hex = std::str::from_utf8(text).ok()?;
            (hex.len() == 40 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| (Some(hex.to_ascii_lowercase()), None))
        }
    }

    /// What `git rev-parse --verify -q HEAD^{commit}` prints in the linked
    /// worktree whose admin directory is `admin`: `Some(None)` when HEAD
    /// names no commit (unborn), `None` when the CLI must answer.
    pub fn head_commit(&self, admin: &Path) -> Option<Option<String>> {
        if admin.parent() != Some(&self.common.join("worktrees")) {
            return None;
        }
        let (oid, _) = self.head_file(&admin.join("HEAD"))?;
        let Some(oid) = oid else {
            return Some(None);
        };
        let obj = self
            .repo
            .find_object(git2::Oid::from_str(&oid).ok()?, None)
            .ok()?;
        match obj.peel_to_commit() {
            Ok(c) => Some(Some(c.id().to_string())),
            Err(_) => Some(None),
        }
    }

    /// Gate 6's durable ref, as [`crate::git::refs::durable_ref`] finds it with the CLI,
    /// for a repository with an `origin` remote in its config:
    /// `refs/remotes/origin/{HEAD,main,master}`, the first that resolves to
    /// a commit (a symbolic one only if it stays under
    /// `refs/remotes/origin/`). `None` when the CLI must answer (no origin
    /// in the config, remotes in `remotes/` or `branches/` files, anything
    /// libgit2 cannot read); `Some(None)` when there is no durable ref.
    pub fn durable_origin(&self) -> Option<Option<(String, String)>> {
        for legacy in ["remotes", "branches"] {
            match fs::read_dir(self.common.join(legacy)) {
                Ok(d) => {
                    if d.count() > 0 {
                        return None;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(_) => return None,
            }
        }
        let cfg = self.repo.config().ok()?;
        let mut origin = cfg.entries(Some(r"^remote\.origin\.")).ok()?;
        origin.next()?.ok()?;
        for name in ["HEAD", "main", "master"] {
            let r = format!("refs/remotes/origin/{name}");
            let reference = match self.repo.find_reference(&r) {
                Ok(x) => x,
                Err(e) if e.code() == git2::ErrorCode::NotFound => continue,
                Err(_) => return None,
            };
            if reference.kind() == Some(git2::ReferenceType::Symbolic)
                && !reference
                    .symbolic_target_bytes()?
                    .starts_with(b"refs/remotes/origin/")
            {
                continue;
            }
            let resolved = match reference.resolve() {
                Ok(x) => x,
                Err(e) if e.code() == git2::ErrorCode::NotFound => continue,
                Err(_) => return None,
            };
            match resolved.peel_to_commit() {
                Ok(c) => return Some(Some((r, c.id().to_string()))),
                Err(_) => continue,
            }
        }
        Some(None)
    }

    /// `git rev-list <revs> --not <hide> [--branches --tags --remotes
    /// --glob=refs/stash] --`: the commits reachable from `revs` and from
    /// none of the hidden ones, by a libgit2 revwalk (replace refs ignored,
    /// as with `--no-replace-objects`), in no particular order. `None` when
    /// the CLI must answer.
    pub fn not_reachable(
        &self,
        revs: &[String],
        hide: &[String],
        shared: bool,
    ) -> Option<Vec<String>> {
        let mut walk = self.repo.revwalk().ok()?;
        let oid = |s: &String| git2::Oid::from_str(s).ok();
        for r in revs {
            walk.push(oid(r)?).ok()?;
        }
        for h in hide {
            walk.hide(oid(h)?).ok()?;
        }
        if shared {
            for g in ["refs/heads", "refs/tags", "refs/remotes", "refs/stash"] {
                walk.hide_glob(g).ok()?;
            }
        }
        let mut out = Vec::new();
        for c in walk {
            out.push(c.ok()?.to_string());
        }
        Some(out)
    }
}

/// git's `isspace` (sane-ctype.h): no form feed or vertical tab.
fn space(c: &u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

fn trim_end(b: &[u8]) -> &[u8] {
    let n = b.iter().rposition(|c| !space(c)).map_or(0, |i| i + 1);
    &b[..n]
}

fn trim(b: &[u8]) -> &[u8] {
    let b = trim_end(b);
    let n = b.iter().position(|c| !space(c)).unwrap_or(b.len());
    &b[n..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libgit2_reads_no_system_xdg_or_global_config() {
        use git2::ConfigLevel;
        assert!(confine());
        for level in [
            ConfigLevel::ProgramData,
            ConfigLevel::System,
            ConfigLevel::XDG,
            ConfigLevel::Global,
        ] {
            // SAFETY: reads the process-wide option confine() set; no other
            // thread of this test changes it afterwards.
            #[allow(unsafe_code)]
            let path = unsafe { git2::opts::get_search_path(level) }.map(|p| p.into_bytes());
            assert_eq!(path.ok(), Some(Vec::new()), "{level:?}");
        }
    }

    #[test]
    fn trims_like_strbuf() {
        assert_eq!(trim_end(b"/a/b\n\n"), b"/a/b");
        assert_eq!(trim_end(b" \n"), b"");
        assert_eq!(trim(b"  why \n"), b"why");
        assert_eq!(trim(b""), b"");
    }
}
