//! Snapshots, second part: exec, adopt, join, restore, du, metrics,
//! config, audit verify and the Claude Code hook, human and `--json`, on
//! a done, a held or refused, and a failed case (the helpers and their
//! filters are tests/it/snapshots.rs's).

use std::process::{Command, Output};

use crate::snapshots::{assert_snapshot, snapshot, sort_blocks};
use crate::support::*;

/// Every record id in the state root, for the filters.
fn all_ids(env: &TestEnv) -> Vec<String> {
    env.records()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// Runs `c` and snapshots it with every record id filtered.
fn snap(env: &TestEnv, c: &mut Command) -> String {
    let o = c.output().unwrap();
    snap_of(env, &o)
}

/// Snapshots `o` with every record id filtered.
fn snap_of(env: &TestEnv, o: &Output) -> String {
    let ids = all_ids(env);
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    snapshot(o, &env.root, &ids)
}

/// Sizes in bytes and free space vary with the filesystem: a number under
/// a key that names bytes (`*bytes*`, `free_*`, `reclaim`, or inside a
/// `bytes` or `total` object) becomes `"[SIZE]"` unless it is 0 (a zero
/// says something: nothing untracked, nothing to reclaim).
fn sizes(v: &mut serde_json::Value, in_sizes: bool) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                let named = k.contains("bytes") || k.starts_with("free_") || k == "reclaim";
                if (named || in_sizes) && x.as_u64().is_some_and(|n| n != 0) {
                    *x = serde_json::Value::String("[SIZE]".into());
                } else {
                    sizes(x, in_sizes || named || k == "bytes" || k == "total");
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| sizes(x, in_sizes)),
        _ => {}
    }
}

/// A text with its JSON pretty-printed and its sizes filtered: the whole
/// text if it is one document, else each line that is one (exec's and
/// join's JSON lines on stderr).
fn json_text(text: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(text);
    let render = |mut v: serde_json::Value| {
        sizes(&mut v, false);
        serde_json::to_string_pretty(&v).unwrap() + "\n"
    };
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
        return render(v).into_bytes();
    }
    text.lines()
        .map(|l| match serde_json::from_str::<serde_json::Value>(l) {
            Ok(v) if v.is_object() => render(v),
            _ => format!("{l}\n"),
        })
        .collect::<String>()
        .into_bytes()
}

/// Runs `c` and snapshots it with its JSON (stdout's and stderr's)
/// pretty-printed and its sizes filtered.
fn snap_json(env: &TestEnv, c: &mut Command) -> String {
    let o = c.output().unwrap();
    let o = Output {
        status: o.status,
        stdout: json_text(&o.stdout),
        stderr: json_text(&o.stderr),
    };
    snap_of(env, &o)
}

