//! Snapshots of what people and scripts see: exit code, stdout and stderr
//! of commands on a done, a held and a failed case, human and `--json`.
//!
//! A small hand-rolled helper rather than the `insta` crate: the filters
//! needed here (the sandbox path, ids, oids, times, pids, sizes) are a few
//! lines, the expected text stays inline next to the command, and the
//! suite gains no dependency tree (insta pulls in console, similar and
//! more for a review tool the team does not use). A mismatch prints the
//! actual snapshot, ready to paste.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Output;

use crate::support::*;

/// Replaces what changes from run to run: the sandbox root, hex runs of
/// 32 (ids), 40 (oids) and 64 (sha256) digits, 8-digit prefixes of the
/// given ids, RFC 3339 times, `pid N`, git's path and version, sizes.
pub(crate) fn normalize(text: &str, root: &Path, ids: &[&str]) -> String {
    let mut t = text.replace(root.to_str().unwrap(), "[ROOT]");
    let git = which("git");
    t = t.replace(git.to_str().unwrap(), "[GIT]");
    for id in ids {
        t = t.replace(id, "[ID]");
        t = t.replace(&id[..8], "[ID8]");
    }
    // The worktree root's `<repo>-<8 hex of the common dir's sha256>`.
    let mut from = 0;
    while let Some(i) = t[from..].find("/repo-").map(|i| i + from) {
        from = i + 6;
        let hex = &t[from..];
        if hex.len() >= 8 && hex[..8].bytes().all(|b| b.is_ascii_hexdigit()) {
            t.replace_range(from..from + 8, "[HASH]");
        }
    }
    let mut out = String::new();
    let chars: Vec<char> = t.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let boundary = i == 0 || !chars[i - 1].is_ascii_alphanumeric();
        // Hex runs.
        if boundary && c.is_ascii_hexdigit() {
            let mut j = i;
            while j < chars.len() && chars[j].is_ascii_hexdigit() {
                j += 1;
            }
            let end = j == chars.len() || !chars[j].is_ascii_alphanumeric();
            let run = j - i;
            if end
                && matches!(run, 32 | 40 | 64)
                && chars[i..j].iter().any(|c| c.is_ascii_alphabetic())
            {
                out.push_str(match run {
                    32 => "[ID]",
                    40 => "[OID]",
                    _ => "[SHA]",
                });
                i = j;
                continue;
            }
        }
        // RFC 3339 UTC times: 2026-12-02T01:02:03Z.
        if boundary && i + 20 <= chars.len() {
            let s: String = chars[i..i + 20].iter().collect();
            let shape = s.bytes().enumerate().all(|(k, b)| match k {
                4 | 7 => b == b'-',
                10 => b == b'T',
                13 | 16 => b == b':',
                19 => b == b'Z',
                _ => b.is_ascii_digit(),
            });
            if shape {
                out.push_str("[TIME]");
                i += 20;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    // The default owner names the user the tests run as (root in CI,
    // an ordinary user in its second run).
    let mut from = 0;
    while let Some(i) = out[from..].find("manual:").map(|i| i + from) {
        from = i + 7;
        let end = out[from..]
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | '`' | '"'))
            .map_or(out.len(), |e| e + from);
        out.replace_range(from..end, "[USER]");
    }
    // `pid N`, git's version, sizes and free space.
    let mut t = String::new();
    for line in out.lines() {
        let mut words: Vec<String> = Vec::new();
        let mut prev = "";
        for w in line.split(' ') {
            let digits = !w.is_empty()
                && w.trim_end_matches([',', ')'])
                    .bytes()
                    .all(|b| b.is_ascii_digit());
            let size = w.len() > 1
                && w[..w.len() - 1]
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b == b'.')
                && w.ends_with(['B', 'K', 'M', 'G', 'T']);
            let word = if (prev == "pid" && digits) || size {
                if size {
                    "[SIZE]".to_string()
                } else {
                    "[PID]".to_string()
                }
            } else if prev == "version" && w.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                let tail = w.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
                format!("[VERSION]{tail}")
            } else {
                w.to_string()
            };
            words.push(word);
            prev = w;
        }
        t.push_str(&words.join(" "));
        t.push('\n');
    }
    t
}

