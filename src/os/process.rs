//! The only module that touches raw OS process APIs: signal dispositions,
//! core limits, subreaper, pidfds, waiting, and process start times.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use rustix::process::{Pid, Signal};

/// Signals the launcher forwards when they were sent to it with `kill`
/// (SPEC/Commands, exec "Signals").
pub const FORWARDED: [i32; 7] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
];

/// Returns true if and only if `sig` is currently ignored (`SIG_IGN`) in this process.
///
/// signal-hook's handlers would un-ignore a signal the caller ignored (`nohup`,
/// `cmd &`), and an exec'd child would then get the default action
/// (signal(7): a caught signal is reset to its default by execve(2), an
/// ignored one stays ignored), so ignored signals are never registered.
pub fn is_ignored(sig: i32) -> bool {
    let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a null `act` only queries the disposition; `old` is a valid,
    // zeroed out-pointer of the right type, and `sig` is a plain signal number.
    let rc = unsafe { libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) };
    if rc != 0 {
        return false;
    }
    // SAFETY: sigaction returned 0, so it filled `old`.
    let old = unsafe { old.assume_init() };
    old.sa_sigaction == libc::SIG_IGN
}

/// Clears (`inherited`) or sets close-on-exec on `fd` (fcntl(2) `F_SETFD`
/// `FD_CLOEXEC`): a descriptor without it is inherited across execve(2).
pub fn set_inherited(fd: impl AsFd, inherited: bool) -> io::Result<()> {
    let flags = if inherited {
        rustix::io::FdFlags::empty()
    } else {
        rustix::io::FdFlags::CLOEXEC
    };
    rustix::io::fcntl_setfd(fd, flags).map_err(Into::into)
}

/// Makes this process a child subreaper (prctl(2) `PR_SET_CHILD_SUBREAPER`),
/// so orphaned descendants are re-parented to it instead of to init.
pub fn become_subreaper() -> io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).map_err(Into::into)
}

/// Opens a pidfd for `pid` (Linux 5.3+), so signals cannot hit a reused pid.
pub fn pidfd(pid: u32) -> io::Result<OwnedFd> {
    let pid = pid_of(pid)?;
    rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).map_err(Into::into)
}

/// Sends signal `sig` to the process behind `pidfd`.
pub fn pidfd_signal(pidfd: impl AsFd, sig: i32) -> io::Result<()> {
    let sig =
        Signal::from_named_raw(sig).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    rustix::process::pidfd_send_signal(pidfd, sig).map_err(Into::into)
}

/// Waits until the process behind `pidfd` has exited: a pidfd polls
/// readable (`POLLIN`) once its process terminates (pidfd_open(2)), for a
/// process that is not our child too. Retries on `EINTR`.
pub fn wait_exited(pidfd: &OwnedFd) -> io::Result<()> {
    use rustix::event::{PollFd, PollFlags, poll};
    loop {
        let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
        match poll(&mut fds, None) {
            Ok(n) if n > 0 => return Ok(()),
            Ok(_) | Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Starts `program` with `args` detached from the caller, for a keeper
/// (SPEC "Hosts that lease does not start"): in a new session
/// (setsid(2), so a host that kills the hook's process group or session
/// does not reach it), with cwd `/`, stdin, stdout and stderr on
/// `/dev/null` (a host waits for the hook's pipes to close), without the
/// variables named in `drop_env`, and with every inherited descriptor
/// closed at exec but `ready`, the write end of the readiness pipe, which
/// it inherits under the same number. Returns the child.
///
/// Descriptors are closed at exec with `close_range(2)`
/// `CLOSE_RANGE_CLOEXEC` (Linux 5.11), else `F_SETFD` one by one up to the
/// descriptor limit; std's own exec-error pipe keeps working either way.
pub fn spawn_detached(
    program: &std::path::Path,
    args: &[std::ffi::OsString],
    drop_env: &[&str],
    ready: &OwnedFd,
) -> io::Result<std::process::Child> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let keep = ready.as_raw_fd();
    if keep < 3 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    let mut cmd = std::process::Command::new(program); // forbid: allow Command::new (the keeper is lease itself, re-executed)
    cmd.args(args)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for k in drop_env {
        cmd.env_remove(k);
    }
    let max = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(1024)
        .min(1 << 20) as libc::c_int;
    // SAFETY: the closure runs in the forked child before exec and calls
    // only async-signal-safe syscalls (setsid, fcntl, close_range) on
    // plain integers; it allocates nothing and touches no lock.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::fcntl(keep, libc::F_SETFD, 0) < 0 {
                return Err(io::Error::last_os_error());
            }
            let cloexec = |lo: libc::c_int, hi: libc::c_int| {
                if lo > hi {
                    return;
                }
                let rc = libc::syscall(
                    libc::SYS_close_range,
                    lo as libc::c_uint,
                    hi as libc::c_uint,
                    libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
                );
                if rc != 0 {
                    for fd in lo..=hi.min(max) {
                        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                    }
                }
            };
            cloexec(3, keep - 1);
            cloexec(keep + 1, libc::c_int::MAX);
            Ok(())
        });
    }
    cmd.spawn()
}

