//! Archival refs on the trusted remote (`retire --archive remote|both`): push
//! the exact tips to `refs/lease/archive/<id>/...` by URL with the sanitized
//! git, then read them back with `git ls-remote`; a commit on a read-back
//! archival ref is durable (SPEC "durable").
//!
//! # Choices
//! - By URL, never by remote name: `remote.<name>.pushurl`, `.push`
//!   refspecs, `.receivepack` and `remote.pushDefault` are not consulted.
//!   The URL is the remote's fetch URL (`git remote get-url`, with
//!   `url.*.insteadOf` applied), the one ls-remote and fetch read back from.
//!   A repository with any `url.*.pushInsteadOf` is refused: git would
//!   rewrite the push URL only, and the readback would prove nothing.
//! - `--receive-pack=git-receive-pack`, like `--upload-pack` for fetch.
//! - `push.*` neutralized: `--no-signed` and `push.gpgSign=false` (signing
//!   runs `gpg.program`), `push.pushOption=` (empty resets the list),
//!   `--no-follow-tags`, `--no-recurse-submodules` (it would push
//!   submodules' commits elsewhere), `push.negotiate=false`, `--no-verify`
//!   on top of `core.hooksPath=/dev/null` (no pre-push hook).
//! - `--atomic`, never `--force`: an archival ref that already holds
//!   another commit is a failed push, never overwritten.
//! - The remote's own hooks (its pre-receive, say) are its policy and run on
//!   its side; a rejection holds the retire (`archive-push-failed`).
//! - The sanitized git allows only the file transport
//!   (`protocol.allow=never`, `core.sshCommand=false`, no credential
//!   helper), so a remote reached over ssh or https fails the push and
//!   holds; `--archive bundle` (the default) needs no remote at all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Engine, Reach};
use crate::git::RepoGit;
use crate::plan::{self, Hold, HoldReason};
use crate::registry::{Record, RemoteRefs};

impl Engine {
    /// Pushes every tip in `reach` to its archival ref on the trusted remote
    /// and reads them back; any failure is `archive-push-failed`.
    pub(super) fn push_archive(
        &self,
        rg: &RepoGit,
        rec: &Record,
        reach: &Reach,
    ) -> Result<RemoteRefs, Hold> {
        let common = PathBuf::from(&rec.repo);
        let failed = |d: String| Hold::new(HoldReason::ArchivePushFailed, d);
        let Some(remote) = reach.remote.clone() else {
            return Err(failed(
                "no trusted remote (origin, else the branch's upstream remote)".into(),
            ));
        };
        let url = rg
            .remote_url(&common, &remote)
            .map_err(|e| failed(e.to_string()))?;
        let refs: BTreeMap<String, String> = reach
            .tips
            .iter()
            .map(|(name, oid)| (archival_ref(&rec.id, name), oid.clone()))
            .collect();
        let out = push(
            rg,
            &common,
            &url,
            &[],
            refs.iter().map(|(r, o)| format!("{o}:{r}")),
        )
        .map_err(|e| failed(e.to_string()))?;
        if !out.ok {
            return Err(failed(format!(
                "git push to `{url}` failed: {}",
                out.error()
            )));
        }
        crate::fault::point("archive-pushed");
        let listed = read_back(rg, &common, &url, &refs).map_err(|e| failed(e.to_string()))?;
        plan::check_readback(&refs, &listed)?;
        Ok(RemoteRefs {
            remote,
            url,
            refs,
            read_back_at: crate::registry::now(),
        })
    }
}

/// Runs the sanitized `git push` by URL with `refspecs` (see the module
/// docs); `opts` go before the URL (`--force-with-lease=<ref>:<oid>`).
pub(crate) fn push(
    rg: &RepoGit,
    common: &Path,
    url: &str,
    opts: &[String],
    refspecs: impl IntoIterator<Item = String>,
) -> crate::error::Result<crate::git::Output> {
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
        "--receive-pack=git-receive-pack",
    ])
    .args(opts)
    .arg("--")
    .arg(url)
    .args(refspecs);
    c.output()
}

/// Reads the archival refs in `refs` back from `url`: `(oid, ref)` pairs.
pub(crate) fn read_back(
    rg: &RepoGit,
    common: &Path,
    url: &str,
    refs: &BTreeMap<String, String>,
) -> crate::error::Result<Vec<(String, String)>> {
    let names: Vec<&str> = refs.keys().map(String::as_str).collect();
    rg.ls_remote(common, url, &names)
}

/// The archival ref on the remote for the tip lease names `name` in its
/// scratch repository: `refs/lease/<id>/head` -> `refs/lease/archive/<id>/head`.
pub(crate) fn archival_ref(id: &str, name: &str) -> String {
    let rest = name
        .strip_prefix(&format!("refs/lease/{id}/"))
        .unwrap_or(name);
    format!("refs/lease/archive/{id}/{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archival_ref_names() {
        assert_eq!(
            archival_ref("ab12", "refs/lease/ab12/head"),
            "refs/lease/archive/ab12/head"
        );
        assert_eq!(
            archival_ref("ab12", "refs/lease/ab12/reflog/3"),
            "refs/lease/archive/ab12/reflog/3"
        );
    }
}
