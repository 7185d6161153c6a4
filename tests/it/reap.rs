//! `lease reap`: crash recovery at each fault point, a report over every
//! state, retained records left alone, and one reaper at a time (hold and
//! repair have their own files; they share this file's helpers).

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use sha2::Digest;

use crate::support::*;

/// SPEC/Record's legal transitions, written out independently of the code.
const LEGAL: &[(&str, &str)] = &[
    ("planned", "active"),
    ("planned", "removed"),
    ("planned", "interrupted"),
    ("active", "terminal"),
    ("active", "interrupted"),
    ("terminal", "retained"),
    ("retained", "terminal"),
    ("terminal", "retiring"),
    ("interrupted", "retiring"),
    ("retiring", "removed"),
    ("retiring", "terminal"),
    ("terminal", "active"),
    ("retained", "active"),
    ("interrupted", "active"),
];

fn ids(env: &TestEnv) -> Vec<String> {
    env.records()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// Runs `lease` with extra environment and returns its output and the id of
/// the one record it made.
pub(crate) fn lease_new(
    env: &TestEnv,
    dir: &Path,
    vars: &[(&str, &str)],
    args: &[&str],
) -> (Output, String) {
    let before = ids(env);
    let o = env
        .lease()
        .current_dir(dir)
        .envs(vars.iter().copied())
        .args(args)
        .output()
        .unwrap();
    let new: Vec<String> = ids(env)
        .into_iter()
        .filter(|i| !before.contains(i))
        .collect();
    assert_eq!(new.len(), 1, "one new record: {}", stderr(&o));
    (o, new.into_iter().next().unwrap())
}

/// `lease exec` with `LEASE_FI_CRASH=step`: the launcher dies of SIGKILL there.
fn crash_at(env: &TestEnv, repo: &Path, step: &str, script: &str) -> String {
    let (o, id) = lease_new(
        env,
        repo,
        &[("LEASE_FI_CRASH", step)],
        &["exec", "--", "sh", "-c", script],
    );
    assert_eq!(o.status.code(), None, "killed at {step}: {}", stderr(&o));
    id
}

/// Starts `lease` in the background with extra environment (killed on drop).
pub(crate) fn spawn_with(env: &TestEnv, vars: &[(&str, &str)], args: &[&str]) -> Bg {
    let mut c = env.lease();
    c.envs(vars.iter().copied())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    Bg(Some(c.spawn().unwrap()))
}

pub(crate) fn reap(env: &TestEnv, args: &[&str]) -> (Output, serde_json::Value) {
    let o = env
        .lease()
        .arg("reap")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&o), stderr(&o)));
    (o, v)
}

fn item<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    report["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == id)
        .unwrap_or_else(|| panic!("no item {id} in {report:#}"))
}

pub(crate) fn codes(v: &serde_json::Value) -> Vec<String> {
    v["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect()
}

pub(crate) fn worktree_of(env: &TestEnv, id: &str) -> PathBuf {
    PathBuf::from(env.record_of(id)["worktree"]["path"].as_str().unwrap())
}

pub(crate) fn registered(env: &TestEnv, repo: &Path, wt: &Path) -> bool {
    env.git(repo, &["worktree", "list", "--porcelain"])
        .lines()
        .any(|l| l.strip_prefix("worktree ") == Some(wt.to_str().unwrap()))
}

/// Checks the whole audit log: every line chains to the one before, and the
/// transitions of `id` form one legal path from `planned` to its current
/// state, one line per transition. Returns them.
pub(crate) fn assert_transitions(env: &TestEnv, id: &str) -> Vec<(String, String)> {
    let text = fs::read_to_string(env.state.join("audit.jsonl")).unwrap();
    let mut prev = "0".repeat(64);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["prev"], prev.as_str(), "audit chain broken at {line}");
        prev = sha2::Sha256::digest(line.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
    }
    let lines: Vec<serde_json::Value> = env.audit().into_iter().filter(|l| l["id"] == id).collect();
    assert_eq!(lines[0]["event"], "create");
    assert_eq!(lines[0]["to"], "planned");
    let mut state = "planned".to_string();
    let mut path = Vec::new();
    for l in lines.iter().filter(|l| l["event"] == "transition") {
        let (from, to) = (
            l["from"].as_str().unwrap().to_string(),
            l["to"].as_str().unwrap().to_string(),
        );
        assert_eq!(from, state, "transitions of {id} do not chain: {lines:#?}");
        assert!(
            LEGAL.contains(&(from.as_str(), to.as_str())),
            "illegal {from} -> {to}"
        );
        state = to.clone();
        path.push((from, to));
    }
    assert_eq!(env.record_of(id)["state"], state.as_str());
    path
}

/// Asserts `id` ended removed: directory and registration gone, lease file
/// unlinked, tombstone written; and a second reap changes nothing at all.
fn assert_finished(env: &TestEnv, repo: &Path, id: &str) {
    let rec = env.record_of(id);
    assert_eq!(rec["state"], "removed", "{rec:#}");
    assert_eq!(rec["tombstone"]["id"], id);
    if let Some(wt) = rec["worktree"]["path"].as_str() {
        assert!(!Path::new(wt).exists(), "directory gone");
        assert!(!registered(env, repo, Path::new(wt)), "registration gone");
    }
    if let Some(l) = rec["lease"]["path"].as_str() {
        assert!(!Path::new(l).exists(), "lease file unlinked");
    }
    let before = manifest(&env.state);
    let (o, v) = reap(env, &["--apply"]);
    assert_code(&o, 0);
    assert!(v["items"].as_array().unwrap().is_empty(), "{v:#}");
    assert_eq!(
        manifest(&env.state),
        before,
        "a second reap changed something"
    );
}

