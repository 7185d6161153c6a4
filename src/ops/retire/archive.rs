//! Gate 6's archive: the bundle built in a scratch repository that borrows
//! the source's objects, verified for real in a second one, and the checks
//! that bind later gates to the verified bytes.

use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Engine, Locked, Reach};
use crate::error::{IoResultExt, Result};
use crate::git::{RepoGit, ops};
use crate::model::evidence;
use crate::model::reason::{Hold, HoldReason};
use crate::model::record::{Archive, Record};

impl Engine {
    /// Gate 6's archive in the engine's mode: archival refs pushed and read
    /// back first (a rejected push leaves no bundle behind), then the
    /// bundle; the result goes into the record and the audit log.
    pub(super) fn archive_all(
        &self,
        locked: &mut Locked,
        reach: &Reach,
    ) -> Result<Result<Archive, Hold>> {
        let remote = if self.archive_mode.remote() {
            match self.push_archive(&locked.rg, &locked.rec, reach) {
                Ok(r) => Some(r),
                Err(h) => return Ok(Err(h)),
            }
        } else {
            None
        };
        let mut a = if self.archive_mode.bundle() {
            if let Err(h) = archive_outside(self.reg.root(), &locked.inventory) {
                return Ok(Err(h));
            }
            match self.archive(&locked.rg, &locked.rec, reach) {
                Ok((a, file)) => {
                    locked.bundle = Some(file);
                    a
                }
                Err(h) => return Ok(Err(h)),
            }
        } else {
            Archive {
                kind: "remote".into(),
                location: remote.as_ref().map(|r| r.url.clone()).unwrap_or_default(),
                sha256: String::new(),
                tip: reach.head.clone(),
                commits: reach.unique.len() as u64,
                refs: reach.tips.iter().cloned().collect(),
                prerequisites: Vec::new(),
                verified_at: crate::model::fmt::now(),
                receipts: Vec::new(),
                remote: None,
            }
        };
        if let Some(r) = remote {
            if a.kind == "bundle" {
                a.kind = "both".into();
            }
            a.remote = Some(r);
        }
        let id = locked.rec.id.clone();
        let mut detail = vec![a.kind.clone(), a.location.clone()];
        if a.has_bundle() {
            detail.push(a.sha256.clone());
        }
        if let Some(r) = &a.remote {
            detail.extend(r.refs.iter().map(|(name, oid)| format!("{name} {oid}")));
        }
        let a2 = a.clone();
        // The line goes through the record, so a crash right after the
        // write cannot lose it (the next change or reap recovers it).
        self.reg.update(&id, |r| {
            r.audit("archived", vec![], detail);
            r.archive = Some(a2);
            Ok(())
        })?;
        locked.rec = self.reg.get(&id)?;
        Ok(Ok(a))
    }

