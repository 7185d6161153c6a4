//! Gate 5 of a retire (SPEC "Gates", "Truthful content probes"): lease's
//! own walk of the tree, then git's view of it (changes, untracked and
//! ignored files, hidden index edits, operations in progress), with filters
//! run only where the operator trusts them.

use crate::error::{IoResultExt, Result};
use crate::git::{self, RepoGit, ops};
use crate::model::disk::DiskUsage;
use crate::model::evidence;
use crate::model::reason::{Hold, HoldReason};
use crate::plan::{self};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::{Engine, Locked};

/// Files in a worktree's admin directory that mean an operation is in progress.
const OPS: &[&str] = &[
    "MERGE_HEAD",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "BISECT_LOG",
    "rebase-merge",
    "rebase-apply",
    "index.lock",
];

impl Engine {
    /// Gate 5, lease's own walk, made before gate 4 and kept in `held`
    /// (mounts, special files, unreadable or undeletable directories,
    /// immutable or append-only entries, nested repositories and
    /// submodules), then git's view (changes, untracked, ignored, hidden
    /// index edits, operations in progress).
    pub(super) fn probe_tree(&self, locked: &mut Locked) -> Result<Result<(), Vec<Hold>>> {
        if let Some(h) = self.lfs_extensions(&locked.rg, &locked.wt)? {
            return Ok(Err(vec![h]));
        }
        // Before git reads anything: what gate 7 compares.
        locked.git_files = self.git_files(locked);
        let listed = ops::index_listing(&locked.rg, &locked.wt)?;
        if let Err(holds) =
            plan::gate_inventory(&locked.inventory, &git::parse::parse_gitlinks(&listed))
        {
            return Ok(Err(holds));
        }
        // One index listing serves the walk's gitlinks and the hidden entries.
        let mut content = self.probe_content(
            &locked.rg,
            &locked.wt,
            &locked.admin,
            Some(listed),
            None,
            &locked.shadowed,
            &locked.rec.provisioned,
        )?;
        // A whole ignored directory provisioning filled is judged by the
        // files the walk found in it.
        let dirs = plan::provisioned_dirs(
            &content.status,
            &locked.inventory.files,
            &content.provisioned,
        );
        content.provisioned.extend(dirs);
        locked.rebuildable = content.rebuildable_ignored();
        let verdict = plan::gate_content(&content);
        locked.status = Some(content.status);
        locked.provisioned = Some(content.provisioned);
        Ok(verdict)
    }