pub(crate) fn states(path: &[(String, String)]) -> Vec<&str> {
    let mut v = vec!["planned"];
    v.extend(path.iter().map(|(_, to)| to.as_str()));
    v
}

#[test]
fn crash_after_planned_is_finished_as_nothing_created() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = crash_at(&env, &repo, "exec-planned", "true");
    assert_eq!(env.record_of(&id)["state"], "planned");
    let (o, v) = reap(&env, &[]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "would-remove");
    assert_eq!(
        env.record_of(&id)["state"],
        "planned",
        "a dry run changes nothing"
    );
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "removed");
    let rec = env.record_of(&id);
    assert!(
        rec["tombstone"]["evidence"]["nothing_created"].is_string(),
        "{rec:#}"
    );
    assert_eq!(
        states(&assert_transitions(&env, &id)),
        ["planned", "removed"]
    );
    assert_finished(&env, &repo, &id);
}

#[test]
fn crash_after_active_is_proven_interrupted_and_removed() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = crash_at(&env, &repo, "exec-active", "true");
    let wt = worktree_of(&env, &id);
    assert!(wt.is_dir());
    let (o, v) = reap(&env, &[]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "would-remove");
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "removed");
    assert_eq!(
        states(&assert_transitions(&env, &id)),
        ["planned", "active", "interrupted", "retiring", "removed"]
    );
    assert_finished(&env, &repo, &id);
}

#[test]
fn crash_after_the_bundle_is_written_archives_and_removes() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = crash_at(
        &env,
        &repo,
        "archive-written",
        "echo w > w.txt && git add w.txt && git commit -qm agent-work",
    );
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "terminal");
    assert!(rec["archive"].is_null(), "the crash came before the record");
    let tip = env.git(&repo, &["rev-parse", rec["branch"].as_str().unwrap()]);
    let (o, _) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    let rec = env.record_of(&id);
    assert_eq!(rec["archive"]["tip"], tip.as_str());
    // No work lost: the recorded bundle holds the commit.
    let heads = env.git(
        &repo,
        &[
            "bundle",
            "list-heads",
            rec["archive"]["location"].as_str().unwrap(),
        ],
    );
    assert!(heads.contains(&tip), "{heads}");
    assert_eq!(
        states(&assert_transitions(&env, &id)),
        ["planned", "active", "terminal", "retiring", "removed"]
    );
    assert_finished(&env, &repo, &id);
}

#[test]
fn crash_before_remove_is_resumed_through_the_gates() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = crash_at(
        &env,
        &repo,
        "retire-before-remove",
        "echo w > w.txt && git add w.txt && git commit -qm agent-work",
    );
    assert_eq!(env.record_of(&id)["state"], "retiring");
    assert!(worktree_of(&env, &id).is_dir());
    // A plain retire does not take a retiring record; reap does.
    let o = env.lease().args(["retire", &id]).output().unwrap();
    assert_code(&o, 1);
    let (o, v) = reap(&env, &[]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "would-finish");
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "removed");
    assert_eq!(
        states(&assert_transitions(&env, &id)),
        [
            "planned", "active", "terminal", "retiring", "terminal", "retiring", "removed"
        ]
    );
    let rec = env.record_of(&id);
    assert!(
        rec["archive"]["location"].is_string(),
        "archived before removal"
    );
    assert_finished(&env, &repo, &id);
}

#[test]
fn crash_before_remove_after_git_finished_completes_the_tombstone() {
    let env = TestEnv::new();
    let repo = env.repo();
    // Killed after git's lock came off, right before the removal.
    let id = crash_at(&env, &repo, "retire-unlocked", "true");
    let wt = worktree_of(&env, &id);
    // As if the crash came after git removed the worktree.
    env.git(&repo, &["worktree", "remove", wt.to_str().unwrap()]);
    let (o, v) = reap(&env, &[]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "would-remove");
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "removed");
    assert_eq!(
        states(&assert_transitions(&env, &id)),
        ["planned", "active", "terminal", "retiring", "removed"]
    );
    assert_finished(&env, &repo, &id);
}

