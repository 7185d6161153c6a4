//! `lease hold` and `lease release`: retention round trips, a hold on an
//! active record, and a hold refused while a retire runs.

use crate::reap::{assert_transitions, lease_new, spawn_with, states, worktree_of};
use crate::support::*;
use std::fs;

#[test]
fn hold_and_release_round_trip() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (_, id) = lease_new(
        &env,
        &repo,
        &[],
        &["exec", "--", "sh", "-c", "echo n > notes"],
    );
    assert_eq!(env.record_of(&id)["state"], "terminal");
    let run = |args: &[&str]| env.lease().args(args).output().unwrap();
    // Refusals change nothing.
    let unchanged = env.record_of(&id);
    let lines = env.audit().len();
    for bad in [
        &["hold", &id, "--reason", "r", "--until", "yesterday"][..],
        &[
            "hold",
            &id,
            "--reason",
            "r",
            "--until",
            "2020-01-01T00:00:00Z",
        ],
        &["hold", &id, "--reason", "r", "--owner", "nobody"],
        &["hold", &id, "--reason", " "],
        &["hold", "ffffffffffff", "--reason", "r"],
        &["release", &id],
    ] {
        assert_code(&run(bad), 2);
    }
    assert_eq!(env.record_of(&id), unchanged);
    assert_eq!(env.audit().len(), lines);
    // Hold.
    let o = run(&[
        "hold",
        &id[..8],
        "--reason",
        "review",
        "--owner",
        "person:ann",
        "--until",
        "7d",
        "--json",
    ]);
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (&v["from"], &v["state"]),
        (&"terminal".into(), &"retained".into())
    );
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "retained");
    assert_eq!(rec["retention"]["owner"]["name"], "ann");
    assert_eq!(rec["retention"]["reason"], "review");
    let until = humantime::parse_rfc3339(rec["retention"]["until"].as_str().unwrap()).unwrap();
    let days = until
        .duration_since(std::time::SystemTime::now())
        .unwrap()
        .as_secs()
        / 3600;
    assert!((166..=168).contains(&days), "about 7 days: {days} h");
    // Retire and reap hold it and change nothing else.
    let snap = Snapshot::take(&env, &repo, &id);
    let o = run(&["retire", "--json", &id]);
    assert_code(&o, 1);
    assert_eq!(reasons(&o), ["retained"]);
    assert_eq!(disposition(&o), "retained");
    snap.assert_held_unchanged(&env, &repo, "retained");
    // Release.
    let o = run(&["release", &id]);
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains("retained -> terminal"),
        "{}",
        stdout(&o)
    );
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "terminal");
    assert!(rec["retention"].is_null());
    assert_code(&run(&["release", &id]), 2);
    let path = assert_transitions(&env, &id);
    assert_eq!(
        states(&path),
        ["planned", "active", "terminal", "retained", "terminal"]
    );
    let events: Vec<String> = env
        .audit()
        .iter()
        .filter(|l| l["id"] == id.as_str())
        .map(|l| l["event"].as_str().unwrap().to_string())
        .collect();
    assert!(events.contains(&"hold".to_string()) && events.contains(&"release".to_string()));
    // A removed record cannot be held; a corrupt one is exit 3.
    let (_, gone) = lease_new(&env, &repo, &[], &["exec", "--", "true"]);
    assert_code(&run(&["hold", &gone, "--reason", "r"]), 2);
    let file = env.state.join("records").join(format!("{id}.json"));
    fs::write(&file, b"{}").unwrap();
    assert_code(&run(&["hold", &id, "--reason", "r"]), 3);
    assert_code(&run(&["release", &id]), 3);
    assert_eq!(fs::read(&file).unwrap(), b"{}");
}

#[test]
fn a_hold_on_an_active_record_takes_effect_when_it_turns_terminal() {
    let env = TestEnv::new();
    let repo = env.repo();
    let ready = env.file("ready");
    let script = format!("{}; exec sleep 600", ready_sh(&ready));
    let bg = env.spawn_lease(&[
        "exec",
        "--repo",
        repo.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let child = read_pid(&ready);
    let _guard = KillOnDrop(child);
    let id = env.record()["id"].as_str().unwrap().to_string();
    let o = env
        .lease()
        .args(["hold", &id, "--reason", "keep for review", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["pending"], true);
    assert_eq!(env.record_of(&id)["state"], "active");
    signal(child, "TERM");
    let _ = bg.wait();
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "retained", "exec did not retire it");
    assert_eq!(rec["retention"]["reason"], "keep for review");
    assert!(worktree_of(&env, &id).is_dir());
    assert_eq!(
        states(&assert_transitions(&env, &id)),
        ["planned", "active", "terminal", "retained"]
    );
}

#[test]
fn hold_is_refused_while_a_retire_runs() {
    let env = TestEnv::new();
    let repo = env.repo();
    let pause = env.root.join("pause");
    fs::create_dir(&pause).unwrap();
    // exec's own retire pauses after archiving, under the exclusive lock.
    let bg = spawn_with(
        &env,
        &[
            ("LEASE_FI_PAUSE", "archive-written"),
            ("LEASE_FI_DIR", pause.to_str().unwrap()),
        ],
        &[
            "exec",
            "--repo",
            repo.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "echo w > w.txt && git add w.txt && git commit -qm work",
        ],
    );
    wait_until("the retire to pause", || {
        pause.join("paused-archive-written").exists()
    });
    let id = env.record()["id"].as_str().unwrap().to_string();
    let before = env.record_of(&id);
    assert_eq!(before["state"], "terminal");
    let o = env
        .lease()
        .args(["hold", &id, "--reason", "too late"])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(stderr(&o).contains("retire-in-progress"), "{}", stderr(&o));
    assert_eq!(env.record_of(&id), before, "nothing changed");
    fs::write(pause.join("resume-archive-written"), "").unwrap();
    assert_code(&bg.wait(), 0);
    assert_eq!(env.record_of(&id)["state"], "removed");
}