/// Columns are padded to the widest value, which the sandbox path and the
/// user's name change: compare words, not spaces (an indented line keeps
/// an indent of two).
fn words(snap: &str) -> String {
    snap.lines()
        .map(|l| {
            let indent = if l.starts_with(' ') { "  " } else { "" };
            format!(
                "{indent}{}\n",
                l.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        })
        .collect()
}

/// `lease exec`: done, held after exit (an untracked file left behind),
/// and failed (a command that is not found: 127), human and `--json`.
#[test]
fn exec_human_and_json_on_done_held_and_failed() {
    let env = TestEnv::new();
    let repo = env.repo();
    let exec = |args: &[&str]| {
        let mut c = env.lease();
        c.current_dir(&repo).arg("exec").args(args);
        c
    };
    assert_snapshot(
        &snap(&env, &mut exec(&["--", "echo", "hi"])),
        r"
exit: 0
--- stdout
hi
--- stderr
lease: removed `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]); reclaimed [SIZE]
lease:   deleted branch `lease/[ID8]` (was [OID])
",
    );
    assert_snapshot(
        &snap_json(&env, &mut exec(&["--json", "--", "echo", "hi"])),
        r#"
exit: 0
--- stdout
hi
--- stderr
{
  "archive": null,
  "branch": {
    "automatic": true,
    "deleted": true,
    "detail": "deleted `refs/heads/lease/[ID8]` (was [OID])",
    "name": "lease/[ID8]",
    "old_tip": "[OID]"
  },
  "detail": [],
  "disposition": "removed",
  "durable": "remote",
  "error": null,
  "id": "[ID]",
  "lease": "retire",
  "next": null,
  "reasons": [],
  "tombstone": {
    "branch": {
      "automatic": true,
      "deleted": true,
      "detail": "deleted `refs/heads/lease/[ID8]` (was [OID])",
      "name": "lease/[ID8]",
      "old_tip": "[OID]"
    },
    "bytes_reclaimed": "[SIZE]",
    "evidence": {
      "archival_refs": null,
      "archive": null,
      "confirmed_remote_tips": 0,
      "durable": {
        "kind": "remote",
        "oid": "[OID]",
        "ref": "refs/remotes/origin/HEAD"
      },
      "git": {
        "path": "[GIT]",
        "version": "git version [VERSION]"
      },
      "head": "[OID]",
      "rebuildable_deleted": [],
      "trusted_filters": [],
      "unique_commits": 0
    },
    "free_after": "[SIZE]",
    "free_before": "[SIZE]",
    "id": "[ID]",
    "path": "[ROOT]/state/worktrees/repo-[HASH]/[ID]",
    "removed_at": "[TIME]"
  },
  "unique_commits": 0,
  "worktree": "[ROOT]/state/worktrees/repo-[HASH]/[ID]"
}
"#,
    );
    assert_snapshot(
        &snap(&env, &mut exec(&["--", "sh", "-c", "echo x > notes.txt"])),
        r"
exit: 0
--- stdout
--- stderr
lease: held `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]): untracked
lease:   untracked: notes.txt
lease:   hint: commit, move or delete the listed files, then retry
lease:   next: git -C [ROOT]/state/worktrees/repo-[HASH]/[ID] status --short --untracked-files=all --ignored
",
    );
    assert_snapshot(
        &snap_json(
            &env,
            &mut exec(&["--json", "--", "sh", "-c", "echo x > notes.txt"]),
        ),
        r#"
exit: 0
--- stdout
--- stderr
{
  "archive": null,
  "detail": [
    "untracked: notes.txt"
  ],
  "disposition": "held",
  "error": null,
  "id": "[ID]",
  "lease": "retire",
  "next": "git -C [ROOT]/state/worktrees/repo-[HASH]/[ID] status --short --untracked-files=all --ignored",
  "reasons": [
    "untracked"
  ],
  "tombstone": null,
  "unique_commits": 0,
  "worktree": "[ROOT]/state/worktrees/repo-[HASH]/[ID]"
}
"#,
    );
    assert_snapshot(
        &snap(&env, &mut exec(&["--", "no-such-command-xyz"])),
        r"
exit: 127
--- stdout
--- stderr
lease: cannot run `no-such-command-xyz`: No such file or directory (os error 2)
lease: removed `[ROOT]/state/worktrees/repo-[HASH]/[ID]` ([ID8]); reclaimed [SIZE]
lease:   deleted branch `lease/[ID8]` (was [OID])
",
    );
    assert_snapshot(
        &snap_json(&env, &mut exec(&["--json", "--", "no-such-command-xyz"])),
        r#"
exit: 127
--- stdout
--- stderr
{
  "lease": "note",
  "message": "cannot run `no-such-command-xyz`: No such file or directory (os error 2)"
}
{
  "archive": null,
  "branch": {
    "automatic": true,
    "deleted": true,
    "detail": "deleted `refs/heads/lease/[ID8]` (was [OID])",
    "name": "lease/[ID8]",
    "old_tip": "[OID]"
  },
  "detail": [],
  "disposition": "removed",
  "durable": "remote",
  "error": null,
  "id": "[ID]",
  "lease": "retire",
  "next": null,
  "reasons": [],
  "tombstone": {
    "branch": {
      "automatic": true,
      "deleted": true,
      "detail": "deleted `refs/heads/lease/[ID8]` (was [OID])",
      "name": "lease/[ID8]",
      "old_tip": "[OID]"
    },
    "bytes_reclaimed": "[SIZE]",
    "evidence": {
      "archival_refs": null,
      "archive": null,
      "confirmed_remote_tips": 0,
      "durable": {
        "kind": "remote",
        "oid": "[OID]",
        "ref": "refs/remotes/origin/HEAD"
      },
      "git": {
        "path": "[GIT]",
        "version": "git version [VERSION]"
      },
      "head": "[OID]",
      "rebuildable_deleted": [],
      "trusted_filters": [],
      "unique_commits": 0
    },
    "free_after": "[SIZE]",
    "free_before": "[SIZE]",
    "id": "[ID]",
    "path": "[ROOT]/state/worktrees/repo-[HASH]/[ID]",
    "removed_at": "[TIME]"
  },
  "unique_commits": 0,
  "worktree": "[ROOT]/state/worktrees/repo-[HASH]/[ID]"
}
"#,
    );
}