/// A pipe whose two ends are close-on-exec and numbered 3 or above (so
/// neither can land on stdin, stdout or stderr of a child, even when this
/// process was started with one of them closed): `(read, write)`.
pub fn pipe_above_stdio() -> io::Result<(std::fs::File, OwnedFd)> {
    let (r, w) = std::io::pipe()?;
    let r = rustix::io::fcntl_dupfd_cloexec(OwnedFd::from(r), 3)?;
    let w = rustix::io::fcntl_dupfd_cloexec(OwnedFd::from(w), 3)?;
    Ok((std::fs::File::from(r), w))
}

/// Takes ownership of descriptor `fd`, which this process inherited on
/// purpose (a keeper's readiness pipe, [`spawn_detached`]), and makes it
/// close-on-exec. Fails with `EBADF` for 0, 1, 2 or a descriptor that is
/// not open, and with `EINVAL` for one that is not a pipe.
pub fn take_inherited(fd: i32) -> io::Result<std::fs::File> {
    if fd < 3 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: fcntl(F_GETFD) on a plain integer only asks whether it is open.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is open (checked above), was inherited for this one
    // purpose, and nothing else in this process owns it.
    let owned = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let st = rustix::fs::fstat(&owned)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Fifo {
        std::mem::forget(owned);
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    set_inherited(&owned, false)?;
    Ok(std::fs::File::from(owned))
}

/// How a waited-for process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Code(i32),
    /// It died of this signal.
    Signal(i32),
}

/// Waits for any child, retrying on `EINTR`; returns the pid and how it ended,
/// or `None` when there is no child left (`ECHILD`).
pub fn wait_any() -> io::Result<Option<(u32, Ended)>> {
    loop {
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some((pid, status))) => {
                let ended = if let Some(sig) = status.terminating_signal() {
                    Ended::Signal(sig)
                } else {
                    Ended::Code(status.exit_status().unwrap_or(0))
                };
                return Ok(Some((pid.as_raw_nonzero().get() as u32, ended)));
            }
            Ok(None) => continue,
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::CHILD) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    }
}