    /// Builds the bundle in a scratch bare repository that borrows the
    /// source's objects, then verifies it in a second one (SPEC gate 6).
    pub(super) fn archive(
        &self,
        rg: &RepoGit,
        rec: &Record,
        reach: &Reach,
    ) -> Result<(Archive, fs::File), Hold> {
        let unarchived = |what: &str, e: &dyn std::fmt::Display| {
            Hold::new(HoldReason::UniqueCommitsUnarchived, format!("{what}: {e}"))
        };
        let repo = PathBuf::from(&rec.repo);
        let root = self.reg.root();
        let fmt = ops::object_format(rg, &repo)
            .map_err(|e| unarchived("cannot read the object format", &e))?;
        let dir = root.archives().join(&rec.id);
        crate::os::atomic::make_private_dir(&dir).map_err(|e| unarchived("cannot create", &e))?;
        let n = next_bundle_number(&dir);
        let bundle = dir.join(format!("{n}.bundle"));
        let tmp = dir.join(format!(".{n}.bundle.tmp"));
        let scratch = Scratch::new(root, &rec.id, "build", &fmt, &repo, rg)
            .map_err(|e| unarchived("cannot make a scratch repository", &e))?;
        let step = crate::progress::begin("archiving", None);
        step.message(&format!("{} tip(s) of {}", reach.tips.len(), rec.id));
        let built = (|| -> Result<()> {
            ops::update_refs(rg, &scratch.path, &reach.tips)?;
            let names: Vec<&str> = reach.tips.iter().map(|(n, _)| n.as_str()).collect();
            let not = reach.durable.as_ref().map(|(_, d)| d.as_str());
            ops::bundle_create(rg, &scratch.path, &tmp, &names, not)?;
            crate::os::fault::point("archive-bundle-created");
            let f = fs::File::open(&tmp).at(&tmp)?;
            crate::os::atomic::fsync(&f, &tmp, "the bundle's content")
                .at_do("cannot fsync", &tmp)?;
            crate::os::fs::rename_no_replace(&tmp, &bundle).at_do("cannot rename into", &bundle)?;
            crate::os::atomic::sync_dir(&dir, &format!("the bundle's name `{}`", bundle.display()))
        })();
        drop(scratch);
        drop(step);
        if let Err(e) = built {
            let _ = fs::remove_file(&tmp);
            return Err(unarchived("cannot create the bundle", &e));
        }
        crate::os::fault::point("archive-written");
        // Hash, parse and verify through one descriptor; a bundle that fails
        // any step is removed, never kept half-trusted.
        let checked = (|| {
            let mut file = crate::os::fs::open_regular(&bundle)
                .map_err(|e| unarchived("cannot reopen the bundle", &e))?;
            let sha256 =
                fd_sha256(&mut file).map_err(|e| unarchived("cannot hash the bundle", &e))?;
            let header = read_header(&mut file).ok_or_else(|| {
                Hold::new(
                    HoldReason::ArchiveUnverified,
                    format!("`{}` has no bundle header", bundle.display()),
                )
            })?;
            self.verify(rg, rec, &repo, &fmt, &bundle, &header, reach)?;
            Ok((file, sha256, header))
        })();
        let (file, sha256, header) = match checked {
            Ok(x) => x,
            Err(h) => {
                let _ = fs::remove_file(&bundle);
                return Err(h);
            }
        };
        let archive = Archive {
            kind: "bundle".into(),
            location: crate::store::root::utf8(&bundle).map_err(|e| unarchived("bad path", &e))?,
            sha256,
            tip: reach.head.clone(),
            commits: reach.unique.len() as u64,
            refs: reach.tips.iter().cloned().collect(),
            prerequisites: header.prerequisites,
            verified_at: crate::model::fmt::now(),
            receipts: Vec::new(),
            remote: None,
        };
        Ok((archive, file))
    }

    /// Verifies a bundle for real: its header names exactly the expected
    /// tips; `git bundle unbundle` with fsck into a fresh scratch repository
    /// borrowing the source's objects succeeds; with the alternates removed
    /// every tip exists there; with them restored the tips are complete down
    /// to the prerequisites. `git bundle verify` alone passes truncated and
    /// bit-flipped bundles (git 2.47; tests/it/adversarial.rs
    /// `c13_tampered_bundle_before_verification`).
    #[allow(clippy::too_many_arguments)]
    fn verify(
        &self,
        rg: &RepoGit,
        rec: &Record,
        repo: &Path,
        fmt: &str,
        bundle: &Path,
        header: &BundleHeader,
        reach: &Reach,
    ) -> Result<(), Hold> {
        let unverified = |what: &str| {
            Hold::new(
                HoldReason::ArchiveUnverified,
                format!("`{}`: {what}", bundle.display()),
            )
        };
        let mut want: Vec<(String, String)> = reach
            .tips
            .iter()
            .map(|(n, o)| (o.clone(), n.clone()))
            .collect();
        let mut got = header.refs.clone();
        want.sort();
        got.sort();
        if want != got {
            return Err(unverified("its refs differ from the commits archived"));
        }
        verify_bundle(
            rg,
            self.reg.root(),
            &rec.id,
            repo,
            fmt,
            bundle,
            header,
            &reach.tips,
        )
    }
}