/// `lease adopt`: done, and refused (a directory git does not list, and a
/// worktree already recorded), human and `--json`.
#[test]
fn adopt_human_and_json_on_done_and_refused() {
    let env = TestEnv::new();
    let repo = env.repo();
    let side = env.root.join("side");
    env.add_worktree(&repo, "side", &side);
    let other = env.root.join("other");
    env.add_worktree(&repo, "other", &other);
    let plain = env.root.join("plain");
    std::fs::create_dir(&plain).unwrap();
    let adopt = |args: &[&str]| {
        let mut c = env.lease();
        c.arg("adopt").args(args);
        c
    };
    let side = side.to_str().unwrap();
    let other = other.to_str().unwrap();
    let plain = plain.to_str().unwrap();
    assert_snapshot(
        &snap(&env, &mut adopt(&[side])),
        r"
exit: 0
--- stdout
adopted `[ROOT]/side` as [ID] (terminal); `lease retire [ID8]` takes it through the gates
--- stderr
",
    );
    assert_snapshot(
        &snap(&env, &mut adopt(&[other, "--json"])),
        r#"
exit: 0
--- stdout
{
  "id": "[ID]",
  "worktree": "[ROOT]/other",
  "state": "terminal",
  "origin": "adopted"
}
--- stderr
"#,
    );
    assert_snapshot(
        &snap(&env, &mut adopt(&[side])),
        r"
exit: 2
--- stdout
--- stderr
error: `[ROOT]/side` is already recorded as [ID]; `lease show [ID8]` or `lease retire [ID8]`
next: lease show [ID8]
",
    );
    assert_snapshot(
        &snap(&env, &mut adopt(&[side, "--json"])),
        r#"
exit: 2
--- stdout
{
  "error": {
    "kind": "usage",
    "message": "`[ROOT]/side` is already recorded as [ID]; `lease show [ID8]` or `lease retire [ID8]`",
    "next": "lease show [ID8]",
    "path": null,
    "reason": null
  },
  "exit": 2
}
--- stderr
error: `[ROOT]/side` is already recorded as [ID]; `lease show [ID8]` or `lease retire [ID8]`
next: lease show [ID8]
"#,
    );
    assert_snapshot(
        &snap(&env, &mut adopt(&[plain])),
        r"
exit: 2
--- stdout
--- stderr
error: `[ROOT]/plain` is not in a git repository (fatal: not a git repository (or any of the parent directories): .git); name a worktree of one (`git worktree list` shows them), or run lease from inside the repository
",
    );
    assert_snapshot(
        &snap(&env, &mut adopt(&[plain, "--json"])),
        r#"
exit: 2
--- stdout
{
  "error": {
    "kind": "usage",
    "message": "`[ROOT]/plain` is not in a git repository (fatal: not a git repository (or any of the parent directories): .git); name a worktree of one (`git worktree list` shows them), or run lease from inside the repository",
    "next": null,
    "path": null,
    "reason": null
  },
  "exit": 2
}
--- stderr
error: `[ROOT]/plain` is not in a git repository (fatal: not a git repository (or any of the parent directories): .git); name a worktree of one (`git worktree list` shows them), or run lease from inside the repository
"#,
    );
}