#[test]
fn reap_report_covers_every_state_orphans_and_a_missing_registration() {
    let env = TestEnv::new();
    let repo = env.repo();
    let pause = env.root.join("pause");
    fs::create_dir(&pause).unwrap();
    let repo_s = repo.to_str().unwrap();
    // planned, creator alive: paused right after the record was written.
    let planning = spawn_with(
        &env,
        &[
            ("LEASE_FI_PAUSE", "exec-planned"),
            ("LEASE_FI_DIR", pause.to_str().unwrap()),
        ],
        &["exec", "--repo", repo_s, "--", "true"],
    );
    wait_until("exec to pause at exec-planned", || {
        pause.join("paused-exec-planned").exists()
    });
    let planned_alive = ids(&env)[0].clone();
    // planned, creator gone.
    let planned_gone = crash_at(&env, &repo, "exec-planned", "true");
    // active, launcher alive.
    let ready = env.file("ready");
    let script = format!("{}; exec sleep 600", ready_sh(&ready));
    let before = ids(&env);
    let running = spawn_with(
        &env,
        &[],
        &["exec", "--repo", repo_s, "--", "sh", "-c", &script],
    );
    let child = read_pid(&ready);
    let _child = KillOnDrop(child);
    let active_alive = ids(&env).into_iter().find(|i| !before.contains(i)).unwrap();
    // active, every launcher gone, lease free.
    let active_gone = crash_at(&env, &repo, "exec-active", "true");
    // terminal, held by an untracked file.
    let (_, terminal_held) = lease_new(
        &env,
        &repo,
        &[],
        &["exec", "--", "sh", "-c", "echo n > notes"],
    );
    // terminal, clean: kept, then released.
    let (_, terminal_clean) = lease_new(&env, &repo, &[], &["exec", "--keep", "--", "true"]);
    assert_code(
        &env.lease()
            .args(["release", &terminal_clean])
            .output()
            .unwrap(),
        0,
    );
    // retained, and retained past its expiry.
    let (_, retained) = lease_new(&env, &repo, &[], &["exec", "--keep", "--", "true"]);
    let (_, expired) = lease_new(&env, &repo, &[], &["exec", "--keep", "--", "true"]);
    let file = env.state.join("records").join(format!("{expired}.json"));
    let mut rec = env.record_of(&expired);
    rec["retention"]["until"] = "2020-01-01T00:00:00Z".into();
    fs::write(&file, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
    // interrupted, held by an untracked file.
    let interrupted = crash_at(&env, &repo, "exec-active", "true");
    fs::write(worktree_of(&env, &interrupted).join("notes"), "n").unwrap();
    assert_code(
        &env.lease().args(["retire", &interrupted]).output().unwrap(),
        1,
    );
    assert_eq!(env.record_of(&interrupted)["state"], "interrupted");
    // retiring: crashed right before `git worktree remove`.
    let retiring = crash_at(&env, &repo, "retire-before-remove", "true");
    // removed.
    let (_, removed) = lease_new(&env, &repo, &[], &["exec", "--", "true"]);
    assert_eq!(env.record_of(&removed)["state"], "removed");
    // adopted, terminal.
    let handoff = env.root.join("handoff");
    env.add_worktree(&repo, "handoff", &handoff);
    let (_, adopted) = lease_new(
        &env,
        &repo,
        &[],
        &["exec", "--adopt", handoff.to_str().unwrap(), "--", "true"],
    );
    // Orphans: a stray directory in the root, a registration whose directory
    // is gone, and a registered worktree no record names.
    let stray = worktree_of(&env, &retained).parent().unwrap().join("stray");
    fs::create_dir(&stray).unwrap();
    let gone = env.root.join("gone");
    env.add_worktree(&repo, "gone", &gone);
    fs::remove_dir_all(&gone).unwrap();
    let unrecorded = env.root.join("unrecorded");
    env.add_worktree(&repo, "unrec", &unrecorded);

    // The dry run: complete, truthful, and writes nothing.
    let state_before = manifest(&env.state);
    let admins_before = manifest(&repo.join(".git/worktrees"));
    let (o, v) = reap(&env, &[]);
    assert_code(&o, 1);
    assert_eq!(
        manifest(&env.state),
        state_before,
        "a dry run wrote something"
    );
    assert_eq!(manifest(&repo.join(".git/worktrees")), admins_before);
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["complete"], true, "{v:#}");
    assert_eq!(v["skipped_removed"], 1);
    assert_eq!(v["items"].as_array().unwrap().len(), 11, "{v:#}");
    let expect = [
        (&planned_alive, "held", vec!["launcher-alive"]),
        (&planned_gone, "would-remove", vec![]),
        (&active_alive, "held", vec!["launcher-alive"]),
        (&active_gone, "would-remove", vec![]),
        (&terminal_held, "held", vec!["untracked"]),
        (&terminal_clean, "would-remove", vec![]),
        (&retained, "retained", vec!["retained"]),
        (&expired, "retained", vec!["retained"]),
        (&interrupted, "held", vec!["untracked"]),
        (&retiring, "would-finish", vec![]),
        (&adopted, "reported", vec![]),
    ];
    for (id, disposition, reasons) in &expect {
        let i = item(&v, id);
        assert_eq!(i["disposition"], *disposition, "{i:#}");
        assert_eq!(codes(i), *reasons, "{i:#}");
    }
    assert_eq!(item(&v, &expired)["expired"], true);
    assert_eq!(item(&v, &retained)["expired"], false);
    let orphans = v["orphans"].as_array().unwrap();
    let orphan = |p: &Path| {
        orphans
            .iter()
            .find(|o| o["path"] == p.to_str().unwrap())
            .unwrap_or_else(|| panic!("no orphan {}: {orphans:#?}", p.display()))
    };
    assert_eq!(orphans.len(), 3, "{orphans:#?}");
    let o1 = orphan(&stray);
    assert_eq!(
        (&o1["kind"], &o1["in_root"], &o1["registered"]),
        (&"directory".into(), &true.into(), &false.into())
    );
    let o2 = orphan(&gone);
    assert_eq!(
        (&o2["kind"], &o2["registered"]),
        (&"missing".into(), &true.into())
    );
    assert!(o2["next"].as_str().unwrap().contains("lease repair"));
    let o3 = orphan(&unrecorded);
    assert_eq!(
        (&o3["kind"], &o3["registered"]),
        (&"directory".into(), &true.into())
    );
    assert!(orphans.iter().all(|o| o["first_seen"].is_null()));

    // The apply.
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 1);
    assert_eq!(v["complete"], true);
    let after = |id: &str| env.record_of(id)["state"].as_str().unwrap().to_string();
    for (id, disposition, state) in [
        (&planned_alive, "held", "planned"),
        (&planned_gone, "removed", "removed"),
        (&active_alive, "held", "active"),
        (&active_gone, "removed", "removed"),
        (&terminal_held, "held", "terminal"),
        (&terminal_clean, "removed", "removed"),
        (&retained, "retained", "retained"),
        (&expired, "retained", "retained"),
        (&interrupted, "held", "interrupted"),
        (&retiring, "removed", "removed"),
        (&adopted, "reported", "terminal"),
    ] {
        assert_eq!(
            item(&v, id)["disposition"],
            disposition,
            "{:#}",
            item(&v, id)
        );
        assert_eq!(after(id), state, "{id}");
        assert_eq!(item(&v, id)["after"], state);
        assert_transitions(&env, id);
    }
    assert!(v["bytes_reclaimed"].as_u64().unwrap() > 0);
    assert!(
        worktree_of(&env, &expired).is_dir(),
        "never deleted on expiry"
    );
    assert!(handoff.is_dir() && stray.is_dir() && unrecorded.is_dir());
    assert!(
        registered(&env, &repo, &gone),
        "a missing registration is not pruned"
    );
    let first: Vec<String> = v["orphans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["first_seen"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(first.len(), 3);
    let persisted: serde_json::Value =
        serde_json::from_slice(&fs::read(env.state.join("orphans.json")).unwrap()).unwrap();
    assert_eq!(persisted["orphans"].as_object().unwrap().len(), 3);
    // A second apply keeps the first-seen times.
    let (_, again) = reap(&env, &["--apply"]);
    let second: Vec<String> = again["orphans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["first_seen"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(first, second);
    // Let the paused exec go on; it finishes on its own.
    fs::write(pause.join("resume-exec-planned"), "").unwrap();
    let o = planning.wait();
    assert_code(&o, 0);
    drop(running);
}

/// The worktree, its admin directory and its record, byte for byte.
fn untouched(env: &TestEnv, repo: &Path, id: &str) -> (Manifest, Manifest, serde_json::Value) {
    let wt = worktree_of(env, id);
    (
        manifest(&wt),
        manifest(&admin_dir(repo, &wt)),
        env.record_of(id),
    )
}

#[test]
fn reap_never_touches_a_retained_or_adopted_worktree() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (_, kept) = lease_new(&env, &repo, &[], &["exec", "--keep", "--", "true"]);
    let (_, expired) = lease_new(&env, &repo, &[], &["exec", "--keep", "--", "true"]);
    let file = env.state.join("records").join(format!("{expired}.json"));
    let mut rec = env.record_of(&expired);
    rec["retention"]["until"] = "2020-01-01T00:00:00Z".into();
    fs::write(&file, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
    let handoff = env.root.join("handoff");
    env.add_worktree(&repo, "handoff", &handoff);
    let (_, adopted) = lease_new(
        &env,
        &repo,
        &[],
        &["exec", "--adopt", handoff.to_str().unwrap(), "--", "true"],
    );
    // A hold made while active, then the launcher crashed.
    let crashed = crash_at(&env, &repo, "exec-active", "true");
    let o = env
        .lease()
        .args(["hold", &crashed, "--reason", "inspect the crash"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let snaps: Vec<_> = [&kept, &expired, &adopted]
        .iter()
        .map(|id| untouched(&env, &repo, id))
        .collect();
    let crashed_tree = manifest(&worktree_of(&env, &crashed));
    for _ in 0..2 {
        let (o, v) = reap(&env, &["--apply"]);
        assert_code(&o, 0);
        assert_eq!(item(&v, &adopted)["disposition"], "reported");
        assert_eq!(item(&v, &crashed)["disposition"], "retained");
    }
    for (id, snap) in [&kept, &expired, &adopted].iter().zip(&snaps) {
        assert_eq!(&untouched(&env, &repo, id), snap, "{id} changed");
    }
    // The crashed one is proven interrupted, and kept.
    let rec = env.record_of(&crashed);
    assert_eq!(rec["state"], "interrupted");
    assert_eq!(rec["retention"]["reason"], "inspect the crash");
    assert_eq!(manifest(&worktree_of(&env, &crashed)), crashed_tree);
    // A plain retire holds it too, as retained.
    let o = env
        .lease()
        .args(["retire", "--json", &crashed])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["retained"]);
    assert_eq!(disposition(&o), "retained");
}

#[test]
fn a_second_reaper_is_refused_and_changes_nothing() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = crash_at(&env, &repo, "exec-active", "true");
    let pause = env.root.join("pause");
    fs::create_dir(&pause).unwrap();
    let first = spawn_with(
        &env,
        &[
            ("LEASE_FI_PAUSE", "reap-locked"),
            ("LEASE_FI_DIR", pause.to_str().unwrap()),
        ],
        &["reap", "--apply"],
    );
    wait_until("the first reaper to hold the lock", || {
        pause.join("paused-reap-locked").exists()
    });
    let before = manifest(&env.state);
    for args in [&["reap", "--apply"][..], &["reap"][..]] {
        let o = env.lease().args(args).output().unwrap();
        assert_code(&o, 1);
        assert!(
            stderr(&o).contains("another `lease reap` is running"),
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(
        manifest(&env.state),
        before,
        "the refused reaper changed something"
    );
    assert_eq!(env.record_of(&id)["state"], "active");
    fs::write(pause.join("resume-reap-locked"), "").unwrap();
    assert_code(&first.wait(), 0);
    assert_eq!(env.record_of(&id)["state"], "removed");
}

#[test]
fn reap_without_a_state_root_reports_nothing_and_creates_nothing() {
    let env = TestEnv::new();
    let (o, v) = reap(&env, &[]);
    assert_code(&o, 0);
    assert_eq!(v["complete"], true);
    assert!(!env.state.exists());
}

#[test]
fn a_corrupt_record_makes_the_reap_incomplete() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (_, id) = lease_new(&env, &repo, &[], &["exec", "--keep", "--", "true"]);
    let file = env.state.join("records").join(format!("{id}.json"));
    fs::write(&file, b"{ not json").unwrap();
    let wt_parent = fs::read_dir(env.state.join("worktrees")).unwrap().count();
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 3);
    assert_eq!(v["complete"], false);
    assert!(item(&v, &id)["error"].is_string());
    assert!(
        v["orphans"].as_array().unwrap().is_empty(),
        "its directory is not an orphan: {v:#}"
    );
    assert_eq!(fs::read(&file).unwrap(), b"{ not json", "never rewritten");
    assert_eq!(
        fs::read_dir(env.state.join("worktrees")).unwrap().count(),
        wt_parent
    );
}

#[test]
fn keep_covers_its_own_session_only() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (_, id) = lease_new(&env, &repo, &[], &["exec", "--keep", "--", "true"]);
    assert_eq!(env.record_of(&id)["state"], "retained");
    let wt = worktree_of(&env, &id);
    let o = env
        .lease()
        .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let rec = env.record_of(&id);
    assert_eq!(
        rec["state"], "terminal",
        "the guide's CI flow ends terminal"
    );
    assert!(rec["retention"].is_null());
}

