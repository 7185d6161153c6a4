//! Host hooks (SPEC "Hosts that lease does not start"): which process a
//! worktree created from a Claude Code hook is bound to.
//!
//! A hook is a short-lived child of the host; the worktree must live as
//! long as the host's session, so `lease create --bind-pid PID` binds its
//! keeper to the host process, never to the hook. Claude Code runs a
//! command hook directly as its child, in a session of its own
//! (`detached: true` in Node's `child_process`; Claude Code's hooks
//! reference: "command hooks run in their own session without a
//! controlling terminal"), in shell form through `sh -c`, and sets
//! `CLAUDE_PID` to its own pid in the hook's environment (Claude Code
//! 2.1.214 and later, its environment-variables reference) and
//! `CLAUDE_PROJECT_DIR` for every hook.
//!
//! [`bound_process`] decides from what [`observe`] read:
//!
//! 1. `CLAUDE_PID` set: that process, if it is a strict ancestor of this
//!    one. A value inherited from another session (a Claude Code that
//!    started the shell this hook was typed into) names no ancestor of a
//!    hook started elsewhere, and is refused rather than trusted.
//! 2. Else, only inside Claude Code (`CLAUDE_PROJECT_DIR` set), the parent
//!    of this process's session leader: the hook's shell when the shell
//!    stayed (dash forks for a sole command), `lease` itself when the shell
//!    exec'd it or there was no shell (exec form). It holds whatever sits
//!    between, as long as nothing called setsid(2) again. Refused when this
//!    process has a controlling terminal (a hook of Claude Code has none,
//!    so the session is a terminal's), when the leader is not this process
//!    or an ancestor, and when the leader's parent is pid 1 or unknown (the
//!    leader was orphaned: the host is gone).
//! 3. Else (run by hand, outside Claude Code): refused, with the commands
//!    that bind a worktree to a process explicitly.

use std::fmt;

/// How [`bound_process`] found the host process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindFrom {
    /// `CLAUDE_PID`, checked to be an ancestor.
    ClaudePid,
    /// The parent of the hook's session leader.
    SessionLeader,
}

/// The host process a hook's worktree is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Its pid, for `lease create --bind-pid`.
    pub pid: u32,
    /// How it was found.
    pub from: BindFrom,
}

/// What the process tree looked like from the hook ([`observe`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcView {
    /// This process, then its parent, grandparent, ... up to pid 1.
    pub chain: Vec<u32>,
    /// This process's session id (the leader's pid).
    pub session: u32,
    /// The session leader's parent, if the leader is still there.
    pub session_parent: Option<u32>,
    /// This process has a controlling terminal.
    pub has_tty: bool,
}

/// The environment [`bound_process`] reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookEnv {
    /// `CLAUDE_PID`, if set.
    pub claude_pid: Option<String>,
    /// `CLAUDE_PROJECT_DIR` is set: the hook runs inside Claude Code.
    pub in_claude: bool,
}

impl HookEnv {
    /// Reads `CLAUDE_PID` and `CLAUDE_PROJECT_DIR` from this process's
    /// environment.
    pub fn from_env() -> HookEnv {
        HookEnv {
            claude_pid: std::env::var_os("CLAUDE_PID").map(|v| v.to_string_lossy().into_owned()),
            in_claude: std::env::var_os("CLAUDE_PROJECT_DIR").is_some(),
        }
    }
}

/// Why [`bound_process`] found no host process: one line, with what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindRefusal(pub String);

impl fmt::Display for BindRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The hint every refusal ends with.
const BY_HAND: &str = "to bind a worktree to a process yourself, run `lease create --bind-pid PID`, or set CLAUDE_PID=PID (an ancestor of this hook)";