/// `lease join` outside any lease: failed; join's own part is on stderr.
#[test]
fn join_human_and_json_outside_a_lease() {
    let env = TestEnv::new();
    let join = |args: &[&str]| {
        let mut c = env.lease();
        c.arg("join").args(args);
        c
    };
    assert_snapshot(
        &snap(&env, &mut join(&["--", "echo", "hi"])),
        r"
exit: 125
--- stdout
--- stderr
error: `LEASE_ID` is not set: `lease join` runs only inside a command started by `lease exec`
",
    );
    assert_snapshot(
        &snap_json(&env, &mut join(&["--json", "--", "echo", "hi"])),
        r#"
exit: 125
--- stdout
--- stderr
{
  "error": {
    "kind": "usage",
    "message": "`LEASE_ID` is not set: `lease join` runs only inside a command started by `lease exec`",
    "next": null,
    "path": null,
    "reason": null
  },
  "exit": 125,
  "lease": "error"
}
"#,
    );
}

/// `lease join` inside a lease: done (the command runs; join itself prints
/// nothing, human or `--json`) and refused (a retire holds the lease
/// exclusively: `retire-in-progress`, exit 125, the command not run).
#[test]
fn join_human_and_json_on_done_and_refused() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, _) = crate::shim::terminal_worktree(&env, &repo);
    let vars = crate::shim::lease_vars(&env, &id);
    let join = |args: &[&str]| {
        let mut c = env.lease();
        c.envs(vars.clone()).arg("join").args(args);
        c
    };
    assert_snapshot(
        &snap(&env, &mut join(&["--", "echo", "hi"])),
        r"
exit: 0
--- stdout
hi
--- stderr
",
    );
    assert_snapshot(
        &snap_json(&env, &mut join(&["--json", "--", "echo", "hi"])),
        r"
exit: 0
--- stdout
hi
--- stderr
",
    );
    let ex = LockHolder::new(&env, &env.lease_of(&id), true);
    assert_snapshot(
        &snap(&env, &mut join(&["--", "echo", "hi"])),
        r"
exit: 125
--- stdout
--- stderr
error: record [ID] is being retired: its lease is held exclusively [retire-in-progress]
hint: another retire runs; retry when it ends
next: lease show [ID8]
",
    );
    assert_snapshot(
        &snap_json(&env, &mut join(&["--json", "--", "echo", "hi"])),
        r#"
exit: 125
--- stdout
--- stderr
{
  "error": {
    "kind": "refused",
    "message": "record [ID] is being retired: its lease is held exclusively",
    "next": "lease show [ID8]",
    "path": null,
    "reason": "retire-in-progress"
  },
  "exit": 125,
  "lease": "error"
}
"#,
    );
    drop(ex);
    assert_eq!(
        env.record_of(&id)["state"],
        "terminal",
        "join changes no record"
    );
}

/// `lease restore`: done (human, then `--json` of a second archive), and
/// refused (the archive was restored already; an id with no archive).
#[test]
fn restore_human_and_json_on_done_and_refused() {
    let env = TestEnv::new();
    let repo = env.repo();
    let work = "git commit -q --allow-empty -m work";
    let (a, _) = env.kept(&repo, "a", work);
    let (b, _) = env.kept(&repo, "b", work);
    let (plain, _) = env.kept(&repo, "plain", "true");
    for id in [&a, &b] {
        assert_code(&env.lease().args(["retire", id]).output().unwrap(), 0);
    }
    let restore = |args: &[&str]| {
        let mut c = env.lease();
        c.current_dir(&repo).arg("restore").args(args);
        c
    };
    assert_snapshot(
        &snap(&env, &mut restore(&[&a])),
        r"
exit: 0
--- stdout
restored [ID8] into `[ROOT]/state/worktrees/repo-[HASH]/[ID]` on branch `a` at [OID] (new record [ID8])
--- stderr
",
    );
    assert_snapshot(
        &snap(&env, &mut restore(&[&b, "--json"])),
        r#"
exit: 0
--- stdout
{
  "from": "[ID]",
  "id": "[ID]",
  "worktree": "[ROOT]/state/worktrees/repo-[HASH]/[ID]",
  "branch": "b",
  "head": "[OID]",
  "fetched_ref": "refs/lease/restore/[ID]",
  "bundle": "[ROOT]/state/archives/[ID]/1.bundle"
}
--- stderr
"#,
    );
    assert_snapshot(
        &snap(&env, &mut restore(&[&a])),
        r"
exit: 1
--- stdout
--- stderr
error: archive of [ID] was restored 1 time(s) already [already-restored]
hint: the archive was restored before (see its receipts); pass --again for another copy
next: lease restore [ID8] --again
",
    );
    assert_snapshot(
        &snap(&env, &mut restore(&[&a, "--json"])),
        r#"
exit: 1
--- stdout
{
  "error": {
    "kind": "refused",
    "message": "archive of [ID] was restored 1 time(s) already",
    "next": "lease restore [ID8] --again",
    "path": null,
    "reason": "already-restored"
  },
  "exit": 1
}
--- stderr
error: archive of [ID] was restored 1 time(s) already [already-restored]
hint: the archive was restored before (see its receipts); pass --again for another copy
next: lease restore [ID8] --again
"#,
    );
    assert_snapshot(
        &snap(&env, &mut restore(&[&plain])),
        r"
exit: 2
--- stdout
--- stderr
error: record [ID] has no archive
",
    );
    assert_snapshot(
        &snap(&env, &mut restore(&[&plain, "--json"])),
        r#"
exit: 2
--- stdout
{
  "error": {
    "kind": "usage",
    "message": "record [ID] has no archive",
    "next": null,
    "path": null,
    "reason": null
  },
  "exit": 2
}
--- stderr
error: record [ID] has no archive
"#,
    );
}