/// A worktree added with git whose directory is then deleted.
pub(crate) fn stale(env: &TestEnv, repo: &Path, name: &str) -> PathBuf {
    let wt = env.root.join(name);
    env.add_worktree(repo, name, &wt);
    fs::remove_dir_all(&wt).unwrap();
    wt
}

#[test]
fn a_kept_worktree_whose_next_session_crashed_stays_kept() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (_, id) = lease_new(&env, &repo, &[], &["exec", "--keep", "--", "true"]);
    let wt = worktree_of(&env, &id);
    let ready = env.file("ready");
    let script = format!("{}; exec sleep 600", ready_sh(&ready));
    let bg = env.spawn_lease(&[
        "exec",
        "--adopt",
        wt.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let child = read_pid(&ready);
    let _guard = KillOnDrop(child);
    // Both die without the launcher recording an exit.
    signal(bg.pid(), "KILL");
    wait_until("the launcher to die", || !alive(bg.pid()));
    signal(child, "KILL");
    wait_until("the command to die", || !alive(child));
    assert_eq!(env.record_of(&id)["state"], "active");
    let tree = manifest(&wt);
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "retained", "{v:#}");
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "interrupted");
    assert_eq!(manifest(&wt), tree);
    drop(bg);
}

#[test]
fn scratch_left_by_a_dead_process_is_swept_and_a_live_ones_kept() {
    use std::os::unix::fs::DirBuilderExt;
    let env = TestEnv::new();
    let repo = env.repo();
    let (_, id) = lease_new(&env, &repo, &[], &["exec", "--keep", "--", "true"]);
    let mut gone = env.cmd("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let scratch = env.state.join("scratch");
    let leftover = scratch.join(format!("{id}-verify-{dead}"));
    let live = scratch.join(format!("{id}-verify-{}", std::process::id()));
    for d in [&leftover, &live] {
        fs::DirBuilder::new().mode(0o700).create(d).unwrap();
        fs::write(d.join("HEAD"), "x").unwrap();
    }
    let (o, v) = reap(&env, &[]);
    assert_code(&o, 0);
    assert_eq!(
        v["scratch"],
        serde_json::json!([leftover.to_str().unwrap()])
    );
    assert!(leftover.is_dir(), "a dry run removes nothing");
    let (o, _) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert!(!leftover.exists());
    assert!(live.is_dir(), "a live process's scratch stays");
}

#[test]
fn a_crash_between_a_record_and_its_audit_line_loses_no_line() {
    // Found by scripts/soak (seed 3109916239): a SIGKILL after a record was
    // written and before its audit line was appended left a transition the
    // log never had. The create line of a launcher killed there:
    let env = TestEnv::new();
    let repo = env.repo();
    let id = crash_at(&env, &repo, "record-written", "true");
    assert_eq!(env.record_of(&id)["state"], "planned");
    assert!(
        env.audit().iter().all(|l| l["id"] != id.as_str()),
        "the crash came before the create line"
    );
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "removed");
    assert_eq!(
        states(&assert_transitions(&env, &id)),
        ["planned", "removed"]
    );
    let lines: Vec<_> = env
        .audit()
        .into_iter()
        .filter(|l| l["id"] == id.as_str())
        .collect();
    assert_eq!(lines[0]["recovered"], true, "{lines:#?}");
    assert!(lines[1]["recovered"].is_null(), "{lines:#?}");
    audit_matches_record(&env, &id).unwrap();
    assert_finished(&env, &repo, &id);
}

