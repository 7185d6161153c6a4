//! Compiled for tests only (`#[cfg(test)] mod tests;` in the parent module).
//!
//! The unit tests of the record's nouns: transitions along SPEC's table,
//! bounded details and attempts, ids, owners.

use super::*;

#[test]
fn transitions_follow_the_spec() {
    use State::*;
    let all = [
        Planned,
        Active,
        Terminal,
        Retained,
        Interrupted,
        Retiring,
        Removed,
    ];
    let legal: Vec<(State, State)> = all
        .iter()
        .flat_map(|&a| all.iter().map(move |&b| (a, b)))
        .filter(|&(a, b)| a.can_become(b))
        .collect();
    assert_eq!(legal.len(), 14);
    assert!(!Removed.can_become(Active));
    assert!(
        !Active.can_become(Retiring),
        "active must be proven interrupted first"
    );
    assert!(!Active.can_become(Removed));
    assert!(!Planned.can_become(Terminal));
    assert!(Retiring.can_become(Terminal));
}

fn record() -> Record {
    super::sample_record()
}

#[test]
fn set_state_moves_only_along_the_table_and_logs_each_move() {
    let mut r = record();
    assert_eq!(r.state, State::Planned);
    r.set_state(State::Active).unwrap();
    assert_eq!(r.state, State::Active);
    let moves: Vec<_> = r.pending.iter().map(|e| (e.from, e.to)).collect();
    assert_eq!(moves, [(Some(State::Planned), Some(State::Active))]);
    // Refused: nothing changes, nothing is logged.
    assert!(r.set_state(State::Retiring).is_err());
    assert!(r.set_state(State::Removed).is_err());
    assert_eq!(r.state, State::Active);
    assert_eq!(r.pending.len(), 1);
    r.set_state(State::Interrupted).unwrap();
    r.set_state(State::Retiring).unwrap();
    assert_eq!(r.state, State::Retiring);
    assert_eq!(r.pending.len(), 3);
}

#[test]
fn a_launcher_is_alive_only_as_its_own_unended_process() {
    let me = std::process::id();
    let start = crate::os::process::start_time(me).unwrap();
    let s = Session {
        pid: me,
        start_time: start,
        started_at: now(),
        ended_at: None,
        outcome: None,
        bound: None,
    };
    assert!(s.launcher_alive(crate::os::process::is_alive));
    let ended = Session {
        ended_at: Some(now()),
        ..s.clone()
    };
    assert!(
        !ended.launcher_alive(crate::os::process::is_alive),
        "it recorded its end"
    );
    let reused = Session {
        start_time: start + 1,
        ..s.clone()
    };
    assert!(
        !reused.launcher_alive(crate::os::process::is_alive),
        "same pid, another process"
    );
    let mut r = record();
    assert!(!r.any_launcher_alive(crate::os::process::is_alive));
    r.push_session(ended);
    assert!(!r.any_launcher_alive(crate::os::process::is_alive));
    r.push_session(s);
    assert!(r.any_launcher_alive(crate::os::process::is_alive));
}

#[test]
fn kept_at_exit_is_only_exec_keep() {
    let mut r = Retention {
        owner: Owner::parse("agent:x").unwrap(),
        reason: KEPT_AT_EXIT.into(),
        until: None,
    };
    assert!(r.is_kept_at_exit());
    r.reason = "inspect".into();
    assert!(!r.is_kept_at_exit());
}

#[test]
fn a_record_keeps_the_last_16_attempts_and_counts_the_older_ones() {
    let mut r = record();
    for i in 0..20 {
        r.push_attempt(Attempt {
            at: format!("t{i}"),
            reasons: vec![HoldReason::Dirty],
            detail: vec![format!("d{i}")],
        });
    }
    assert_eq!(r.attempts.len(), MAX_ATTEMPTS);
    assert_eq!(r.attempts[0].at, "t4", "the oldest four were dropped");
    assert_eq!(r.attempts[15].at, "t19");
    assert_eq!(r.attempts_dropped, 4);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["attempts_dropped"], 4);
    // A record written before the count existed still reads, as 0.
    let mut old = serde_json::to_value(record()).unwrap();
    old.as_object_mut().unwrap().remove("attempts_dropped");
    let back: Record = serde_json::from_value(old).unwrap();
    assert_eq!(back.attempts_dropped, 0);
}

#[test]
fn details_are_bounded_at_4_kib_on_a_character_boundary() {
    assert_eq!(bound_detail("short".into()), "short");
    let exact = "x".repeat(MAX_DETAIL_BYTES);
    assert_eq!(
        bound_detail(exact.clone()),
        exact,
        "exactly the bound is kept"
    );
    let long = "é".repeat(MAX_DETAIL_BYTES); // two bytes each
    let cut = bound_detail(long.clone());
    assert!(cut.len() <= MAX_DETAIL_BYTES, "{}", cut.len());
    assert!(cut.ends_with(" bytes cut]"), "{cut}");
    assert!(cut.starts_with("éé"));
    let dropped: usize = cut
        .rsplit_once("... [")
        .unwrap()
        .1
        .trim_end_matches(" bytes cut]")
        .parse()
        .unwrap();
    assert_eq!(cut.find(" ... [").unwrap() + dropped, long.len());
    let many: Vec<String> = (0..100).map(|i| format!("d{i}")).collect();
    let kept = bound_details(many);
    assert_eq!(kept.len(), MAX_DETAILS);
    assert!(kept[MAX_DETAILS - 1].contains("and 36 more"), "{kept:?}");
    let mut r = record();
    r.push_attempt(Attempt {
        at: now(),
        reasons: vec![],
        detail: vec!["y".repeat(10 * MAX_DETAIL_BYTES)],
    });
    assert!(r.attempts[0].detail[0].len() <= MAX_DETAIL_BYTES);
    r.audit("held", vec![], vec!["z".repeat(10 * MAX_DETAIL_BYTES)]);
    assert!(r.pending[0].detail[0].len() <= MAX_DETAIL_BYTES);
}

#[test]
fn owner_parse() {
    assert_eq!(Owner::parse("agent:x").unwrap().name, "x");
    assert!(Owner::parse("agent:").is_err());
    assert!(Owner::parse("nocolon").is_err());
    let long = format!("agent:{}", "x".repeat(MAX_OWNER_BYTES));
    assert!(matches!(Owner::parse(&long), Err(Malformed(_))));
}