/// `lease du` with a clean tree and a held one (an untracked file).
#[test]
fn du_human_and_json_with_a_held_tree() {
    let env = TestEnv::new();
    let repo = env.repo();
    env.kept(&repo, "clean", "true");
    env.kept(&repo, "held", "echo x > notes.txt");
    // Rows come in id order, and ids are random: sort them.
    let human = sort_blocks(&words(&snap(&env, env.lease().args(["du"]))), &["total"]);
    assert_snapshot(
        &human,
        r"
exit: 0
--- stdout
ID STATE TRACKED UNTRACKED IGNORED PROVISIONED REBUILDABLE ADMIN TOTAL RECLAIM WORKTREE
[ID8] terminal [SIZE] [SIZE] [SIZE] [SIZE] [SIZE] [SIZE] [SIZE] [SIZE] [ROOT]/state/worktrees/repo-[HASH]/[ID]
[ID8] terminal [SIZE] [SIZE] [SIZE] [SIZE] [SIZE] [SIZE] [SIZE] held [ROOT]/state/worktrees/repo-[HASH]/[ID]
  held: untracked: notes.txt
  next: git -C [ROOT]/state/worktrees/repo-[HASH]/[ID] status --short --untracked-files=all --ignored
total [SIZE] [SIZE] [SIZE] [SIZE] [SIZE] [SIZE] [SIZE] [SIZE]
--- stderr
",
    );
    let mut o = env.lease().args(["du", "--json"]).output().unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["targets"]
        .as_array_mut()
        .unwrap()
        .sort_by_key(|t| t["would"].as_str().unwrap().to_string());
    o.stdout = json_text(v.to_string().as_bytes());
    assert_snapshot(
        &snap_of(&env, &o),
        r#"
exit: 0
--- stdout
{
  "targets": [
    {
      "bytes": {
        "admin": "[SIZE]",
        "ignored_work": 0,
        "provisioned": 0,
        "rebuildable": 0,
        "total": "[SIZE]",
        "tracked": "[SIZE]",
        "untracked": "[SIZE]"
      },
      "detail": [
        "untracked: notes.txt"
      ],
      "error": null,
      "id": "[ID]",
      "measured_at": "[TIME]",
      "next": "git -C [ROOT]/state/worktrees/repo-[HASH]/[ID] status --short --untracked-files=all --ignored",
      "reasons": [
        "untracked"
      ],
      "reclaim": 0,
      "state": "terminal",
      "worktree": "[ROOT]/state/worktrees/repo-[HASH]/[ID]",
      "would": "hold"
    },
    {
      "bytes": {
        "admin": "[SIZE]",
        "ignored_work": 0,
        "provisioned": 0,
        "rebuildable": 0,
        "total": "[SIZE]",
        "tracked": "[SIZE]",
        "untracked": 0
      },
      "detail": [],
      "error": null,
      "id": "[ID]",
      "measured_at": "[TIME]",
      "next": null,
      "reasons": [],
      "reclaim": "[SIZE]",
      "state": "terminal",
      "worktree": "[ROOT]/state/worktrees/repo-[HASH]/[ID]",
      "would": "remove"
    }
  ],
  "total": {
    "admin": "[SIZE]",
    "ignored_work": 0,
    "provisioned": 0,
    "rebuildable": 0,
    "reclaim": "[SIZE]",
    "total": "[SIZE]",
    "tracked": "[SIZE]",
    "untracked": "[SIZE]"
  }
}
--- stderr
"#,
    );
}