/// Replaces this process with the program `argv[0]` names, found as
/// execvp(3) finds it, with arguments `argv` and this process's environment
/// with each of `set` added or replaced. Returns only if no exec
/// succeeded.
///
/// The search is glibc's (posix/execvpe.c): a name with a `/` is run as it
/// is; a bare name is tried in each entry of `PATH` in order (an empty
/// entry is the current directory; `/bin:/usr/bin`, glibc's `_CS_PATH`,
/// when `PATH` is unset), going on past `ENOENT`, `ENOTDIR`, `ESTALE`,
/// `ENODEV`, `ETIMEDOUT` and `EACCES`. Unlike glibc's `execvp`, which
/// std's `CommandExt::exec` calls, a file the kernel refuses to run
/// (`ENOEXEC`: no `#!` and no binary format it knows) is never handed to
/// `/bin/sh` (`maybe_script_execute`): it ends the search with `ENOEXEC`,
/// as the `posix_spawnp` of `lease exec`'s spawn does, so both exit 126
/// for it rather than running it as a shell script.
///
/// As std's `exec` (its `do_exec`): the environment is the process's as a
/// map (the last of duplicate names wins) with `set` laid over it; SIGPIPE
/// is set back to its default (std ignores it at start-up) right before
/// the first `execve` and restored if every one fails; the signal mask is
/// inherited as it is (std 1.95 no longer empties it).
///
/// # Errors
/// The returned error: `NotFound` (`ENOENT`) when no candidate exists
/// (exit 127); `EACCES` when one existed but could not be run; else the
/// error of the `execve` that ended the search (`ENOEXEC` among them), or
/// of the last candidate (glibc's rule); `InvalidInput` for an empty
/// `argv` or a NUL byte in an argument or a variable.
pub fn exec_no_shell(
    argv: &[std::ffi::OsString],
    set: &[(&std::ffi::OsStr, &std::ffi::OsStr)],
) -> io::Error {
    use std::ffi::{CString, OsString};
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let c = |b: Vec<u8>| CString::new(b).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput));
    let Some(program) = argv.first().map(|p| p.as_bytes()) else {
        return io::Error::from(io::ErrorKind::InvalidInput);
    };
    if program.is_empty() {
        return io::Error::from_raw_os_error(libc::ENOENT);
    }
    let mut vars: std::collections::BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    for (k, v) in set {
        vars.insert(k.to_os_string(), v.to_os_string());
    }
    let mut env: Vec<CString> = Vec::with_capacity(vars.len());
    for (k, v) in vars {
        let mut kv = k.into_vec();
        kv.push(b'=');
        kv.extend_from_slice(v.as_bytes());
        match c(kv) {
            Ok(kv) => env.push(kv),
            Err(e) => return e,
        }
    }
    let args: Vec<CString> = match argv.iter().map(|a| c(a.as_bytes().to_vec())).collect() {
        Ok(a) => a,
        Err(e) => return e,
    };
    let searched = !program.contains(&b'/');
    let candidates: Vec<CString> = if searched {
        let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/bin:/usr/bin"));
        let mut v = Vec::new();
        for dir in path.as_bytes().split(|b| *b == b':') {
            let mut full = dir.to_vec();
            if !full.is_empty() {
                full.push(b'/');
            }
            full.extend_from_slice(program);
            match c(full) {
                Ok(f) => v.push(f),
                Err(e) => return e,
            }
        }
        v
    } else {
        vec![args[0].clone()]
    };
    let ptrs = |v: &[CString]| -> Vec<*const libc::c_char> {
        v.iter()
            .map(|s| s.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    };
    let (argp, envp) = (ptrs(&args), ptrs(&env));
    let mut dfl = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    let mut old_pipe = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: `dfl` is a zeroed sigaction (empty mask, no flags) given
    // SIG_DFL; sigaction reads it and fills `old_pipe`, both valid pointers
    // of the right type, for a plain signal number.
    let saved = unsafe {
        (*dfl.as_mut_ptr()).sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGPIPE, dfl.as_ptr(), old_pipe.as_mut_ptr()) == 0
    };
    let mut found_unrunnable = false;
    let mut stopped = false;
    let mut last = io::Error::from_raw_os_error(libc::ENOENT);
    for cand in &candidates {
        // SAFETY: `cand` is a NUL-terminated path; `argp` and `envp` are
        // null-terminated arrays of pointers into `args` and `env`, which
        // outlive the call. execve returns only on failure.
        unsafe { libc::execve(cand.as_ptr(), argp.as_ptr(), envp.as_ptr()) };
        last = io::Error::last_os_error();
        match last.raw_os_error() {
            Some(libc::EACCES) if searched => found_unrunnable = true,
            Some(libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT)
                if searched => {}
            _ => {
                stopped = true;
                break;
            }
        }
    }
    if saved {
        // SAFETY: `old_pipe` was filled by the sigaction above.
        unsafe { libc::sigaction(libc::SIGPIPE, old_pipe.as_ptr(), std::ptr::null_mut()) };
    }
    if found_unrunnable && !stopped {
        return io::Error::from_raw_os_error(libc::EACCES);
    }
    last
}

/// Dies of signal `sig` the way the command did: core dumps off, the default
/// disposition restored, the signal raised. Returns only if the signal did not
/// kill this process (for example a signal whose default is to ignore).
pub fn die_of(sig: i32) {
    let _ = rustix::process::setrlimit(
        rustix::process::Resource::Core,
        rustix::process::Rlimit {
            current: Some(0),
            maximum: None,
        },
    );
    let _ = signal_hook::low_level::emulate_default_handler(sig);
}

/// Kills this process with SIGKILL (fault injection's crash points).
pub fn kill_self() -> ! {
    let _ = rustix::process::kill_process(rustix::process::getpid(), Signal::KILL);
    unreachable!("SIGKILL cannot be caught")
}

/// Returns the start time of process `pid` in clock ticks since boot
/// (field 22 of `/proc/<pid>/stat`, proc(5)), or `None` if it does not exist.
///
/// A pid plus its start time names one process; a pid alone can be reused.
pub fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|(_, start)| start)
}

fn stat(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat)
}