#[test]
fn a_retire_killed_after_its_first_write_loses_no_audit_line() {
    // The lost line sits between others: a retire killed right after writing
    // `retiring`. The reap that finishes it appends the line first.
    let env = TestEnv::new();
    let repo = env.repo();
    let (o, id) = lease_new(&env, &repo, &[], &["exec", "--keep", "--", "true"]);
    assert_code(&o, 0);
    let o = env.lease().args(["release", &id]).output().unwrap();
    assert_code(&o, 0);
    let o = env
        .lease()
        .env("LEASE_FI_CRASH", "record-written")
        .args(["retire", &id])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), None, "killed: {}", stderr(&o));
    assert_eq!(env.record_of(&id)["state"], "retiring");
    assert!(audit_matches_record(&env, &id).is_err(), "the line is lost");
    let (o, _) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert_eq!(
        states(&assert_transitions(&env, &id)),
        [
            "planned", "active", "terminal", "retained", "terminal", "retiring", "terminal",
            "retiring", "removed"
        ]
    );
    audit_matches_record(&env, &id).unwrap();
    assert_finished(&env, &repo, &id);
}

#[test]
fn a_retire_that_finishes_while_reap_looks_at_it_is_not_an_error() {
    // Found by scripts/soak: reap read a `retiring` record, a running retire
    // then removed the worktree and recorded `removed`, and reap's own
    // `retiring -> removed` failed ("not allowed to go from removed to
    // removed", exit 3). Now reap re-reads the state under the record lock.
    let env = TestEnv::new();
    let repo = env.repo();
    let (o, id) = lease_new(&env, &repo, &[], &["exec", "--keep", "--", "true"]);
    assert_code(&o, 0);
    assert_code(&env.lease().args(["release", &id]).output().unwrap(), 0);
    let pause = env.root.join("pause");
    fs::create_dir(&pause).unwrap();
    let dir = pause.to_str().unwrap();
    let retire = spawn_with(
        &env,
        &[
            ("LEASE_FI_PAUSE", "retire-before-remove"),
            ("LEASE_FI_DIR", dir),
        ],
        &["retire", &id],
    );
    wait_until("the retire to pause before removal", || {
        pause.join("paused-retire-before-remove").exists()
    });
    assert_eq!(env.record_of(&id)["state"], "retiring");
    let reaper = env
        .lease()
        .env("LEASE_FI_PAUSE", "reap-retiring")
        .env("LEASE_FI_DIR", dir)
        .args(["reap", "--apply", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("reap to pause at the retiring record", || {
        pause.join("paused-reap-retiring").exists()
    });
    fs::write(pause.join("resume-retire-before-remove"), "").unwrap();
    assert_code(&retire.wait(), 0);
    assert_eq!(env.record_of(&id)["state"], "removed");
    let before = manifest(&env.state);
    fs::write(pause.join("resume-reap-retiring"), "").unwrap();
    let o = reaper.wait_with_output().unwrap();
    assert_code(&o, 1);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["errors"].as_array().unwrap().is_empty(), "{v:#}");
    assert_eq!(codes(item(&v, &id)), ["retire-in-progress"], "{v:#}");
    assert_eq!(manifest(&env.state), before, "reap changed nothing");
    audit_matches_record(&env, &id).unwrap();
    assert_finished(&env, &repo, &id);
}

/// D7 for the reaper (knock-out K14): an adopted worktree whose launcher died
/// of SIGKILL while its command still runs. A dead launcher pid proves
/// nothing: reap reports the live consumer and leaves the record `active`;
/// once the command exits, the lease is free and reap records `interrupted`.
#[test]
fn dead_launcher_with_a_live_command_is_never_recorded_interrupted() {
    let env = TestEnv::new();
    let repo = env.repo();
    let wt = env.root.join("adopted");
    env.add_worktree(&repo, "adopted", &wt);
    let (bg, child) = env.spawn_holder(&["--adopt", wt.to_str().unwrap()]);
    let guard = KillOnDrop(child);
    let id = env.record()["id"].as_str().unwrap().to_string();
    signal(bg.pid(), "KILL");
    wait_until("the launcher to die", || !alive(bg.pid()));
    let tree = manifest(&wt);
    for _ in 0..2 {
        let (o, v) = reap(&env, &["--apply"]);
        assert_code(&o, 1);
        assert_eq!(item(&v, &id)["disposition"], "held");
        assert_eq!(
            codes(item(&v, &id)),
            ["consumer-alive"],
            "{}",
            item(&v, &id)
        );
        assert_eq!(env.record_of(&id)["state"], "active");
        assert_eq!(manifest(&wt), tree);
    }
    drop(guard);
    wait_until("the command to exit", || !alive(child));
    let (o, _) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert_eq!(env.record_of(&id)["state"], "interrupted");
    assert_eq!(manifest(&wt), tree, "an adopted worktree is never taken");
}

#[test]
fn a_write_that_fails_during_a_reap_exits_3_and_names_the_record() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = crash_at(&env, &repo, "exec-active", "true");
    let wt = worktree_of(&env, &id);
    let tree = manifest(&wt);
    // The first durable write of the reap is the record's move to
    // `interrupted`: it fails with ENOSPC.
    let (o, v) = {
        let o = env
            .lease()
            .env("LEASE_FI_FAIL_WRITE", "1")
            .args(["reap", "--apply", "--json"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (o, v)
    };
    assert_code(&o, 3);
    assert_eq!(v["complete"], true, "discovery read everything: {v:#}");
    assert_eq!(
        v["errors"],
        serde_json::json!([]),
        "no error outside the record"
    );
    let err = item(&v, &id)["error"].as_str().unwrap_or_default();
    assert!(err.contains("No space left on device"), "{v:#}");
    assert_eq!(env.record_of(&id)["state"], "active", "no record moved");
    assert_eq!(manifest(&wt), tree);
    assert!(registered(&env, &repo, &wt));
    // Positive control: the same reap without the fault finishes the record.
    let (o, _) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert_eq!(env.record_of(&id)["state"], "removed");
}

#[test]
fn a_reaper_lock_that_is_a_symlink_is_refused_and_nothing_changes() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = crash_at(&env, &repo, "exec-active", "true");
    let wt = worktree_of(&env, &id);
    let locks = env.state.join("locks");
    fs::create_dir_all(&locks).unwrap();
    let lock = locks.join("reap.lock");
    let _ = fs::remove_file(&lock);
    let target = env.root.join("not-a-lock");
    fs::write(&target, b"keep").unwrap();
    std::os::unix::fs::symlink(&target, &lock).unwrap();
    let before = manifest(&env.state);
    let tree = manifest(&wt);
    for args in [&["reap", "--apply"][..], &["reap"][..]] {
        let o = env.lease().args(args).output().unwrap();
        assert_code(&o, 3);
        assert!(stderr(&o).contains("reap.lock"), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(
        manifest(&env.state),
        before,
        "the refused reaper changed something"
    );
    assert_eq!(manifest(&wt), tree);
    assert_eq!(fs::read(&target).unwrap(), b"keep");
    assert_eq!(env.record_of(&id)["state"], "active");
}

#[test]
fn crash_after_the_worktree_was_added_is_recorded_interrupted_and_removed() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = crash_at(&env, &repo, "exec-added", "true");
    let wt = worktree_of_planned(&env, &id);
    assert_eq!(env.record_of(&id)["state"], "planned");
    assert!(wt.is_dir() && registered(&env, &repo, &wt));
    let before = manifest(&env.state);
    let (o, v) = reap(&env, &[]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "would-finish", "{v:#}");
    assert_eq!(manifest(&env.state), before, "a dry run changes nothing");
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "removed", "{v:#}");
    assert_eq!(
        states(&assert_transitions(&env, &id)),
        ["planned", "interrupted", "retiring", "removed"]
    );
    assert_finished(&env, &repo, &id);
}

/// The state root's manifest without the reaper's own lock file, which an
/// `--apply` creates on its first run.
fn state_of(env: &TestEnv) -> Manifest {
    let mut m = manifest(&env.state);
    m.remove(Path::new("locks/reap.lock"));
    m
}

/// Where a planned record's worktree would be (`<root>/<id>`; the record
/// names no worktree until it turns active).
fn worktree_of_planned(env: &TestEnv, id: &str) -> PathBuf {
    PathBuf::from(env.record_of(id)["root"]["path"].as_str().unwrap()).join(id)
}

#[test]
fn a_planned_record_whose_scene_does_not_add_up_is_held_and_untouched() {
    // A crash between `git worktree add` and the record's `active`, then the
    // scene changed by hand: each mismatch holds with its own code.
    type Scene = fn(&TestEnv, &Path, &Path);
    let cases: [(&str, Scene, &str); 4] = [
        (
            "registered, directory missing",
            |_, _, wt| fs::remove_dir_all(wt).unwrap(),
            "path-identity",
        ),
        (
            "directory present, registration pruned",
            |env, repo, wt| {
                let keep = wt.with_extension("keep");
                fs::rename(wt, &keep).unwrap();
                // lease's lock keeps a prune off: a person unlocked it first.
                env.git(repo, &["worktree", "unlock", wt.to_str().unwrap()]);
                env.git(repo, &["worktree", "prune"]);
                fs::rename(&keep, wt).unwrap();
            },
            "not-registered",
        ),
        (
            "repository gone",
            |env, repo, _| fs::rename(repo, env.root.join("repo-moved")).unwrap(),
            "repo-missing",
        ),
        (
            "a file where the directory was",
            |_, _, wt| {
                fs::remove_dir_all(wt).unwrap();
                fs::write(wt, b"not a worktree").unwrap();
            },
            "path-identity",
        ),
    ];
    for (what, scene, code) in cases {
        let env = TestEnv::new();
        let repo = env.repo();
        let id = crash_at(&env, &repo, "exec-added", "true");
        let wt = worktree_of_planned(&env, &id);
        scene(&env, &repo, &wt);
        let state = state_of(&env);
        for args in [&[][..], &["--apply"][..]] {
            let (o, v) = reap(&env, args);
            assert_code(&o, 1);
            let it = item(&v, &id);
            assert_eq!(it["disposition"], "held", "{what}: {v:#}");
            assert_eq!(codes(it), [code], "{what}: {v:#}");
            assert_eq!(state_of(&env), state, "{what} {args:?}: changed");
        }
        assert_eq!(env.record_of(&id)["state"], "planned", "{what}");
    }
}

#[test]
fn a_planned_record_whose_lease_is_held_is_not_finished() {
    let env = TestEnv::new();
    let repo = env.repo();
    let id = crash_at(&env, &repo, "exec-leased", "true");
    let lease = env.lease_of(&id);
    assert!(!worktree_of_planned(&env, &id).exists());
    // Someone holds the lease shared, as a consumer would.
    let held = LockHolder::new(&env, &lease, false);
    let state = state_of(&env);
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 1);
    assert_eq!(item(&v, &id)["disposition"], "held", "{v:#}");
    assert_eq!(codes(item(&v, &id)), ["consumer-alive"], "{v:#}");
    assert_eq!(state_of(&env), state, "a held reap changed something");
    assert_eq!(env.record_of(&id)["state"], "planned");
    // Positive control: released, the record is finished and its lease file
    // unlinked.
    drop(held);
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "removed", "{v:#}");
    assert!(
        !lease.exists(),
        "the lease file of a finished record is unlinked"
    );
    assert_finished(&env, &repo, &id);
}

