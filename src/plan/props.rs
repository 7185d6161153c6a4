//! Compiled for tests only (`#[cfg(test)] mod props;` in the parent module).
//!
//! Property tests (proptest) of plan's gates: every unknown holds, removal
//! only when every piece is clear, the reclaim order.

use super::*;
use crate::model::evidence::StatusEntry;
use crate::model::record::Owner;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;

proptest! {
    /// `reclaim_order` is a permutation, largest estimate first, equal
    /// estimates in scan order.
    #[test]
    fn reclaim_order_is_a_largest_first_permutation(est in vec(0u64..5, 0..12)) {
        let order = reclaim_order(&est);
        let mut seen = order.clone();
        seen.sort_unstable();
        prop_assert_eq!(seen, (0..est.len()).collect::<Vec<_>>());
        for w in order.windows(2) {
            prop_assert!(est[w[0]] > est[w[1]] || (est[w[0]] == est[w[1]] && w[0] < w[1]));
        }
    }
}

const UID: u32 = 7;
const WT: (u64, u64) = (1, 2);
const LEASE: (u64, u64) = (1, 9);

fn seen(mode: u32, (dev, ino): (u64, u64), uid: u32, nlink: u64) -> Seen {
    Seen {
        dev,
        ino,
        uid,
        mode,
        nlink,
    }
}
fn good_dir() -> Seen {
    seen(libc::S_IFDIR | 0o700, WT, UID, 2)
}
fn good_lease() -> Seen {
    seen(libc::S_IFREG | 0o600, LEASE, UID, 1)
}

/// Everything gates 1 to 5 look at.
#[derive(Debug, Clone)]
struct Evidence {
    state: State,
    launcher_alive: bool,
    retained: bool,
    path: PathEvidence,
    lease_before: Option<Seen>,
    lock: LockOutcome,
    fd_after: Option<Seen>,
    name_after: Option<Seen>,
    procs: ProcEvidence,
    content: ContentEvidence,
    inventory: Inventory,
}

/// Runs every gate and returns every reason that held.
fn decide(ev: &Evidence) -> Vec<HoldReason> {
    let retention = ev.retained.then(|| Retention {
        owner: Owner {
            kind: "person".into(),
            name: "ann".into(),
        },
        reason: "review".into(),
        until: None,
    });
    let mut held: Vec<HoldReason> = Vec::new();
    held.extend(
        gate_state(ev.state, ev.launcher_alive)
            .err()
            .map(|h| h.reason),
    );
    held.extend(
        gate_retention(ev.state, retention.as_ref())
            .err()
            .map(|h| h.reason),
    );
    held.extend(gate_path(WT, UID, &ev.path).err().map(|h| h.reason));
    held.extend(
        gate_lease(
            LEASE,
            UID,
            ev.lease_before,
            &ev.lock,
            ev.fd_after,
            ev.name_after,
        )
        .err()
        .map(|h| h.reason),
    );
    held.extend(gate_processes(&ev.procs).err().map(|h| h.reason));
    for holds in [
        gate_content(&ev.content),
        gate_inventory(&ev.inventory, &[]),
    ] {
        held.extend(holds.err().into_iter().flatten().map(|h| h.reason));
    }
    held
}

/// The oracle, written from SPEC rather than from the gates: is every
/// piece of evidence the one a safe removal needs?
fn all_clear(ev: &Evidence) -> bool {
    let state_ok = match ev.state {
        State::Terminal => true,
        State::Interrupted => !ev.retained,
        State::Active => !ev.launcher_alive && !ev.retained,
        _ => false,
    };
    let path_ok = ev.path.seen == Some(good_dir())
        && ev.path.canonical
        && ev.path.linked_back
        && matches!(ev.path.lock, LockSeen::Unlocked | LockSeen::Ours)
        && ev.path.listed
        && !ev.path.is_main
        && !ev.path.cwd_inside;
    let lease_ok = [ev.lease_before, ev.fd_after, ev.name_after]
        .iter()
        .all(|s| *s == Some(good_lease()))
        && ev.lock == LockOutcome::Acquired;
    let procs_ok = ev.procs.users.is_empty()
        && !(ev.procs.strict && ev.procs.traversable && ev.procs.unaudited > 0);
    let content_ok = ev.content.hidden.is_empty()
        && ev.content.ops.is_empty()
        && ev
            .content
            .status
            .iter()
            .all(|e| &e.xy == b"!!" && is_rebuildable(&e.path, &ev.content.rebuildable));
    let i = &ev.inventory;
    let inventory_ok = i.mounts.is_empty()
        && i.special.is_empty()
        && i.unreadable.is_empty()
        && i.nested.is_empty()
        && i.not_writable.is_empty()
        && i.pinned.is_empty();
    state_ok && path_ok && lease_ok && procs_ok && content_ok && inventory_ok
}

/// Mostly the good value, sometimes another.
fn mostly<T: Clone + std::fmt::Debug + 'static>(
    good: T,
    others: Vec<T>,
) -> impl Strategy<Value = T> {
    prop_oneof![3 => Just(good), 1 => select(others)]
}

fn some_paths() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop_oneof![
        3 => Just(vec![]),
        1 => vec(select(vec![b"a".to_vec(), b"target/x".to_vec(), b"\xff\n".to_vec()]), 1..3),
    ]
}