/// Reads the process tree around this process: its ancestry, session,
/// the session leader's parent, and whether it has a controlling terminal
/// (`/proc/self/stat`, proc(5)).
pub fn observe() -> ProcView {
    let me = std::process::id();
    let ids = crate::os::procfs::tree_ids(me);
    let session = ids.map_or(0, |t| t.session);
    ProcView {
        chain: crate::os::procfs::ancestry(me),
        session,
        session_parent: (session != 0)
            .then(|| crate::os::procfs::tree_ids(session).map(|t| t.ppid))
            .flatten(),
        has_tty: ids.is_some_and(|t| t.tty_nr != 0),
    }
}

/// Decides which process a worktree created by a Claude Code hook is bound
/// to (the rules are in this module's header). Pure: `env` and `view` are
/// what the hook saw.
///
/// # Errors
///
/// [`BindRefusal`] when no rule names a process, saying which and how to
/// bind by hand.
pub fn bound_process(env: &HookEnv, view: &ProcView) -> Result<Bound, BindRefusal> {
    if let Some(raw) = &env.claude_pid {
        return claude_pid_ancestor(raw, view).map(|pid| Bound {
            pid,
            from: BindFrom::ClaudePid,
        });
    }
    if !env.in_claude {
        return Err(BindRefusal(format!(
            "not run by Claude Code (neither CLAUDE_PID nor CLAUDE_PROJECT_DIR is set); {BY_HAND}"
        )));
    }
    session_leader_parent(view).map(|pid| Bound {
        pid,
        from: BindFrom::SessionLeader,
    })
}

/// Rule 1: `CLAUDE_PID` must be a pid above 1 that is a strict ancestor of
/// this process.
fn claude_pid_ancestor(raw: &str, view: &ProcView) -> Result<u32, BindRefusal> {
    let pid =
        raw.parse::<u32>().ok().filter(|&p| p > 1).ok_or_else(|| {
            BindRefusal(format!("CLAUDE_PID=`{raw}` is not a process id; {BY_HAND}"))
        })?;
    if !view.chain.iter().skip(1).any(|&p| p == pid) {
        return Err(BindRefusal(format!(
            "CLAUDE_PID={pid} is not an ancestor of this hook (left over from another session?); {BY_HAND}"
        )));
    }
    Ok(pid)
}