/// The snapshot of one run: exit code, stdout, stderr.
pub(crate) fn snapshot(o: &Output, root: &Path, ids: &[&str]) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        o.status.code().map_or("signal".into(), |c| c.to_string()),
        normalize(&stdout(o), root, ids),
        normalize(&stderr(o), root, ids)
    )
}

/// Asserts a snapshot, printing the actual one on mismatch.
#[track_caller]
pub(crate) fn assert_snapshot(actual: &str, expected: &str) {
    let expected = expected.strip_prefix('\n').unwrap_or(expected);
    assert!(
        actual == expected,
        "snapshot differs; actual:\n{actual}\n--- end of actual; expected:\n{expected}"
    );
}

/// A kept worktree with an untracked file (held), and the same after the
/// file is gone (done); a failed case: an unsafe state root.
#[test]
fn retire_human_and_json_on_held_done_and_failed() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = env.kept(&repo, "feat", "echo x > notes.txt");
    let ids = [id.as_str()];
    let run = |args: &[&str]| env.lease().args(args).output().unwrap();
    assert_snapshot(
        &snapshot(&run(&["retire", &id]), &env.root, &ids),
        r"
exit: 1
--- stdout
held `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]): untracked
  untracked: notes.txt
  hint: commit, move or delete the listed files, then retry
  next: git -C [ROOT]/state/worktrees/repo-[HASH]/[ID] status --short --untracked-files=all --ignored
--- stderr
",
    );
    assert_snapshot(
        &snapshot(&run(&["retire", &id, "--json"]), &env.root, &ids),
        r#"
exit: 1
--- stdout
{
  "dry_run": false,
  "git": {
    "path": "[GIT]",
    "version": "git version [VERSION]"
  },
  "targets": [
    {
      "id": "[ID]",
      "worktree": "[ROOT]/state/worktrees/repo-[HASH]/[ID]",
      "disposition": "held",
      "reasons": [
        "untracked"
      ],
      "detail": [
        "untracked: notes.txt"
      ],
      "next": "git -C [ROOT]/state/worktrees/repo-[HASH]/[ID] status --short --untracked-files=all --ignored",
      "unique_commits": 0,
      "archive": null,
      "tombstone": null,
      "error": null
    }
  ]
}
--- stderr
"#,
    );
    std::fs::remove_file(wt.join("notes.txt")).unwrap();
    assert_snapshot(
        &snapshot(&run(&["retire", "--dry-run", &id]), &env.root, &ids),
        r"
exit: 0
--- stdout
would remove `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]): every commit is durable; would remove
--- stderr
",
    );
    assert_snapshot(
        &snapshot(&run(&["retire", &id]), &env.root, &ids),
        r"
exit: 0
--- stdout
removed `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]); reclaimed [SIZE]
--- stderr
",
    );
    assert_snapshot(
        &snapshot(&run(&["retire", "nowhere", "--json"]), &env.root, &ids),
        r#"
exit: 2
--- stdout
{
  "error": {
    "kind": "usage",
    "message": "`nowhere` is neither a record id nor an existing path",
    "next": null,
    "path": null,
    "reason": null
  },
  "exit": 2
}
--- stderr
error: `nowhere` is neither a record id nor an existing path
"#,
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&env.state, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_snapshot(
        &snapshot(&run(&["retire", &id]), &env.root, &ids),
        r"
exit: 3
--- stdout
--- stderr
error: unsafe directory `[ROOT]/state`: mode 755 lets others in; want 0700 [lease-dir-unsafe]
hint: make the state root a 0700 directory owned by you, not a symlink
next: chmod 0700 [ROOT]/state
",
    );
    std::fs::set_permissions(&env.state, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// `list`, `show`, `hold` and `release` in human form.
#[test]
fn list_show_hold_release_human() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _wt) = env.kept(&repo, "feat", "true");
    let ids = [id.as_str()];
    let run = |args: &[&str]| env.lease().args(args).output().unwrap();
    // Columns are padded to the widest value: compare words, not spaces
    // (the user's name has any length).
    let list = snapshot(&run(&["list"]), &env.root, &ids)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") + "\n")
        .collect::<String>();
    // The age column counts seconds: filter it too.
    let list = list.replace(
        &list
            .lines()
            .nth(3)
            .and_then(|l| l.split_whitespace().nth(4))
            .map(|a| format!(" {a} "))
            .unwrap_or_default(),
        " [AGE] ",
    );
    assert_snapshot(
        &list,
        r"
exit: 0
--- stdout
ID STATE REPO BRANCH AGE SIZE HOLDERS OWNER WORKTREE
[ID8] terminal repo feat [AGE] - 0 manual:[USER] [ROOT]/state/worktrees/repo-[HASH]/[ID]
--- stderr
",
    );
    assert_snapshot(
        &snapshot(&run(&["hold", &id, "--reason", "review"]), &env.root, &ids),
        r"
exit: 0
--- stdout
held `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]) for manual:[USER] (review): terminal -> retained
--- stderr
",
    );
    assert_snapshot(
        &snapshot(&run(&["release", &id[..8]]), &env.root, &ids),
        r"
exit: 0
--- stdout
released `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]): retained -> terminal
--- stderr
",
    );
    assert_snapshot(
        &snapshot(&run(&["release", "deadbeef00"]), &env.root, &ids),
        r"
exit: 2
--- stdout
--- stderr
error: no record matches `deadbeef00`
",
    );
}

/// Sorts the report's blocks (a line and the indented lines under it)
/// between the first line and the first line that starts with one of
/// `tail`: reap lists records in id order, and ids are random.
pub(crate) fn sort_blocks(snap: &str, tail: &[&str]) -> String {
    let (head, rest) = snap.split_once("--- stdout\n").unwrap();
    let (out, err) = rest.split_once("--- stderr\n").unwrap();
    let mut lines = out.lines();
    let first = lines.next().unwrap_or_default();
    let mut blocks: Vec<String> = Vec::new();
    let mut after = String::new();
    for l in lines {
        if !after.is_empty() || tail.iter().any(|t| l.starts_with(t)) {
            after.push_str(l);
            after.push('\n');
        } else if l.starts_with(' ') && !blocks.is_empty() {
            let b = blocks.last_mut().unwrap();
            b.push_str(l);
            b.push('\n');
        } else {
            blocks.push(format!("{l}\n"));
        }
    }
    blocks.sort();
    format!(
        "{head}--- stdout\n{first}\n{}{after}--- stderr\n{err}",
        blocks.concat()
    )
}

/// `lease reap` (a dry run) with a candidate, a hold and a retention, and
/// `lease show` of the held record; `lease reap --apply` then.
#[test]
fn reap_and_show_human() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (clean, _) = env.kept(&repo, "clean", "true");
    let (held, _) = env.kept(&repo, "held", "echo x > notes.txt");
    let (kept, _) = env.kept(&repo, "kept", "true");
    let run = |args: &[&str]| env.lease().args(args).output().unwrap();
    assert_code(&run(&["hold", &kept, "--reason", "review"]), 0);
    let ids = [clean.as_str(), held.as_str(), kept.as_str()];
    assert_snapshot(
        &sort_blocks(&snapshot(&run(&["reap"]), &env.root, &ids), &["free under"]),
        r"
exit: 1
--- stdout
lease reap (dry run, nothing changed): 3 record(s), 0 orphan(s), 0 removed record(s) skipped; discovery complete
held `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]) [terminal]: untracked
  untracked: notes.txt
  hint: commit, move or delete the listed files, then retry
  next: git -C [ROOT]/state/worktrees/repo-[HASH]/[ID] status --short --untracked-files=all --ignored