/// The second half of [`Engine::verify`], shared with `lease restore`:
/// `git bundle unbundle` with fsck into a fresh scratch repository borrowing
/// the source's objects; with the alternates removed every tip exists there;
/// with them restored the tips are complete down to the prerequisites.
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_bundle(
    rg: &RepoGit,
    root: &crate::store::root::StateRoot,
    id: &str,
    repo: &Path,
    fmt: &str,
    bundle: &Path,
    header: &BundleHeader,
    tips: &[(String, String)],
) -> Result<(), Hold> {
    let unverified = |what: &str| {
        Hold::new(
            HoldReason::ArchiveUnverified,
            format!("`{}`: {what}", bundle.display()),
        )
    };
    let step = crate::progress::begin("verifying", None);
    step.message(&bundle.display().to_string());
    let scratch = Scratch::new(root, id, "verify", fmt, repo, rg)
        .map_err(|e| unverified(&format!("cannot make a scratch repository: {e}")))?;
    if let Err(e) = ops::bundle_unbundle(rg, &scratch.path, bundle) {
        return Err(unverified(&format!("unbundle failed: {e}")));
    }
    let alt = scratch.path.join("objects/info/alternates");
    let away = scratch.path.join("objects/info/alternates.off");
    fs::rename(&alt, &away).map_err(|e| unverified(&e.to_string()))?;
    // Every tip at once (`cat-file --batch-check`); an error is "none".
    let oids: Vec<String> = tips.iter().map(|(_, oid)| oid.clone()).collect();
    let present = ops::commits_present(rg, &scratch.path, &oids).unwrap_or_default();
    if let Some(oid) = oids.iter().find(|oid| !present.contains(oid)) {
        return Err(unverified(&format!(
            "commit {oid} is not in the bundle's pack"
        )));
    }
    fs::rename(&away, &alt).map_err(|e| unverified(&e.to_string()))?;
    ops::check_connected(rg, &scratch.path, &oids, &header.prerequisites)
        .map_err(|e| unverified(&format!("incomplete: {e}")))?;
    Ok(())
}

/// A temporary bare repository under `<state root>/scratch` that borrows the
/// source's objects through `objects/info/alternates`; removed on drop.
struct Scratch {
    path: PathBuf,
    root: crate::store::root::StateRoot,
}

impl Scratch {
    fn new(
        root: &crate::store::root::StateRoot,
        id: &str,
        what: &str,
        fmt: &str,
        repo: &Path,
        rg: &RepoGit,
    ) -> Result<Scratch> {
        let path = root
            .scratch()
            .join(format!("{id}-{what}-{}", std::process::id()));
        if path.exists() {
            crate::store::root::remove_scratch(root, &path)?;
        }
        crate::os::atomic::make_private_dir(&path)?;
        ops::init_bare(rg, &root.scratch(), &path, fmt)?;
        let objects = repo.join("objects");
        let mut line = objects.as_os_str().as_bytes().to_vec();
        line.push(b'\n');
        let alt = path.join("objects/info");
        fs::create_dir_all(&alt).at_do("cannot create", &alt)?;
        fs::write(alt.join("alternates"), line).at_do("cannot write", &alt)?;
        Ok(Scratch {
            path,
            root: root.clone(),
        })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = crate::store::root::remove_scratch(&self.root, &self.path);
    }
}

/// A bundle's header: prerequisites (`-<oid>`) and refs (`<oid> <ref>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BundleHeader {
    pub(crate) prerequisites: Vec<String>,
    /// (oid, ref name)
    pub(crate) refs: Vec<(String, String)>,
}

/// Reads the header of the bundle open as `f` (from its start).
pub(crate) fn read_header(f: &mut fs::File) -> Option<BundleHeader> {
    use std::io::{Seek, SeekFrom};
    f.seek(SeekFrom::Start(0)).ok()?;
    let mut head = Vec::new();
    f.take(1 << 20).read_to_end(&mut head).ok()?;
    parse_bundle_header(&head)
}

/// The number of the next bundle in a record's archive directory `dir`: one
/// more than the largest `<n>.bundle` there, 1 for none (or an unreadable
/// directory: the rename then refuses to replace anything). Counting the
/// entries instead would reuse a number once an older bundle of several is
/// gone.
fn next_bundle_number(dir: &Path) -> u64 {
    let largest = fs::read_dir(dir).map_or(0, |d| {
        d.flatten()
            .filter_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_suffix(".bundle")?
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .unwrap_or(0)
    });
    // Saturating: a planted `18446744073709551615.bundle` must not wrap
    // to 0 or panic; the no-replace rename refuses what follows.
    largest.saturating_add(1)
}