/// `lease metrics`: the Prometheus text and its JSON, with a terminal
/// record measured by `lease du`, a removed one and its archive.
#[test]
fn metrics_human_and_json() {
    let env = TestEnv::new();
    let repo = env.repo();
    env.kept(&repo, "clean", "true");
    let (gone, _) = env.kept(&repo, "gone", "git commit -q --allow-empty -m work");
    assert_code(&env.lease().args(["retire", &gone]).output().unwrap(), 0);
    assert_code(&env.lease().args(["du"]).output().unwrap(), 0);
    // Sample values of `*_bytes` metrics vary with the filesystem.
    let text = snap(&env, env.lease().args(["metrics"]))
        .lines()
        .map(|l| match l.rsplit_once(' ') {
            Some((name, v)) if name.contains("_bytes") && !l.starts_with('#') && v != "0" => {
                format!("{name} [SIZE]\n")
            }
            _ => format!("{l}\n"),
        })
        .collect::<String>();
    assert_snapshot(
        &text,
        r#"
exit: 0
--- stdout
# HELP lease_records Lease records by state.
# TYPE lease_records gauge
lease_records{state="planned"} 0
lease_records{state="active"} 0
lease_records{state="terminal"} 1
lease_records{state="retained"} 0
lease_records{state="interrupted"} 0
lease_records{state="retiring"} 0
lease_records{state="removed"} 1
# HELP lease_records_unreadable Record files that are unreadable, corrupt or of a newer schema.
# TYPE lease_records_unreadable gauge
lease_records_unreadable 0
# HELP lease_archives Archive bundles under the state root.
# TYPE lease_archives gauge
lease_archives 1
# HELP lease_archive_bytes Bytes of the archive bundles under the state root.
# TYPE lease_archive_bytes gauge
lease_archive_bytes [SIZE]
# HELP lease_reclaimed_bytes Bytes reclaimed by the removals still recorded in tombstones.
# TYPE lease_reclaimed_bytes gauge
lease_reclaimed_bytes [SIZE]
# HELP lease_worktree_bytes Bytes of worktrees (tree and admin directory) as last measured by lease du or a retire, by state.
# TYPE lease_worktree_bytes gauge
lease_worktree_bytes{state="planned"} 0
lease_worktree_bytes{state="active"} 0
lease_worktree_bytes{state="terminal"} [SIZE]
lease_worktree_bytes{state="retained"} 0
lease_worktree_bytes{state="interrupted"} 0
lease_worktree_bytes{state="retiring"} 0
lease_worktree_bytes{state="removed"} 0
--- stderr
"#,
    );
    assert_snapshot(
        &snap_json(&env, env.lease().args(["metrics", "--json"])),
        r#"
exit: 0
--- stdout
{
  "archive_bytes": "[SIZE]",
  "archives": 1,
  "reclaimed_bytes": "[SIZE]",
  "records": {
    "active": 0,
    "interrupted": 0,
    "planned": 0,
    "removed": 1,
    "retained": 0,
    "retiring": 0,
    "terminal": 1
  },
  "unreadable": 0,
  "worktree_bytes": {
    "active": 0,
    "interrupted": 0,
    "planned": 0,
    "removed": 0,
    "retained": 0,
    "retiring": 0,
    "terminal": "[SIZE]"
  }
}
--- stderr
"#,
    );
}

