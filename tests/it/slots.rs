//! Slots (SPEC "Provisioned files, disk, and hygiene"): each non-removed
//! record holds the lowest small integer no other one holds, given to the
//! command as `LEASE_SLOT`, race-free under concurrent execs, and free again
//! once its record is removed.

use std::collections::BTreeSet;
use std::fs;

use crate::support::*;

#[test]
fn concurrent_execs_get_distinct_lowest_slots_and_a_removal_frees_its_slot() {
    const N: usize = 8;
    let env = TestEnv::new();
    let repo = env.repo();
    let out = env.root.join("slots");
    fs::create_dir(&out).unwrap();
    // Every command waits on this gate (LOCK_SH) while the test holds it
    // exclusive: all N records are non-removed at the same moment.
    let gate = env.root.join("gate");
    fs::write(&gate, "").unwrap();
    let held = LockHolder::new(&env, &gate, true);
    let script = format!(
        "echo \"$LEASE_SLOT\" > {}/\"$LEASE_ID\" && python3 -c 'import fcntl, sys; fcntl.flock(open(sys.argv[1]), fcntl.LOCK_SH)' {}",
        sh_quote(&out),
        sh_quote(&gate)
    );
    let kids: Vec<_> = (0..N)
        .map(|_| {
            env.lease()
                .current_dir(&repo)
                .args(["exec", "--", "sh", "-c", &script])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut slots: Vec<u32> = Vec::new();
    wait_until("every command wrote its slot", || {
        slots = fs::read_dir(&out)
            .unwrap()
            .flatten()
            .filter_map(|e| {
                complete_line(&fs::read_to_string(e.path()).unwrap_or_default())
                    .map(|l| l.parse().unwrap())
            })
            .collect();
        slots.len() == N
    });
    drop(held);
    for k in kids {
        let o = k.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let distinct: BTreeSet<u32> = slots.iter().copied().collect();
    assert_eq!(
        distinct,
        (0..N as u32).collect::<BTreeSet<u32>>(),
        "slots {slots:?}"
    );
    for r in env.records() {
        assert_eq!(r["state"], "removed");
        let id = r["id"].as_str().unwrap();
        let seen: u32 = fs::read_to_string(out.join(id))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(r["slot"], seen, "the record keeps the slot its command saw");
    }
    // Every record is removed: slot 0 is free again.
    let o = env.exec_sh(&repo, "test \"$LEASE_SLOT\" = 0");
    assert_code(&o, 0);
}

#[test]
fn a_slot_held_by_a_live_record_is_never_given_again() {
    let env = TestEnv::new();
    let repo = env.repo();
    let (first, _) = env.kept(&repo, "one", "true");
    let (second, _) = env.kept(&repo, "two", "true");
    assert_eq!(env.record_of(&first)["slot"], 0);
    assert_eq!(env.record_of(&second)["slot"], 1);
    // Retiring the first frees 0; the second keeps 1.
    assert_code(&env.lease().args(["retire", &first]).output().unwrap(), 0);
    let o = env.exec_sh(&repo, "test \"$LEASE_SLOT\" = 0");
    assert_code(&o, 0);
    let o = env
        .lease()
        .current_dir(&repo)
        .args([
            "exec",
            "--keep",
            "--",
            "sh",
            "-c",
            "test \"$LEASE_SLOT\" = 0",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let o = env
        .lease()
        .current_dir(&repo)
        .args([
            "exec",
            "--keep",
            "--",
            "sh",
            "-c",
            "test \"$LEASE_SLOT\" = 2",
        ])
        .output()
        .unwrap();
    assert_code(&o, 0);
}

/// The slot lock serializes creations: an exec paused after choosing its
/// slot (and before writing its record) keeps a second exec waiting on
/// `locks/slots.lock` (seen blocked in /proc/locks), so the two never
/// share a slot. Without the lock the second would choose the same one.
#[test]
fn a_creation_waits_for_another_s_slot_choice() {
    let env = TestEnv::new();
    let repo = env.repo();
    let fi = env.root.join("fi");
    fs::create_dir(&fi).unwrap();
    let out = env.root.join("slots");
    fs::create_dir(&out).unwrap();
    let script = format!("echo \"$LEASE_SLOT\" > {}/\"$LEASE_ID\"", sh_quote(&out));
    let first = env
        .lease()
        .current_dir(&repo)
        .env("LEASE_FI_PAUSE", "slot-chosen")
        .env("LEASE_FI_DIR", &fi)
        .args(["exec", "--keep", "--", "sh", "-c", &script])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    read_pid(&fi.join("paused-slot-chosen"));
    let second = env
        .lease()
        .current_dir(&repo)
        .args(["exec", "--keep", "--", "sh", "-c", &script])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lock = env.state.join("locks/slots.lock");
    let ino = std::os::unix::fs::MetadataExt::ino(&fs::metadata(&lock).unwrap());
    wait_until("the second exec blocked on the slot lock, or done", || {
        let blocked = fs::read_to_string("/proc/locks")
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains("->") && l.contains(&format!(":{ino} ")));
        blocked || fs::read_dir(&out).unwrap().count() > 0
    });
    fs::write(fi.join("resume-slot-chosen"), "").unwrap();
    for k in [first, second] {
        let o = k.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let slots: BTreeSet<u64> = env
        .records()
        .iter()
        .map(|r| r["slot"].as_u64().unwrap())
        .collect();
    assert_eq!(slots, [0, 1].into_iter().collect(), "{:#?}", env.records());
}
