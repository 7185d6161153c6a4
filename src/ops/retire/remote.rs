//! Archival refs on the trusted remote (`retire --archive remote|both`): push
//! the exact tips to `refs/lease/archive/<id>/...` by URL with the sanitized
//! git ([`crate::git::ops::push`]), then read them back with `git
//! ls-remote` ([`crate::git::ops::ls_remote`]); a commit on a read-back
//! archival ref is durable (SPEC "durable").
//!
//! # Choices
//! - By URL, never by remote name: `remote.<name>.pushurl`, `.push`
//!   refspecs, `.receivepack` and `remote.pushDefault` are not consulted.
//!   The URL is the remote's fetch URL (`git remote get-url`, with
//!   `url.*.insteadOf` applied), the one ls-remote and fetch read back from.
//!   A repository with any `url.*.pushInsteadOf` is refused: git would
//!   rewrite the push URL only, and the readback would prove nothing.
//! - An explicit `--receive-pack` (and `--upload-pack` for the readback):
//!   for a local-path or `file://` remote, whose far side git starts on
//!   this machine reading that repository's config, a sanitized git with
//!   hooks, `core.alternateRefsCommand` and auto gc off
//!   ([`crate::git::Git::far_side`]); for ssh, the server's own
//!   `git-receive-pack`.
//! - `push.*` neutralized: `--no-signed` and `push.gpgSign=false` (signing
//!   runs `gpg.program`), `push.pushOption=` (empty resets the list),
//!   `--no-follow-tags`, `--no-recurse-submodules` (it would push
//!   submodules' commits elsewhere), `push.negotiate=false`, `--no-verify`
//!   on top of `core.hooksPath=/dev/null` (no pre-push hook).
//! - `--atomic`, never `--force`: an archival ref that already holds
//!   another commit is a failed push, never overwritten.
//! - A server's own hooks (its pre-receive over ssh or https) are its
//!   policy and run on its side; a rejection holds the retire
//!   (`archive-push-failed`). A local remote's hooks never run.
//! - Transports: local paths, `file://`, `ssh` (the user's own `ssh` with
//!   `BatchMode=yes`, never a repository's `core.sshCommand`) and
//!   `http(s)` (`GIT_ALLOW_PROTOCOL`); credential helpers and prompts stay
//!   off, so a remote that needs credentials holds, and the detail says so
//!   and what to run ([`credentials_hint`]). `--archive bundle` (the
//!   default) needs no remote at all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Engine, Reach};
use crate::git::{RepoGit, ops};
use crate::model::reason::{Hold, HoldReason};
use crate::model::record::{Record, RemoteRefs};
use crate::plan;

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
        let url = crate::git::refs::remote_url(rg, &common, &remote)
            .map_err(|e| failed(e.to_string()))?;
        let refs = archival_refs(rec, reach);
        let out = ops::push(
            rg,
            &common,
            &url,
            &[],
            refs.iter().map(|(r, o)| format!("{o}:{r}")),
        )
        .map_err(|e| failed(e.to_string()))?;
        if !out.ok {
            return Err(failed(push_failure(&url, &rec.id, &out)));
        }
        crate::os::fault::point("archive-pushed");
        let listed = read_back(rg, &common, &url, &refs).map_err(|e| failed(e.to_string()))?;
        plan::check_readback(&refs, &listed)?;
        Ok(RemoteRefs {
            remote,
            url,
            refs,
            read_back_at: crate::model::fmt::now(),
        })
    }
}

impl Engine {
    /// A dry run's check of [`Engine::push_archive`]: the same push with
    /// `--dry-run`, which reaches the remote (and asks it for the
    /// credentials a push needs) but sends nothing. A dry run must not
    /// promise a removal the real push would refuse.
    pub(super) fn check_push(&self, rg: &RepoGit, rec: &Record, reach: &Reach) -> Result<(), Hold> {
        let common = PathBuf::from(&rec.repo);
        let failed = |d: String| Hold::new(HoldReason::ArchivePushFailed, d);
        let Some(remote) = reach.remote.clone() else {
            return Err(failed(
                "no trusted remote (origin, else the branch's upstream remote)".into(),
            ));
        };
        let url = crate::git::refs::remote_url(rg, &common, &remote)
            .map_err(|e| failed(e.to_string()))?;
        let refs = archival_refs(rec, reach);
        let out = ops::push(
            rg,
            &common,
            &url,
            &["--dry-run".to_string()],
            refs.iter().map(|(r, o)| format!("{o}:{r}")),
        )
        .map_err(|e| failed(e.to_string()))?;
        if !out.ok {
            return Err(failed(push_failure(&url, &rec.id, &out)));
        }
        Ok(())
    }
}