/// `lease config --show`: done, and a bad config file (a usage error).
#[test]
fn config_human_and_json_on_done_and_a_bad_file() {
    let env = TestEnv::new();
    let repo = env.repo();
    let bad = env.root.join("bad.toml");
    std::fs::write(&bad, "min_free = [\n").unwrap();
    let bad = bad.to_str().unwrap();
    let config = |args: &[&str]| {
        let mut c = env.lease();
        c.current_dir(&repo).arg("config").args(args);
        c
    };
    assert_snapshot(
        &words(&snap(&env, &mut config(&["--show"]))),
        r"
exit: 0
--- stdout
# no config file read
state_root [ROOT]/state (env LEASE_HOME)
worktree_root [ROOT]/state/worktrees (default)
trusted_remote origin, else the branch's upstream remote (default)
git the first git on PATH (default)
owner manual:[USER] (default)
min_free [SIZE] (env LEASE_MIN_FREE)
orphan_grace 7days (default)
rebuildable [] (default)
process_audit normal (default)
allow_temp_worktree_root true (env LEASE_ALLOW_TEMP_ROOT)
archive bundle (default)
trusted_filters [] (default)
teardown [] (default)
teardown_timeout 60 (default)
provision [] (default)
provision_symlink [] (default)
--- stderr
",
    );
    assert_snapshot(
        &snap(&env, &mut config(&["--show", "--json"])),
        r#"
exit: 0
--- stdout
{
  "files": [],
  "settings": [
    {
      "key": "state_root",
      "source": {
        "kind": "env",
        "name": "LEASE_HOME"
      },
      "value": "[ROOT]/state"
    },
    {
      "key": "worktree_root",
      "source": {
        "kind": "default"
      },
      "value": "[ROOT]/state/worktrees"
    },
    {
      "key": "trusted_remote",
      "source": {
        "kind": "default"
      },
      "value": "origin, else the branch's upstream remote"
    },
    {
      "key": "git",
      "source": {
        "kind": "default"
      },
      "value": "the first git on PATH"
    },
    {
      "key": "owner",
      "source": {
        "kind": "default"
      },
      "value": "manual:[USER]"
    },
    {
      "key": "min_free",
      "source": {
        "kind": "env",
        "name": "LEASE_MIN_FREE"
      },
      "value": "1M"
    },
    {
      "key": "orphan_grace",
      "source": {
        "kind": "default"
      },
      "value": "7days"
    },
    {
      "key": "rebuildable",
      "source": {
        "kind": "default"
      },
      "value": []
    },
    {
      "key": "process_audit",
      "source": {
        "kind": "default"
      },
      "value": "normal"
    },
    {
      "key": "allow_temp_worktree_root",
      "source": {
        "kind": "env",
        "name": "LEASE_ALLOW_TEMP_ROOT"
      },
      "value": true
    },
    {
      "key": "archive",
      "source": {
        "kind": "default"
      },
      "value": "bundle"
    },
    {
      "key": "trusted_filters",
      "source": {
        "kind": "default"
      },
      "value": []
    },
    {
      "key": "teardown",
      "source": {
        "kind": "default"
      },
      "value": []
    },
    {
      "key": "teardown_timeout",
      "source": {
        "kind": "default"
      },
      "value": 60
    },
    {
      "key": "provision",
      "source": {
        "kind": "default"
      },
      "value": []
    },
    {
      "key": "provision_symlink",
      "source": {
        "kind": "default"
      },
      "value": []
    }
  ]
}
--- stderr
"#,
    );
    assert_snapshot(
        &snap(&env, &mut config(&["--show", "--config", bad])),
        r"
exit: 2
--- stdout
--- stderr
error: config file `[ROOT]/bad.toml` (line 1): unclosed array, expected `]`; fix or remove the key (see `lease config --show` and docs/config.md for the keys)
",
    );
    assert_snapshot(
        &snap(&env, &mut config(&["--show", "--config", bad, "--json"])),
        r#"
exit: 2
--- stdout
{
  "error": {
    "kind": "usage",
    "message": "config file `[ROOT]/bad.toml` (line 1): unclosed array, expected `]`; fix or remove the key (see `lease config --show` and docs/config.md for the keys)",
    "next": null,
    "path": null,
    "reason": null
  },
  "exit": 2
}
--- stderr
error: config file `[ROOT]/bad.toml` (line 1): unclosed array, expected `]`; fix or remove the key (see `lease config --show` and docs/config.md for the keys)
"#,
    );
}