/// Parses the text header of a v2 or v3 bundle (gitformat-bundle(5)).
fn parse_bundle_header(bytes: &[u8]) -> Option<BundleHeader> {
    let mut lines = bytes.split(|&b| b == b'\n');
    let sig = lines.next()?;
    if sig != b"# v2 git bundle" && sig != b"# v3 git bundle" {
        return None;
    }
    let mut h = BundleHeader {
        prerequisites: Vec::new(),
        refs: Vec::new(),
    };
    for l in lines {
        if l.is_empty() {
            return Some(h);
        }
        let l = std::str::from_utf8(l).ok()?;
        if l.starts_with('@') {
            continue; // v3 capability
        }
        if let Some(p) = l.strip_prefix('-') {
            h.prerequisites.push(p.split(' ').next()?.to_string());
        } else {
            let (oid, r) = l.split_once(' ')?;
            h.refs.push((oid.to_string(), r.to_string()));
        }
    }
    None
}

/// Hashes a file from the start through an open descriptor (sha256, hex).
pub(crate) fn fd_sha256(f: &mut fs::File) -> std::io::Result<String> {
    use sha2::Digest;
    use std::io::{Seek, SeekFrom};
    f.seek(SeekFrom::Start(0))?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(crate::model::fmt::hex(&h.finalize()))
}

/// Returns a hold if the bundle changed since it was verified: its bytes,
/// re-read through the descriptor kept open since verification, must hash to
/// the recorded sha256, and its name must still be that file (same inode).
pub(super) fn bundle_changed(a: &Archive, file: Option<&fs::File>) -> Option<Hold> {
    let changed = |what: &str| {
        Some(Hold::new(
            HoldReason::ArchiveUnverified,
            format!("`{}` {what} after verification", a.location),
        ))
    };
    let Some(file) = file else {
        return changed("is not open");
    };
    let Ok(mut f) = file.try_clone() else {
        return changed("cannot be re-read");
    };
    if fd_sha256(&mut f).ok().as_deref() != Some(a.sha256.as_str()) {
        return changed("changed");
    }
    let by_fd = crate::os::fs::fstat(file).map(|s| (s.dev, s.ino));
    let by_name = crate::os::fs::lstat(Path::new(&a.location)).map(|s| (s.dev, s.ino));
    if by_fd.is_none() || by_fd != by_name {
        return changed("was replaced");
    }
    None
}

/// Returns a hold if the archive directory lies inside the worktree, compared
/// by `(dev, ino)` ancestry against every directory the walk saw (a string
/// prefix would miss a bind mount or a symlinked ancestor).
pub(super) fn archive_outside(
    root: &crate::store::root::StateRoot,
    inv: &evidence::Inventory,
) -> Result<(), Hold> {
    let dir = root.archives();
    for a in dir.ancestors() {
        if let Some(s) = crate::os::fs::stat(a)
            && inv.dirs.contains(&(s.dev, s.ino))
        {
            return Err(Hold::new(
                HoldReason::ArchiveInsideTree,
                format!(
                    "archive directory `{}` lies inside the worktree",
                    dir.display()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_next_bundle_number_follows_the_largest_never_the_count() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(next_bundle_number(t.path()), 1);
        assert_eq!(next_bundle_number(&t.path().join("none")), 1);
        for name in ["3.bundle", "1.bundle", ".4.bundle.tmp", "x.bundle", "7"] {
            fs::write(t.path().join(name), b"").unwrap();
        }
        assert_eq!(next_bundle_number(t.path()), 4);
    }

    #[test]
    fn bundle_header() {
        let b = b"# v2 git bundle\n-aaa msg\nbbb refs/lease/x/head\n\nPACK...";
        let h = parse_bundle_header(b).unwrap();
        assert_eq!(h.prerequisites, vec!["aaa"]);
        assert_eq!(
            h.refs,
            vec![("bbb".to_string(), "refs/lease/x/head".to_string())]
        );
        assert!(
            parse_bundle_header(b"# v2 git bundle\nbbb r").is_none(),
            "truncated header"
        );
        assert!(parse_bundle_header(b"PACK").is_none());
        // v3 (gitformat-bundle(5)): capabilities start with `@`.
        let v3 = b"# v3 git bundle\n@object-format=sha1\nbbb refs/lease/x/head\n\nPACK";
        assert_eq!(parse_bundle_header(v3).unwrap().refs.len(), 1);
        assert!(
            parse_bundle_header(b"# v4 git bundle\nbbb refs/lease/x/head\n\nPACK").is_none(),
            "an unknown version is not read as one we know"
        );
    }
}