retained `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]) [retained]: retained
  held by manual:[USER] (review)
  hint: `lease release [ID8]` when it is no longer needed
  next: lease release [ID8] && lease retire [ID8]
would remove `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]) [terminal]
  every commit is durable; would remove
free under `[ROOT]/state`: [SIZE]
--- stderr
",
    );
    assert_snapshot(
        &snapshot(&run(&["show", &held[..8]]), &env.root, &ids),
        r"
exit: 0
--- stdout
id:        [ID]
state:     terminal
worktree:  [ROOT]/state/worktrees/repo-[HASH]/[ID]
repo:      [ROOT]/repo/.git
branch:    held
owner:     manual:[USER]
slot:      1 (LEASE_SLOT)
holders:   none (the lease is free)
launcher:  pid [PID] (ended at [TIME])
outcome:   exit 0 at [TIME]
--- stderr
",
    );
    assert_snapshot(
        &sort_blocks(
            &snapshot(&run(&["reap", "--apply"]), &env.root, &ids),
            &["reclaimed", "free under"],
        ),
        r"
exit: 1
--- stdout
lease reap: 3 record(s), 0 orphan(s), 0 removed record(s) skipped; discovery complete
held `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]) [terminal]: untracked
  untracked: notes.txt
  hint: commit, move or delete the listed files, then retry
  next: git -C [ROOT]/state/worktrees/repo-[HASH]/[ID] status --short --untracked-files=all --ignored
removed `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]) [terminal -> removed]
retained `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]) [retained]: retained
  held by manual:[USER] (review)
  hint: `lease release [ID8]` when it is no longer needed
  next: lease release [ID8] && lease retire [ID8]
reclaimed [SIZE]
free under `[ROOT]/state`: [SIZE] before, [SIZE] after
--- stderr
",
    );
}

/// `lease repair` done (dry run, then for real) and held (the worktree is
/// still there), and `lease archives`.
#[test]
fn repair_and_archives_human() {
    let env = TestEnv::new();
    let repo = env.repo();
    let run = |args: &[&str]| env.lease().current_dir(&repo).args(args).output().unwrap();
    let gone = env.root.join("gone");
    env.add_worktree(&repo, "gone", &gone);
    std::fs::remove_dir_all(&gone).unwrap();
    let g = gone.to_str().unwrap();
    assert_snapshot(
        &snapshot(&run(&["repair", "--dry-run", g]), &env.root, &[]),
        r"
exit: 0
--- stdout
lease repair would:
  registration `[ROOT]/repo/.git/worktrees/gone` of `[ROOT]/repo/.git` names `[ROOT]/gone`
  the directory `[ROOT]/gone` is missing
  every commit its HEAD, HEAD reflog and private refs reach is on a branch, tag or remote-tracking ref
  `git worktree remove -- [ROOT]/gone` (not forced) removes that one registration; lease never runs `git worktree prune`
would remove the registration of `[ROOT]/gone`
--- stderr
",
    );
    assert_snapshot(
        &snapshot(&run(&["repair", g]), &env.root, &[]),
        r"
exit: 0
--- stdout
lease repair will:
  registration `[ROOT]/repo/.git/worktrees/gone` of `[ROOT]/repo/.git` names `[ROOT]/gone`
  the directory `[ROOT]/gone` is missing
  every commit its HEAD, HEAD reflog and private refs reach is on a branch, tag or remote-tracking ref
  `git worktree remove -- [ROOT]/gone` (not forced) removes that one registration; lease never runs `git worktree prune`
removed the registration of `[ROOT]/gone`
--- stderr
",
    );
    let (id, wt) = env.kept(&repo, "here", "true");
    assert_snapshot(
        &snapshot(&run(&["repair", wt.to_str().unwrap()]), &env.root, &[&id]),
        r"
exit: 1
--- stdout
lease repair found:
  registration `[ROOT]/repo/.git/worktrees/[ID]` of `[ROOT]/repo/.git` names `[ROOT]/state/worktrees/repo-[HASH]/[ID]`
held `[ROOT]/state/worktrees/repo-[HASH]/[ID]` (record [ID8]): path-occupied
  `[ROOT]/state/worktrees/repo-[HASH]/[ID]` exists, so its registration is not stale; `lease retire` removes a worktree
  hint: the worktree still exists: `lease retire [ROOT]/state/worktrees/repo-[HASH]/[ID]` (or `git worktree remove`) removes it
  next: lease retire [ID8]
--- stderr
",
    );
    assert_snapshot(
        &snapshot(&run(&["archives"]), &env.root, &[&id]),
        r"
exit: 0
--- stdout
no archives
--- stderr
",
    );
    let o = run(&[
        "exec",
        "--",
        "sh",
        "-c",
        "git commit -q --allow-empty -m work",
    ]);
    assert_code(&o, 0);
    let archived = env
        .records()
        .into_iter()
        .find(|r| !r["archive"].is_null())
        .unwrap();
    let aid = archived["id"].as_str().unwrap().to_string();
    let tip = archived["archive"]["tip"].as_str().unwrap().to_string();
    let snap = snapshot(&run(&["archives"]), &env.root, &[&id, &aid]).replace(&tip[..8], "[TIP8]");
    assert_snapshot(
        &snap,
        r"
exit: 0
--- stdout
ID            TIP           COMMITS  SIZE      RESTORED  REPOSITORY
[ID8]      [TIP8]            1      [SIZE]         0  [ROOT]/repo/.git
--- stderr
",
    );
}

/// `lease doctor` with a known PATH (lease and git on it, no shim), and
/// `lease create` done and failed.
#[test]
fn doctor_and_create_human() {
    let env = TestEnv::new();
    let repo = env.repo();
    let bin = env.root.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_lease"), bin.join("lease")).unwrap();
    std::os::unix::fs::symlink(which("git"), bin.join("git")).unwrap();
    let o = env
        .lease()
        .current_dir(&repo)
        .env("PATH", &bin)
        .args(["doctor"])
        .output()
        .unwrap();
    assert_snapshot(
        &snapshot(&o, &env.root, &[]),
        r#"
exit: 0
--- stdout
ok    git           git version [VERSION] at `[ROOT]/bin/git`
ok    state root    `[ROOT]/state` does not exist yet; the first `lease exec` creates it (0700)
ok    locks         flock works on `[ROOT]`
ok    remote        trusted remote of `[ROOT]/repo`: `origin` (commits reachable from it are durable; the rest is archived)
ok    lease on PATH `[ROOT]/bin/lease`
warn  git shim      the first git on PATH is not lease's shim: a git started by a process that closed LEASE_FD (Python's subprocess, Node's child_process) does not hold the lease (optional: the script shim/git, or the compiled `lease-git-shim` installed as `git`; see shim/README.md)
                    next: export PATH="$PWD/shim:$PATH"   # from a checkout of lease, in the leased command's environment
--- stderr
"#,
    );
    // Killed and reaped on drop, even when a snapshot differs.
    let sleeper = Bg(Some(
        env.cmd("sleep")
            .arg("600")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap(),
    ));
    let o = env
        .lease()
        .current_dir(&repo)
        .args([
            "create",
            "--branch",
            "task",
            "--bind-pid",
            &sleeper.pid().to_string(),
        ])
        .output()
        .unwrap();
    let id = env.record()["id"].as_str().unwrap().to_string();
    assert_snapshot(
        &snapshot(&o, &env.root, &[&id]),
        r"
exit: 0
--- stdout
[ROOT]/state/worktrees/repo-[HASH]/[ID]
--- stderr
",
    );
    let o = env
        .lease()
        .current_dir(&repo)
        .args([
            "create",
            "--branch",
            "task",
            "--bind-pid",
            &sleeper.pid().to_string(),
        ])
        .output()
        .unwrap();
    assert_snapshot(
        &snapshot(&o, &env.root, &[&id]),
        r"
exit: 2
--- stdout
--- stderr
error: branch `task` is checked out in worktree `[ROOT]/state/worktrees/repo-[HASH]/[ID]`; if that directory is gone, run `lease repair [ROOT]/state/worktrees/repo-[HASH]/[ID]`
",
    );
}