/// `lease audit verify`: an intact log, then an edited line (exit 3).
#[test]
fn audit_verify_human_and_json_on_intact_and_broken() {
    let env = TestEnv::new();
    let repo = env.repo();
    env.kept(&repo, "a", "true");
    let verify = |args: &[&str]| {
        let mut c = env.lease();
        c.args(["audit", "verify"]).args(args);
        c
    };
    assert_snapshot(
        &snap(&env, &mut verify(&[])),
        r"
exit: 0
--- stdout
audit log `[ROOT]/state/audit.jsonl`: intact, 6 line(s)
--- stderr
",
    );
    assert_snapshot(
        &snap(&env, &mut verify(&["--json"])),
        r#"
exit: 0
--- stdout
{
  "break": null,
  "exists": true,
  "intact": true,
  "lines": 6,
  "path": "[ROOT]/state/audit.jsonl",
  "recovered": []
}
--- stderr
"#,
    );
    let log = env.state.join("audit.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[1] = lines[1].replacen("\"time\":\"", "\"time\":\"1", 1);
    std::fs::write(
        &log,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    assert_snapshot(
        &snap(&env, &mut verify(&[])),
        r"
exit: 3
--- stdout
audit log `[ROOT]/state/audit.jsonl`: broken at line 3: edited (its prev is not the sha256 of line 2: that line was changed or removed, or this one was)
hint: lease never rewrites the log; keep it as evidence, and read line 3 and the one before it (`sed -n '2,3p' [ROOT]/state/audit.jsonl`)
--- stderr
",
    );
    assert_snapshot(
        &snap(&env, &mut verify(&["--json"])),
        r#"
exit: 3
--- stdout
{
  "break": {
    "detail": "its prev is not the sha256 of line 2: that line was changed or removed, or this one was",
    "kind": "edited",
    "line": 3
  },
  "exists": true,
  "intact": false,
  "lines": 6,
  "path": "[ROOT]/state/audit.jsonl",
  "recovered": []
}
--- stderr
"#,
    );
}

/// Runs `lease hook claude-code EVENT` with `payload` on stdin.
fn hook(env: &TestEnv, event: &str, payload: &[u8], vars: &[(&str, &str)]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut c = env.lease();
    c.args(["hook", "claude-code", event])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in vars {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    child.wait_with_output().unwrap()
}

/// `lease hook claude-code`: a malformed payload (exit 2) and a
/// well-formed one run by hand, outside Claude Code (exit 2).
#[test]
fn hook_claude_code_on_a_malformed_payload_and_run_by_hand() {
    let env = TestEnv::new();
    let repo = env.repo();
    let r = repo.to_str().unwrap();
    let o = hook(
        &env,
        "worktree-create",
        b"garbage",
        &[("CLAUDE_PROJECT_DIR", r)],
    );
    assert_snapshot(
        &snap_of(&env, &o),
        r"
exit: 2
--- stdout
--- stderr
lease hook claude-code worktree-create: malformed payload: not JSON (expected value at line 1 column 1); nothing was created
",
    );
    let o = hook(&env, "worktree-remove", b"{}", &[("CLAUDE_PROJECT_DIR", r)]);
    assert_snapshot(
        &snap_of(&env, &o),
        r"
exit: 2
--- stdout
--- stderr
lease hook claude-code worktree-remove: malformed payload: `worktree_path` is missing; nothing was removed
",
    );
    let payload = serde_json::json!({
        "session_id": "8312d046-0000-4000-8000-000000000001",
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": repo,
        "hook_event_name": "WorktreeCreate",
        "name": "by-hand",
    })
    .to_string();
    let o = hook(&env, "worktree-create", payload.as_bytes(), &[]);
    assert_snapshot(
        &snap_of(&env, &o),
        r"
exit: 2
--- stdout
--- stderr
lease hook claude-code worktree-create: not run by Claude Code (neither CLAUDE_PID nor CLAUDE_PROJECT_DIR is set); to bind a worktree to a process yourself, run `lease create --bind-pid PID`, or set CLAUDE_PID=PID (an ancestor of this hook)
",
    );
}