/// The archival ref of each tip in `reach`, with its commit.
fn archival_refs(rec: &Record, reach: &Reach) -> BTreeMap<String, String> {
    reach
        .tips
        .iter()
        .map(|(name, oid)| (archival_ref(&rec.id, name), oid.clone()))
        .collect()
}

/// The detail of a failed push to `url`: git's error, and when the remote
/// asked for credentials, what lease does not do and what to run instead.
pub(crate) fn push_failure(url: &str, id: &str, out: &crate::git::Output) -> String {
    let mut d = format!("git push to `{url}` failed: {}", out.error());
    if let Some(hint) = credentials_hint(url, id, &out.stderr) {
        d.push_str("; ");
        d.push_str(&hint);
    }
    d
}

/// Returns what to say when git's `stderr` shows that `url` needs
/// credentials lease will not supply: no credential helper, no prompt
/// (`GIT_TERMINAL_PROMPT=0`), ssh in `BatchMode`. `None` otherwise.
pub(crate) fn credentials_hint(url: &str, id: &str, stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    let asked = [
        "could not read Username",
        "could not read Password",
        "unable to get password",
        "terminal prompts disabled",
        "Authentication failed",
        "Permission denied (publickey",
        "Host key verification failed",
        "HTTP 401",
        "HTTP 403",
    ]
    .iter()
    .any(|m| text.contains(m));
    if !asked {
        return None;
    }
    let short = &id[..8.min(id.len())];
    Some(match crate::git::transport_of(url) {
        crate::git::Transport::Ssh => format!(
            "the remote needs ssh credentials lease cannot use: it runs your ssh with BatchMode=yes (no password or passphrase prompt, no unknown host key); load your key into the agent (`ssh-add`) and accept the host key once (`ssh -T {}`), then retry, or archive into a bundle (`lease retire --archive bundle {short}`)",
            ssh_host(url)
        ),
        _ => format!(
            "the remote needs credentials, and lease runs no credential helper and never prompts; archive into a bundle instead (`lease retire --archive bundle {short}`), or push the commits yourself (`git push {url} HEAD`) and retire again"
        ),
    })
}

/// The `[user@]host` part of an ssh URL, for a hint.
fn ssh_host(url: &str) -> String {
    let rest = url
        .split_once("://")
        .map_or(url, |(_, r)| r)
        .split(['/', ':'])
        .next()
        .unwrap_or(url);
    rest.to_string()
}

/// Reads the archival refs in `refs` back from `url`: `(oid, ref)` pairs.
pub(crate) fn read_back(
    rg: &RepoGit,
    common: &Path,
    url: &str,
    refs: &BTreeMap<String, String>,
) -> crate::error::Result<Vec<(String, String)>> {
    let names: Vec<&str> = refs.keys().map(String::as_str).collect();
    ops::ls_remote(rg, common, url, &names)
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_push_that_needs_credentials_says_so_and_what_to_run() {
        let http = credentials_hint(
            "https://h/r.git",
            "ab12cd34ef",
            b"fatal: could not read Username for 'https://h': terminal prompts disabled",
        )
        .unwrap();
        assert!(
            http.contains("no credential helper")
                && http.contains("lease retire --archive bundle ab12cd34"),
            "{http}"
        );
        let ssh = credentials_hint(
            "git@h:r.git",
            "ab12cd34ef",
            b"git@h: Permission denied (publickey).",
        )
        .unwrap();
        assert!(
            ssh.contains("BatchMode=yes") && ssh.contains("ssh -T git@h"),
            "{ssh}"
        );
        assert_eq!(ssh_host("ssh://u@h:22/r"), "u@h");
        assert_eq!(
            credentials_hint("/srv/r", "x", b"fatal: not a git repository"),
            None
        );
    }

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