    /// The [`EntryStat`](evidence::EntryStat) of each file outside the tree
    /// whose change could change what `git status` says of it: the
    /// worktree's index, HEAD, `config.worktree` and sparse-checkout
    /// patterns, the repository's config, `info/exclude`, `info/attributes`
    /// and sparse-checkout patterns, the user's default excludes and
    /// attributes files (`$HOME/.config/git/ignore` and `attributes`, which
    /// git reads when `core.excludesFile` and `core.attributesFile` are
    /// unset: the sanitized git keeps `HOME` and drops `XDG_CONFIG_HOME`),
    /// and the system attributes file (`etc/gitattributes` beside git's
    /// prefix, `/etc` and `/usr/local/etc`: git reads it unless
    /// `GIT_ATTR_NOSYSTEM` is set) (gitignore(5), gitattributes(5),
    /// git-sparse-checkout(1)); a missing file is all zeros. Files the
    /// config names (`core.excludesFile`, `core.attributesFile`, included
    /// config) and trusted filter drivers are not here: [`Engine::status_stands`]
    /// refuses the shortcut when either is in play.
    pub(super) fn git_files(&self, locked: &Locked) -> Vec<evidence::EntryStat> {
        let common = Path::new(&locked.rec.repo);
        let admin = &locked.admin;
        let mut files = vec![
            // Any file made or removed in the admin directory (an
            // operation's state: BISECT_LOG, MERGE_HEAD, index.lock).
            admin.to_path_buf(),
            admin.join("index"),
            admin.join("HEAD"),
            admin.join("config.worktree"),
            admin.join("info").join("sparse-checkout"),
            common.join("config"),
            common.join("info").join("exclude"),
            common.join("info").join("attributes"),
            common.join("info").join("sparse-checkout"),
            std::path::PathBuf::from("/etc/gitattributes"),
            std::path::PathBuf::from("/usr/local/etc/gitattributes"),
        ];
        if let Some(prefix) = self.git.path().parent().and_then(Path::parent) {
            files.push(prefix.join("etc").join("gitattributes"));
        }
        if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            let user = Path::new(&home).join(".config").join("git");
            files.push(user.join("ignore"));
            files.push(user.join("attributes"));
        }
        files.iter().map(|p| crate::os::walk::stat_of(p)).collect()
    }

    /// Gate 7 after archiving: true if the `git status` gate 5 read still
    /// describes the tree, so it need not run again: `walk` (a second walk)
    /// and git's own files equal what gate 5 saw before its status
    /// ([`plan::tree_unchanged`]), no trusted filter driver ran in that
    /// status (a program whose output lease cannot see unchanged), and the
    /// repository's config names no excludes, attributes or included
    /// config file outside it (`core.excludesFile`, `core.attributesFile`,
    /// `include.path`, `includeIf.*.path`: files this check does not stat).
    pub(super) fn status_stands(
        &self,
        locked: &Locked,
        walk: &evidence::Inventory,
    ) -> Result<bool> {
        let magic = crate::os::atomic::fs_magic(&locked.wt).ok();
        let tree = plan::stat_times_trusted(magic, &locked.inventory.stats)
            && plan::tree_unchanged(&locked.inventory.stats, &walk.stats, locked.walk_started_ns);
        let files = plan::tree_unchanged(
            &locked.git_files,
            &self.git_files(locked),
            locked.walk_started_ns,
        );
        let filters = locked.rg.trusted().is_empty();
        if !(tree && files && filters) {
            tracing::debug!(
                tree,
                files,
                no_trusted_filter = filters,
                "gate 7: git status runs again"
            );
            return Ok(false);
        }
        let named = ops::config_names(
            &locked.rg,
            &locked.wt,
            r"^(core\.(excludesfile|attributesfile)|include\.path|includeif\..*\.path)$",
        )?;
        Ok(named.is_empty())
    }

    /// The tree's bytes by class ([`DiskUsage::classify`]) from the walk
    /// in `locked` and gate 5's status, with the admin directory walked too.
    /// `None` when gate 5 held before reading the status, except in an
    /// assessment, which then reads it (`git status`, as gate 5 would).
    pub(super) fn measure(&self, locked: &mut Locked) -> Result<Option<DiskUsage>> {
        if locked.status.is_none() && self.assess {
            locked.status = Some(ops::status(&locked.rg, &locked.wt)?);
        }
        let Some(status) = &locked.status else {
            return Ok(None);
        };
        let provisioned = match &locked.provisioned {
            Some(p) => p.clone(),
            None => locked
                .rec
                .provisioned
                .iter()
                .map(|p| {
                    (
                        p.path.as_bytes().to_vec(),
                        crate::ops::provision::unchanged(&locked.wt, p),
                    )
                })
                .collect(),
        };
        let admin = crate::os::walk::dir_bytes(&locked.admin).unwrap_or(0);
        Ok(Some(DiskUsage::classify(
            &locked.inventory.files,
            status,
            &provisioned,
            &self.rebuildable,
            admin,
        )))
    }

    /// `repo-config-executes` when a trusted driver runs git-lfs and the
    /// repository's config (or the worktree's) sets `lfs.extension.*`:
    /// git-lfs runs an extension's `clean` command inside its own clean
    /// filter (measured, git-lfs 3.3), a program the repository chose that
    /// lease's git config cannot switch off for git-lfs.
    pub(super) fn lfs_extensions(&self, rg: &RepoGit, wt: &Path) -> Result<Option<Hold>> {
        let runs_lfs = rg.trusted().iter().any(|t| {
            t.driver == "lfs"
                || [&t.clean, &t.process]
                    .iter()
                    .any(|c| c.as_deref().is_some_and(|c| c.contains("git-lfs")))
        });
        if !runs_lfs {
            return Ok(None);
        }
        let keys = ops::config_names(rg, wt, r"^lfs\.extension\.")?;
        let Some(first) = keys.first() else {
            return Ok(None);
        };
        let section = first
            .rsplit_once('.')
            .map_or(first.as_str(), |(s, _)| s)
            .to_string();
        Ok(Some(Hold::new(
            HoldReason::RepoConfigExecutes,
            format!(
                "the repository's config sets `{}`: git-lfs runs lfs.extension programs inside the trusted `lfs` filter, and lease cannot switch them off; remove them (`git config --remove-section {section}`) or drop `lfs` from trusted_filters",
                keys.join("`, `")
            ),
        )))
    }

    /// Gate 5's evidence: status with untracked and ignored files forced
    /// visible, hidden index edits, operations in progress. `status` is a
    /// status already read that still stands (gate 7, [`Engine::status_stands`]);
    /// `None` runs git's.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn probe_content(
        &self,
        rg: &RepoGit,
        wt: &Path,
        admin: &Path,
        listed: Option<Vec<u8>>,
        status: Option<Vec<evidence::StatusEntry>>,
        shadowed: &[evidence::TrustedFilter],
        provisioned: &[crate::model::record::Provisioned],
    ) -> Result<evidence::ContentEvidence> {
        let status = match status {
            Some(s) => s,
            None => ops::status(rg, wt)?,
        };
        let listed = match listed {
            Some(l) => l,
            None => ops::index_listing(rg, wt)?,
        };
        let mut hidden = Vec::new();
        for e in git::parse::parse_hidden(&listed) {
            if !self.hidden_entry_matches(rg, wt, &e)? {
                hidden.push(e);
            }
        }
        // Paths that differ only in the worktree may differ only because
        // lease neutralized their filter driver: ask which driver each
        // names (SPEC "Truthful content probes").
        let mut candidates: Vec<Vec<u8>> = status
            .iter()
            .filter(|e| &e.xy == b" M")
            .map(|e| e.path.clone())
            .collect();
        candidates.extend(hidden.iter().map(|e| e.path.clone()));
        let mut filtered = Vec::new();
        for (path, driver) in ops::filter_attrs(rg, wt, &candidates)? {
            let named = |t: &evidence::TrustedFilter| t.driver.as_bytes() == driver;
            let trust = if rg.trusted().iter().any(named) {
                evidence::FilterTrust::Ran
            } else if shadowed.iter().any(named) {
                evidence::FilterTrust::Shadowed
            } else if self
                .reg
                .root()
                .policy()
                .trusted_filters
                .value
                .iter()
                .any(|t| t.as_bytes() == driver)
            {
                evidence::FilterTrust::Undefined
            } else {
                evidence::FilterTrust::Untrusted
            };
            filtered.push(evidence::FilteredPath {
                path,
                driver,
                trust,
            });
        }
        // A hidden entry of a trusted driver is compared as git would
        // compare it: the file cleaned by that driver.
        let mut differs = Vec::new();
        for e in hidden {
            let ran = filtered
                .iter()
                .any(|f| f.path == e.path && f.trust == evidence::FilterTrust::Ran);
            if !(ran && self.hidden_entry_matches_filtered(rg, wt, &e)?) {
                differs.push(e.path);
            }
        }
        let ops = OPS
            .iter()
            .filter(|o| fs::symlink_metadata(admin.join(o)).is_ok())
            .map(|o| (*o).to_string())
            .collect();
        Ok(evidence::ContentEvidence {
            status,
            hidden: differs,
            ops,
            rebuildable: self.rebuildable.clone(),
            filtered,
            provisioned: provisioned
                .iter()
                .map(|p| {
                    (
                        p.path.as_bytes().to_vec(),
                        crate::ops::provision::unchanged(wt, p),
                    )
                })
                .collect(),
        })
    }

    /// Returns true if the regular file behind hidden entry `e` hashes to
    /// the index's blob once cleaned by its (trusted) filter driver
    /// (`hash-object --stdin --path`, which applies the path's attributes).
    pub(super) fn hidden_entry_matches_filtered(
        &self,
        rg: &RepoGit,
        wt: &Path,
        e: &git::parse::HiddenEntry,
    ) -> Result<bool> {
        let path = wt.join(std::ffi::OsStr::from_bytes(&e.path));
        let Ok(f) = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
        else {
            return Ok(false);
        };
        if !f.metadata().at(&path)?.file_type().is_file() {
            return Ok(false);
        }
        Ok(ops::hash_cleaned(rg, wt, f, &e.path)? == e.oid)
    }

    /// Returns true if the file behind a skip-worktree or assume-unchanged
    /// entry is absent (sparse checkout) or equal to the index: a regular file
    /// hashed as a blob from an `O_NOFOLLOW|O_NONBLOCK` descriptor, a symlink
    /// compared by its link text. Anything else does not match.
    pub(super) fn hidden_entry_matches(
        &self,
        rg: &RepoGit,
        wt: &Path,
        e: &git::parse::HiddenEntry,
    ) -> Result<bool> {
        let path = wt.join(std::ffi::OsStr::from_bytes(&e.path));
        let meta = match fs::symlink_metadata(&path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(true),
            Err(err) => return Err(err).at(&path),
            Ok(m) => m,
        };
        if meta.file_type().is_file() {
            let Ok(f) = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&path)
            else {
                return Ok(false);
            };
            let exec = meta.mode() & 0o111 != 0;
            if (e.mode == "100755") != exec {
                return Ok(false);
            }
            let oid = ops::hash_raw(rg, wt, f)?;
            Ok(oid == e.oid && e.mode.starts_with("100"))
        } else if meta.file_type().is_symlink() {
            let text = fs::read_link(&path).at(&path)?;
            let blob = ops::blob(rg, wt, &e.oid)?;
            Ok(e.mode == "120000" && blob == text.as_os_str().as_bytes())
        } else {
            Ok(false)
        }
    }
}
