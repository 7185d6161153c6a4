//! `lease adopt PATH`: an orphan registration becomes an adopted, terminal
//! record without running anything, so `lease retire` can take it.

use std::fs;

use crate::support::*;

#[test]
fn adopt_records_an_orphan_so_retire_can_take_it() {
    let env = TestEnv::new();
    let repo = env.repo();
    let wt = env.root.join("side");
    env.add_worktree(&repo, "side", &wt);
    let wt_s = wt.to_str().unwrap();
    // Unrecorded: retire holds it and says how to record it.
    let o = env.lease().args(["retire", wt_s]).output().unwrap();
    assert_code(&o, 1);
    assert!(
        stdout(&o).contains(&format!("next: lease adopt {wt_s} && lease retire {wt_s}")),
        "{}",
        stdout(&o)
    );
    // A directory git does not list is refused, nothing recorded.
    let plain = env.root.join("plain");
    fs::create_dir(&plain).unwrap();
    let o = env
        .lease()
        .args(["adopt", plain.to_str().unwrap()])
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(env.records().is_empty());

    let o = env
        .lease()
        .args(["adopt", wt_s, "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["state"], "terminal");
    assert_eq!(r["origin"], "adopted");
    let id = r["id"].as_str().unwrap().to_string();
    let rec = env.record_of(&id);
    assert_eq!(rec["state"], "terminal");
    assert_eq!(rec["origin"], "adopted");
    assert_eq!(rec["worktree"]["path"], wt_s);
    assert!(rec["outcome"].is_null(), "no command ran");
    let sessions = rec["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1);
    assert!(sessions[0]["ended_at"].is_string());
    assert!(audit_chain_ok(&env));
    // A second adopt names the record and changes nothing.
    let o = env.lease().args(["adopt", wt_s]).output().unwrap();
    assert_code(&o, 2);
    assert!(stderr(&o).contains(&id), "{}", stderr(&o));
    assert_eq!(env.record_of(&id), rec);
    // Reap reports it and never takes it (lease did not allocate it).
    let o = env
        .lease()
        .args(["reap", "--apply", "--json"])
        .output()
        .unwrap();
    assert!(
        wt.is_dir(),
        "reap left the adopted worktree: {}",
        stdout(&o)
    );
    // retire takes it through the gates.
    let o = env.lease().args(["retire", &id]).output().unwrap();
    assert_code(&o, 0);
    assert!(!wt.exists());
    assert_eq!(env.record_of(&id)["state"], "removed");
}

#[test]
fn reap_hints_lease_adopt_for_an_orphan_registration() {
    let env = TestEnv::new();
    let repo = env.repo();
    // One record, so reap knows the repository.
    assert_code(
        &env.lease()
            .current_dir(&repo)
            .args(["exec", "--keep", "--", "true"])
            .output()
            .unwrap(),
        0,
    );
    let wt = env.root.join("orphan");
    env.add_worktree(&repo, "orphan", &wt);
    let o = env.lease().args(["reap", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let orphan = v["orphans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["path"] == wt.to_str().unwrap())
        .unwrap_or_else(|| panic!("orphan reported: {v:#}"));
    assert!(
        orphan["next"]
            .as_str()
            .unwrap()
            .contains(&format!("lease adopt {}", wt.display())),
        "{orphan}"
    );
    assert_eq!(orphan["past_grace"], false);
    // Following the hint works while another record is live: only a record
    // of this same worktree would refuse it.
    let o = env
        .lease()
        .args(["adopt", wt.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(env.records().len(), 2);
}
