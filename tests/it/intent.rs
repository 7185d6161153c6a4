//! `lease retire --when-free` (SPEC "Hosts that lease does not start"):
//! now when the lease is free; else an intent that the last consumer to
//! leave (a launcher at exit, a keeper when its process ends) or the next
//! reap completes; never over a gate.

use std::fs;
use std::process::Output;

use crate::keeper::{bound, create, created};
use crate::support::*;

fn when_free(env: &TestEnv, target: &str) -> Output {
    env.lease()
        .args(["retire", "--when-free", "--json", target])
        .output()
        .unwrap()
}

#[test]
fn when_free_on_a_free_lease_retires_now() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (id, wt) = env.kept(&repo, "done", "true");
    let o = when_free(&env, wt.to_str().unwrap());
    assert_code(&o, 0);
    assert_eq!(disposition(&o), "removed");
    assert!(!wt.exists());
    assert!(env.record_of(&id).get("intent").is_none());
}

#[test]
fn a_when_free_intent_under_a_keeper_is_pending_and_completed_when_the_bound_process_exits() {
    let env = TestEnv::new();
    let repo = env.repo();
    let host = bound(&env);
    let (id, wt, keeper) = created(&create(&env, &repo, host.pid(), &["--json"]));
    let _k = KillOnDrop(keeper);
    let o = when_free(&env, &id);
    assert_code(&o, 0);
    assert_eq!(disposition(&o), "pending");
    let human = env
        .lease()
        .args(["retire", "--when-free", &id])
        .output()
        .unwrap();
    assert_code(&human, 0);
    assert!(
        stdout(&human).starts_with("pending `"),
        "{}",
        stdout(&human)
    );
    let rec = env.record_of(&id);
    assert_eq!(rec["intent"]["kind"], "retire-when-free");
    assert_eq!(rec["state"], "active");
    assert!(wt.is_dir(), "still in use: kept");
    signal(host.pid(), "KILL");
    drop(host);
    wait_until("the keeper to retire the tree", || {
        env.record_of(&id)["state"] == "removed" && !alive(keeper)
    });
    assert!(!wt.exists());
}

#[test]
fn a_when_free_intent_is_completed_by_the_launcher_at_exit() {
    let env = TestEnv::new();
    let repo = env.repo();
    // A resumed session retires nothing at exit by itself: only the intent.
    let (id, wt) = env.kept(&repo, "resumed", "true");
    let (launcher, child) = env.spawn_holder(&["--resume", &id]);
    let o = when_free(&env, &id);
    assert_code(&o, 0);
    assert_eq!(disposition(&o), "pending");
    assert_eq!(env.record_of(&id)["intent"]["kind"], "retire-when-free");
    assert!(wt.is_dir());
    signal(child, "TERM");
    let out = launcher.wait();
    assert!(
        stderr(&out).contains("removed `"),
        "the launcher retired at exit: {}",
        stderr(&out)
    );
    assert_eq!(env.record_of(&id)["state"], "removed");
    assert!(!wt.exists());
}

#[test]
fn a_when_free_intent_is_completed_by_the_next_reap_even_for_an_adopted_tree() {
    let env = TestEnv::new();
    let repo = env.repo();
    let wt = env.root.join("adopted");
    env.add_worktree(&repo, "adopted", &wt);
    // A daemon keeps the lease after the command and its launcher are gone.
    let ready = env.fresh_file("daemon");
    let o = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--adopt", wt.to_str().unwrap(), "--", "sh", "-c"])
        .arg(daemon_script(&ready))
        .output()
        .unwrap();
    assert_code(&o, 0);
    let daemon = read_pid(&ready);
    let _d = KillOnDrop(daemon);
    let id = env.record()["id"].as_str().unwrap().to_string();
    assert_eq!(env.record_of(&id)["state"], "terminal");
    let o = when_free(&env, wt.to_str().unwrap());
    assert_code(&o, 0);
    assert_eq!(disposition(&o), "pending", "{}", stdout(&o));
    // Still held: the reap keeps it.
    let r = env.lease().args(["reap", "--apply"]).output().unwrap();
    assert_code(&r, 1);
    assert!(wt.is_dir());
    signal(daemon, "KILL");
    wait_until("the daemon to die", || !alive(daemon));
    let r = env
        .lease()
        .args(["reap", "--apply", "--json"])
        .output()
        .unwrap();
    assert_code(&r, 0);
    assert_eq!(env.record_of(&id)["state"], "removed", "{}", stdout(&r));
    assert!(!wt.exists());
}

#[test]
fn an_intent_never_overrides_a_gate() {
    let env = TestEnv::new();
    let repo = env.repo();
    let host = bound(&env);
    let (id, wt, keeper) = created(&create(&env, &repo, host.pid(), &["--json"]));
    let _k = KillOnDrop(keeper);
    // Work in the tree while the lease is held: held now, and no intent.
    fs::write(wt.join("notes.txt"), "work\n").unwrap();
    let snap = Snapshot::take(&env, &repo, &id);
    let o = when_free(&env, &id);
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["untracked"]);
    snap.assert_held_unchanged(&env, &repo, "untracked");
    assert!(env.record_of(&id).get("intent").is_none());
    // Clean now: the intent is recorded; the tree gets work afterwards.
    fs::remove_file(wt.join("notes.txt")).unwrap();
    let o = when_free(&env, &id);
    assert_code(&o, 0);
    assert_eq!(disposition(&o), "pending");
    let list = env.lease().arg("list").output().unwrap();
    assert!(
        stdout(&list).contains("retire when free: pending"),
        "{}",
        stdout(&list)
    );
    fs::write(wt.join("notes.txt"), "more work\n").unwrap();
    signal(host.pid(), "KILL");
    drop(host);
    wait_until("the keeper to end", || !alive(keeper));
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "terminal", "held, not removed");
    assert!(wt.join("notes.txt").is_file(), "the work is still there");
    assert_eq!(rec["intent"]["kind"], "retire-when-free", "still pending");
    let last = rec["attempts"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["reasons"], serde_json::json!(["untracked"]), "{last}");
    let show = env.lease().args(["show", &id]).output().unwrap();
    assert!(
        stdout(&show).contains("held: untracked"),
        "{}",
        stdout(&show)
    );
}