fn path_evidence() -> impl Strategy<Value = PathEvidence> {
    let seen = mostly(
        Some(good_dir()),
        vec![
            None,
            Some(seen(libc::S_IFLNK | 0o777, WT, UID, 1)),
            Some(seen(libc::S_IFDIR | 0o700, (1, 3), UID, 2)),
            Some(seen(libc::S_IFDIR | 0o700, WT, 0, 2)),
        ],
    );
    let flags = (
        mostly(true, vec![false]),
        mostly(true, vec![false]),
        mostly(
            LockSeen::Unlocked,
            vec![
                LockSeen::Ours,
                LockSeen::Other(String::new()),
                LockSeen::Other("usb".into()),
                LockSeen::Lease {
                    id: "0".repeat(32),
                    root: "/elsewhere".into(),
                },
            ],
        ),
        mostly(true, vec![false]),
        mostly(false, vec![true]),
        mostly(false, vec![true]),
    );
    (seen, flags).prop_map(
        |(seen, (canonical, linked_back, lock, listed, is_main, cwd_inside))| PathEvidence {
            seen,
            canonical,
            linked_back,
            lock,
            listed,
            is_main,
            cwd_inside,
        },
    )
}

fn lease_seen() -> impl Strategy<Value = Option<Seen>> {
    mostly(
        Some(good_lease()),
        vec![
            None,
            Some(seen(libc::S_IFREG | 0o600, (1, 10), UID, 1)),
            Some(seen(libc::S_IFREG | 0o600, LEASE, UID, 2)),
            Some(seen(libc::S_IFREG | 0o644, LEASE, UID, 1)),
            Some(seen(libc::S_IFREG | 0o600, LEASE, 0, 1)),
            Some(seen(libc::S_IFIFO | 0o600, LEASE, UID, 1)),
        ],
    )
}

fn evidence() -> impl Strategy<Value = Evidence> {
    let gate1 = (
        mostly(
            State::Terminal,
            vec![
                State::Interrupted,
                State::Active,
                State::Planned,
                State::Retained,
                State::Retiring,
                State::Removed,
            ],
        ),
        mostly(false, vec![true]),
        mostly(false, vec![true]),
    );
    let gate3 = (
        lease_seen(),
        mostly(
            LockOutcome::Acquired,
            vec![LockOutcome::Busy, LockOutcome::Error("ENOLCK".into())],
        ),
        lease_seen(),
        lease_seen(),
    );
    let procs = (
        mostly(vec![], vec![vec![(42, "cwd".to_string())]]),
        mostly(0usize, vec![1, 5]),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(users, unaudited, traversable, strict)| ProcEvidence {
            users,
            unaudited,
            traversable,
            strict,
        });
    let status = vec(
        (
            select(vec![*b"!!", *b"??", *b" M", *b"A "]),
            select(vec![
                b"target/".to_vec(),
                b"target/debug/x".to_vec(),
                b".env".to_vec(),
                b"src/a".to_vec(),
            ]),
        )
            .prop_map(|(xy, path)| StatusEntry { xy, path }),
        0..3,
    );
    let content = (
        status,
        some_paths(),
        mostly(vec![], vec![vec!["MERGE_HEAD".to_string()]]),
        mostly(vec![], vec![vec![b"target".to_vec()]]),
    )
        .prop_map(|(status, hidden, ops, rebuildable)| ContentEvidence {
            status,
            hidden,
            ops,
            rebuildable,
            filtered: Vec::new(),
            provisioned: Vec::new(),
        });
    let inventory = (
        some_paths(),
        some_paths(),
        some_paths(),
        some_paths(),
        some_paths(),
        some_paths(),
    )
        .prop_map(
            |(mounts, special, unreadable, nested, not_writable, pinned)| Inventory {
                mounts,
                special,
                unreadable,
                nested,
                not_writable,
                pinned,
                ..Inventory::default()
            },
        );
    (gate1, path_evidence(), gate3, procs, content, inventory).prop_map(
        |(
            (state, launcher_alive, retained),
            path,
            (lease_before, lock, fd_after, name_after),
            procs,
            content,
            inventory,
        )| {
            Evidence {
                state,
                launcher_alive,
                retained,
                path,
                lease_before,
                lock,
                fd_after,
                name_after,
                procs,
                content,
                inventory,
            }
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn removes_only_when_every_piece_is_clear(ev in evidence()) {
        let held = decide(&ev);
        prop_assert_eq!(held.is_empty(), all_clear(&ev), "held {:?} for {:?}", held, ev);
    }

    #[test]
    fn every_unknown_holds_with_its_reason(ev in evidence()) {
        let held = decide(&ev);
        let mut unknown: Vec<HoldReason> = Vec::new();
        if ev.path.seen.is_none() {
            unknown.push(HoldReason::PathIdentity);
        }
        if ev.lease_before.is_none() {
            unknown.push(HoldReason::LeaseMissing);
        } else if let LockOutcome::Error(_) = ev.lock
            && ev.lease_before == Some(good_lease())
        {
            unknown.push(HoldReason::LockUnsupported);
        }
        if !ev.inventory.unreadable.is_empty() {
            unknown.push(HoldReason::Uninventoriable);
        }
        if ev.procs.users.is_empty() && ev.procs.strict && ev.procs.traversable && ev.procs.unaudited > 0 {
            unknown.push(HoldReason::Unprovable);
        }
        for reason in unknown {
            prop_assert!(held.contains(&reason), "{:?} missing from {:?} for {:?}", reason, held, ev);
        }
    }
}