#[test]
fn a_planned_record_whose_lease_file_is_gone_is_finished() {
    // Nobody can hold a lease file that does not exist: lease-missing is no
    // reason to keep a record of a worktree that was never added.
    let env = TestEnv::new();
    let repo = env.repo();
    let id = crash_at(&env, &repo, "exec-leased", "true");
    let lease = env.lease_of(&id);
    fs::remove_file(&lease).unwrap();
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "removed", "{v:#}");
    assert_finished(&env, &repo, &id);
}

#[test]
fn a_stopped_retire_is_resumed_only_when_its_lease_is_free() {
    // A retire that crashed before removal leaves the record `retiring`. Reap
    // resumes it only under the lease's exclusive lock, which a dry run never
    // takes (it reads who has the lease open instead).
    let cases: [(&str, &str, &str); 4] = [
        ("held", "retire-in-progress", "retire-in-progress"),
        ("lock-error", "lock-unsupported", "would-finish"),
        ("lease-gone", "lease-missing", "lease-missing"),
        ("lease-replaced", "lease-identity", "lease-identity"),
    ];
    for (case, apply_code, dry) in cases {
        let env = TestEnv::new();
        let repo = env.repo();
        let id = crash_at(&env, &repo, "retire-before-remove", "true");
        let wt = worktree_of(&env, &id);
        let lease = env.lease_of(&id);
        let mut vars = vec![];
        let mut held = None;
        match case {
            "held" => {
                held = Some(LockHolder::new(&env, &lease, false));
            }
            "lock-error" => vars.push(("LEASE_FI_LOCK_ERROR", "1")),
            "lease-gone" => fs::remove_file(&lease).unwrap(),
            _ => {
                // Another file under the lease's name (a new inode).
                let new = lease.with_extension("new");
                fs::write(&new, b"").unwrap();
                fs::rename(&new, &lease).unwrap();
            }
        }
        let (state, tree) = (state_of(&env), manifest(&wt));
        let run = |args: &[&str]| {
            let o = env
                .lease()
                .envs(vars.iter().copied())
                .args(["reap", "--json"])
                .args(args)
                .output()
                .unwrap();
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            (o, v)
        };
        let (o, v) = run(&[]);
        let it = item(&v, &id);
        if dry == "would-finish" {
            assert_code(&o, 0);
            assert_eq!(it["disposition"], dry, "{case}: {v:#}");
        } else {
            assert_eq!(o.status.code(), Some(1), "{case}: {v:#}");
            assert_eq!(codes(it), [dry], "{case}: {v:#}");
        }
        let (o, v) = run(&["--apply"]);
        assert_code(&o, 1);
        assert_eq!(item(&v, &id)["disposition"], "held", "{case}: {v:#}");
        assert_eq!(codes(item(&v, &id)), [apply_code], "{case}: {v:#}");
        assert_eq!(
            state_of(&env),
            state,
            "{case}: a held reap changed something"
        );
        assert_eq!(manifest(&wt), tree, "{case}");
        assert_eq!(env.record_of(&id)["state"], "retiring", "{case}");
        drop(held);
    }
}