/// Parses the state (field 3) and start time (field 22) out of a
/// `/proc/<pid>/stat` line. The command name (field 2) may hold spaces and
/// parentheses, so fields are counted after the last `)`.
fn parse_stat(stat: &[u8]) -> Option<(char, u64)> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 22 is the 19th after the state.
    Some((state, fields.nth(18)?.parse().ok()?))
}

/// Returns true if and only if process `pid` runs and started at `start`.
/// A zombie (`Z`) or dying (`X`) process has released every descriptor and
/// lock, so it does not count as alive.
pub fn is_alive(pid: u32, start: u64) -> bool {
    stat(pid).is_some_and(|(state, st)| st == start && state != 'Z' && state != 'X')
}

/// Returns this process's effective uid.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Returns the name of user `uid` from `/etc/passwd`, or the number as text.
pub fn user_name(uid: u32) -> String {
    if let Ok(name) = std::env::var("USER")
        && !name.is_empty()
    {
        return name;
    }
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                let mut f = l.split(':');
                let name = f.next()?;
                let _pw = f.next()?;
                (f.next()? == uid.to_string()).then(|| name.to_string())
            })
        })
        .unwrap_or_else(|| uid.to_string())
}

/// What two threads may share, as kcmp(2) compares it (`KCMP_FILES`,
/// `KCMP_FS` in the kernel's `include/uapi/linux/kcmp.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shared {
    /// The descriptor table (`CLONE_FILES`).
    Files = 2,
    /// The cwd, root and umask (`CLONE_FS`).
    Fs = 3,
}

/// Returns `Some(true)` if threads `a` and `b` (ids in this process's pid
/// namespace) share `what`, `Some(false)` if they do not, and `None` if the
/// kernel cannot say (no kcmp(2), `EPERM` under a seccomp filter or
/// ptrace rules, a thread gone).
pub fn shares(a: u32, b: u32, what: Shared) -> Option<bool> {
    let a = libc::pid_t::try_from(a).ok()?;
    let b = libc::pid_t::try_from(b).ok()?;
    // SAFETY: kcmp(2) with KCMP_FILES or KCMP_FS takes two pids and a type
    // and reads no memory of ours; the two trailing arguments are unused.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_kcmp,
            a,
            b,
            what as libc::c_int,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    match rc {
        0 => Some(true),
        1..=3 => Some(false),
        _ => None,
    }
}

fn pid_of(pid: u32) -> io::Result<Pid> {
    i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))
}

/// Runs `f` on a new thread whose credentials are `nobody`'s (uid and gid
/// 65534, no supplementary groups), so unit tests run as root can judge
/// what an ordinary user's lease sees: Linux keeps credentials per thread
/// (the raw `setresuid` syscall, unlike glibc's, changes one thread), and a
/// thread that drops every uid 0 also loses its capabilities
/// (capabilities(7), "Effect of user ID changes on capabilities"). The
/// thread then ends; no other thread is affected.
///
/// Returns `None` (the caller says SKIPPED) when this process is not root,
/// or when uid 65534 is not mapped in its user namespace. A panic in `f`
/// is resumed on the caller's thread.
#[cfg(test)]
pub(crate) fn as_nobody<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    if euid() != 0 {
        return None;
    }
    let joined = std::thread::spawn(move || {
        let nobody_gid = rustix::process::Gid::from_raw(65534);
        let nobody_uid = rustix::process::Uid::from_raw(65534);
        rustix::thread::set_thread_groups(&[]).ok()?;
        rustix::thread::set_thread_res_gid(nobody_gid, nobody_gid, nobody_gid).ok()?;
        rustix::thread::set_thread_res_uid(nobody_uid, nobody_uid, nobody_uid).ok()?;
        Some(f())
    })
    .join();
    // A panic in `f` (an assertion, an overflow) is the test's failure.
    joined.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Runs `f` as an ordinary user: on a thread with `nobody`'s credentials
