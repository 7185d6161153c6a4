//! Snapshots of what people and scripts see: exit code, stdout and stderr
//! of commands on a done, a held and a failed case, human and `--json`.
//!
//! A small hand-rolled helper rather than the `insta` crate: the filters
//! needed here (the sandbox path, ids, oids, times, pids, sizes) are a few
//! lines, the expected text stays inline next to the command, and the
//! suite gains no dependency tree (insta pulls in console, similar and
//! more for a review tool the team does not use). A mismatch prints the
//! actual snapshot, ready to paste.

use std::path::Path;
use std::process::Output;

use crate::support::*;

/// Replaces what changes from run to run: the sandbox root, hex runs of
/// 32 (ids), 40 (oids) and 64 (sha256) digits, 8-digit prefixes of the
/// given ids, RFC 3339 times, `pid N`, git's path and version, sizes.
fn normalize(text: &str, root: &Path, ids: &[&str]) -> String {
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
            .find(|c: char| c.is_whitespace() || c == ')' || c == '`')
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
fn snapshot(o: &Output, root: &Path, ids: &[&str]) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        o.status.code().map_or("signal".into(), |c| c.to_string()),
        normalize(&stdout(o), root, ids),
        normalize(&stderr(o), root, ids)
    )
}

/// Asserts a snapshot, printing the actual one on mismatch.
#[track_caller]
fn assert_snapshot(actual: &str, expected: &str) {
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