#[test]
fn a_worktree_root_scratch_or_repository_that_cannot_be_read_makes_the_reap_incomplete() {
    // No worktree root at all is nothing to scan; one that cannot be listed,
    // or a repository behind a file, is a problem, never "nothing there".
    let env = TestEnv::new();
    let repo = env.repo();
    let (o, id) = lease_new(&env, &repo, &[], &["exec", "--keep", "--", "true"]);
    assert_code(&o, 0);
    let wt = worktree_of(&env, &id);
    // The worktree root and the scratch directory: each absent is nothing
    // to scan, each a file is a problem.
    for name in ["worktrees", "scratch"] {
        let top = env.state.join(name);
        let aside = env.root.join(format!("{name}-aside"));
        fs::rename(&top, &aside).unwrap();
        let (o, v) = reap(&env, &[]);
        assert_code(&o, 0);
        assert_eq!(v["complete"], true, "{name} absent: {v:#}");

        fs::write(&top, b"not a directory").unwrap();
        let state = state_of(&env);
        let (o, v) = reap(&env, &[]);
        assert_code(&o, 3);
        assert_eq!(v["complete"], false, "{name} a file: {v:#}");
        assert!(v["problems"].to_string().contains(name), "{v:#}");
        assert_eq!(state_of(&env), state, "a dry run changes nothing");
        fs::remove_file(&top).unwrap();
        fs::rename(&aside, &top).unwrap();
    }
    assert!(wt.is_dir());
    let state = state_of(&env);

    // The repository's directory replaced by a file: its `.git` cannot be
    // looked up (ENOTDIR), which is not proof that the repository is gone.
    let moved = env.root.join("repo-moved");
    fs::rename(&repo, &moved).unwrap();
    fs::write(&repo, b"not a repository").unwrap();
    let (o, v) = reap(&env, &[]);
    assert_code(&o, 3);
    assert_eq!(v["complete"], false, "{v:#}");
    assert!(
        v["problems"].to_string().contains("cannot read repository"),
        "{v:#}"
    );
    assert_eq!(state_of(&env), state, "a dry run changes nothing");
    // Positive control: back in place, the reap is complete again.
    fs::remove_file(&repo).unwrap();
    fs::rename(&moved, &repo).unwrap();
    let (o, v) = reap(&env, &[]);
    assert_code(&o, 0);
    assert_eq!(v["complete"], true, "{v:#}");
}

#[test]
fn a_stopped_retire_whose_worktree_and_lease_file_are_gone_is_completed() {
    // git removed the worktree and the lease file was unlinked before the
    // crash: nothing is left to protect, the dry run and the apply agree.
    let env = TestEnv::new();
    let repo = env.repo();
    let id = crash_at(&env, &repo, "retire-unlocked", "true");
    let wt = worktree_of(&env, &id);
    env.git(&repo, &["worktree", "remove", wt.to_str().unwrap()]);
    let lease = env.lease_of(&id);
    fs::remove_file(&lease).unwrap();
    let (o, v) = reap(&env, &[]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "would-remove", "{v:#}");
    let (o, v) = reap(&env, &["--apply"]);
    assert_code(&o, 0);
    assert_eq!(item(&v, &id)["disposition"], "removed", "{v:#}");
    let rec = env.record_of(&id);
    assert_eq!(
        rec["tombstone"]["evidence"]["lease_missing"], true,
        "{rec:#}"
    );
    assert_finished(&env, &repo, &id);
}