/// Rule 2: the parent of this process's session leader, when the session
/// is not a terminal's, the leader is this process or an ancestor, and the
/// leader still has its parent.
fn session_leader_parent(view: &ProcView) -> Result<u32, BindRefusal> {
    if view.has_tty {
        return Err(BindRefusal(format!(
            "this hook has a controlling terminal, so it was not started by Claude Code (which runs hooks in a session without one); {BY_HAND}"
        )));
    }
    if view.session == 0 {
        // proc(5): the session id reads 0 when the leader is in an outer
        // PID namespace (a container whose init was started in a session
        // outside it); the leader cannot be seen, so neither can its parent.
        return Err(BindRefusal(format!(
            "this hook's session leader is outside this PID namespace (its session id reads 0), so its host cannot be found; {BY_HAND}"
        )));
    }
    if !view.chain.contains(&view.session) {
        return Err(BindRefusal(format!(
            "this hook's session leader (pid {}) is not one of its ancestors; {BY_HAND}",
            view.session
        )));
    }
    match view.session_parent {
        Some(p) if p > 1 => Ok(p),
        _ => Err(BindRefusal(format!(
            "the parent of this hook's session leader (pid {}) is gone; {BY_HAND}",
            view.session
        ))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// claude (100) -> sh (200, session leader) -> lease (300).
    fn shell_form() -> ProcView {
        ProcView {
            chain: vec![300, 200, 100, 50, 1],
            session: 200,
            session_parent: Some(100),
            has_tty: false,
        }
    }

    fn in_claude() -> HookEnv {
        HookEnv {
            claude_pid: None,
            in_claude: true,
        }
    }

    fn with_pid(p: &str) -> HookEnv {
        HookEnv {
            claude_pid: Some(p.into()),
            in_claude: true,
        }
    }

    #[test]
    fn claude_pid_names_the_host_when_it_is_an_ancestor() {
        let b = bound_process(&with_pid("100"), &shell_form()).unwrap();
        assert_eq!(
            b,
            Bound {
                pid: 100,
                from: BindFrom::ClaudePid
            }
        );
    }

    #[test]
    fn claude_pid_that_is_no_ancestor_is_refused() {
        let e = bound_process(&with_pid("4242"), &shell_form()).unwrap_err();
        assert!(e.0.contains("not an ancestor"), "{e}");
        // This process itself is not its own host.
        let e = bound_process(&with_pid("300"), &shell_form()).unwrap_err();
        assert!(e.0.contains("not an ancestor"), "{e}");
    }

    #[test]
    fn claude_pid_that_is_no_pid_is_refused() {
        for raw in ["", "abc", "-5", "1", "0", "12 13"] {
            let e = bound_process(&with_pid(raw), &shell_form()).unwrap_err();
            assert!(e.0.contains("is not a process id"), "{raw}: {e}");
        }
    }

    #[test]
    fn the_session_leaders_parent_is_the_host_in_shell_and_exec_form() {
        assert_eq!(
            bound_process(&in_claude(), &shell_form()).unwrap(),
            Bound {
                pid: 100,
                from: BindFrom::SessionLeader
            }
        );
        // Exec form (or a shell that exec'd lease): lease leads its session.
        let exec_form = ProcView {
            chain: vec![300, 100, 50, 1],
            session: 300,
            session_parent: Some(100),
            has_tty: false,
        };
        assert_eq!(bound_process(&in_claude(), &exec_form).unwrap().pid, 100);
    }

    #[test]
    fn outside_claude_code_nothing_is_bound() {
        let env = HookEnv::default();
        let e = bound_process(&env, &shell_form()).unwrap_err();
        assert!(e.0.contains("not run by Claude Code"), "{e}");
        assert!(e.0.contains("lease create --bind-pid PID"), "{e}");
    }

    #[test]
    fn a_terminals_session_is_not_a_hooks() {
        let view = ProcView {
            has_tty: true,
            ..shell_form()
        };
        let e = bound_process(&in_claude(), &view).unwrap_err();
        assert!(e.0.contains("controlling terminal"), "{e}");
    }

    #[test]
    fn a_session_leader_outside_the_ancestry_is_refused() {
        let view = ProcView {
            session: 777,
            ..shell_form()
        };
        let e = bound_process(&in_claude(), &view).unwrap_err();
        assert!(e.0.contains("not one of its ancestors"), "{e}");
    }

    #[test]
    fn an_orphaned_session_leader_binds_nothing() {
        for parent in [None, Some(1), Some(0)] {
            let view = ProcView {
                session_parent: parent,
                ..shell_form()
            };
            let e = bound_process(&in_claude(), &view).unwrap_err();
            assert!(e.0.contains("is gone"), "{parent:?}: {e}");
        }
    }

    #[test]
    fn observe_sees_this_process_first_without_a_terminal_check_of_its_own() {
        let v = observe();
        let me = crate::os::procfs::tree_ids(std::process::id()).unwrap();
        assert_eq!(v.chain[0], std::process::id());
        assert_eq!(v.session, me.session);
        assert_eq!(v.has_tty, me.tty_nr != 0);
        // 0 when the leader is in an outer PID namespace (CI runs the suite
        // in one): nothing to read about it then.
        if v.session == 0 {
            assert_eq!(v.session_parent, None);
        } else if let Some(leader) = crate::os::procfs::tree_ids(v.session) {
            assert_eq!(v.session_parent, Some(leader.ppid));
        }
    }

    #[test]
    fn a_session_leader_in_an_outer_pid_namespace_is_refused_and_says_so() {
        let view = ProcView {
            session: 0,
            session_parent: None,
            ..shell_form()
        };
        let e = bound_process(&in_claude(), &view).unwrap_err();
        assert!(e.0.contains("outside this PID namespace"), "{e}");
    }
}