/// ([`as_nobody`]) when this process is root, else on a thread of this
/// process as it is (already an ordinary user). Returns `None` (the caller
/// records a skip) only when root cannot become uid 65534 here.
#[cfg(test)]
pub(crate) fn as_ordinary_user<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    if euid() == 0 {
        return as_nobody(f);
    }
    let joined = std::thread::spawn(f).join();
    Some(joined.unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stat_skips_hostile_comm() {
        let line =
            b"42 (a) b) (c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_stat(line), Some(('S', 987654)));
        let zombie = b"42 (x) Z 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_stat(zombie), Some(('Z', 5)));
    }

    #[test]
    fn a_nobody_thread_is_nobody_and_the_rest_stay_root() {
        if euid() != 0 {
            crate::testing::skip("needs root: changes a thread's uid");
            return;
        }
        let Some(ids) = as_nobody(|| (euid(), rustix::process::getegid().as_raw())) else {
            crate::testing::skip("uid 65534 is not mapped here");
            return;
        };
        assert_eq!(ids, (65534, 65534));
        assert_eq!(euid(), 0, "only the helper's thread changed");
    }

    #[test]
    fn kcmp_tells_a_shared_table_from_an_unshared_one() {
        let me = std::process::id();
        if shares(me, me, Shared::Files).is_none() {
            crate::testing::skip("kcmp(2) is not available here");
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
            let before = (shares(me, tid, Shared::Files), shares(me, tid, Shared::Fs));
            // SAFETY: this thread only compares tables and waits; nothing
            // else of the test relies on it seeing later descriptors.
            unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FILES) }.unwrap();
            let after = shares(me, tid, Shared::Files);
            tx.send((before, after)).unwrap();
            let _ = done_rx.recv();
        });
        let ((files, fs), after) = rx.recv().unwrap();
        let _ = done_tx.send(());
        t.join().unwrap();
        assert_eq!(
            (files, fs),
            (Some(true), Some(true)),
            "a thread shares both"
        );
        assert_eq!(
            after,
            Some(false),
            "unshare(CLONE_FILES) gave it its own table"
        );
    }

    #[test]
    fn own_start_time_is_known_and_alive() {
        let me = std::process::id();
        let start = start_time(me).expect("own /proc entry");
        assert!(is_alive(me, start));
        assert!(!is_alive(me, start + 1));
    }
}

/// How a command run by [`run_bounded`] ended.
#[derive(Debug)]
pub struct Bounded {
    /// Its exit status; `None` only if it could not be waited for.
    pub status: Option<std::process::ExitStatus>,
    /// True if it outlived the bound and its process group was killed.
    pub timed_out: bool,
    /// The last [`STDERR_TAIL`] bytes it wrote to stderr.
    pub stderr: Vec<u8>,
}

/// How much of a bounded command's stderr is kept (its end), in bytes.
pub const STDERR_TAIL: usize = 4096;

/// Runs `cmd` in a process group of its own (stdin and stdout `/dev/null`,
/// stderr captured), waits at most `bound`, and then sends SIGKILL to the
/// whole group (kill(2) with a negative pid): a command never outlives its
/// bound, nor do the children it left in its group once it has exited.
/// Used for the operator's teardown (SPEC "Provisioned files, disk, and
/// hygiene": a time bound).
///
/// # Errors
/// The spawn's error (no such program, not executable).
pub fn run_bounded(
    mut cmd: std::process::Command,
    bound: std::time::Duration,
) -> io::Result<Bounded> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    let pgid = child.id();
    let mut err = child.stderr.take();
    let (etx, erx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut tail: Vec<u8> = Vec::new();
        let mut buf = [0u8; 4096];
        while let Some(Ok(n)) = err.as_mut().map(|e| e.read(&mut buf)) {
            if n == 0 {
                break;
            }
            tail.extend_from_slice(&buf[..n]);
            let extra = tail.len().saturating_sub(STDERR_TAIL);
            tail.drain(..extra);
        }
        let _ = etx.send(tail);
    });
    // The leader's exit is waited for without reaping it (`WNOWAIT`): while
    // it is a zombie its pid, and so the group's id, cannot be reused, so
    // the group kill below never reaches another process group.
    let (tx, rx) = std::sync::mpsc::channel();
    let leader = Pid::from_raw(pgid as i32);
    std::thread::spawn(move || {
        if let Some(p) = leader {
            let _ = tx.send(rustix::process::waitid(
                rustix::process::WaitId::Pid(p),
                rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT,
            ));
        }
    });
    let kill_group = || {
        if let Some(p) = leader {
            let _ = rustix::process::kill_process_group(p, Signal::KILL);
        }
    };
    let timed_out = rx.recv_timeout(bound).is_err();
    // On time or not, what is left in the group goes (a command's children
    // would otherwise keep its stderr open, and the tail would never end).
    kill_group();
    let status = child.wait().ok();
    let stderr = erx
        .recv_timeout(std::time::Duration::from_secs(1))
        .unwrap_or_default();
    Ok(Bounded {
        status,
        timed_out,
        stderr,
    })
}
