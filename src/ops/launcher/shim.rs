//! The git PATH shim's decision, for the compiled shim `lease-git-shim`
//! (shim/README.md "`git`: the PATH shim"): the steps of the script
//! shim/git, in one process and without a shell.
//!
//! # Theory of operation
//! 1. Loop guard: `LEASE_SHIM_PID` equal to this process's pid means a
//!    shim exec'd this process's own image again (a "real" git that execs
//!    the shim, or a `LEASE_GIT` naming a shim): refused, never a loop.
//!    Every exec the shim makes exports `LEASE_SHIM_PID` (the script does
//!    the same, so the two shims catch each other).
//! 2. Inside a lease with `LEASE_GIT` set (`lease exec` exports it), the
//!    real git is `LEASE_GIT`, unsearched: held ([`holds`]: `LEASE_FD`, all
//!    digits, is open here on the file `LEASE_FILE` names, same device and
//!    inode) runs it, otherwise it runs under `lease join`.
//! 3. Otherwise the real git is found as the script finds it
//!    ([`real_git`]), then run outside a lease, or held or joined as in 2.
//!
//! The decision is a [`Step`]; the face (`cli::shim`) carries it out.
//! Nothing here prints.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What the shim saw of its process: the environment variables it reads
/// (an empty value counts as unset, as `${VAR:-}` in the script) and its
/// pid and `argv[0]`.
#[derive(Debug, Clone, Default)]
pub struct ShimEnv {
    /// This process's pid.
    pub pid: u32,
    /// `argv[0]`: the path the shim was run by, or its bare name when it
    /// was found on `PATH`.
    pub argv0: OsString,
    /// `LEASE_SHIM_PID`: the pid of the process a shim last exec'd from.
    pub shim_pid: Option<OsString>,
    /// `LEASE_FILE`: the lease file of the session, when inside one.
    pub lease_file: Option<OsString>,
    /// `LEASE_GIT`: the real git.
    pub lease_git: Option<OsString>,
    /// `LEASE_FD`: the descriptor the lease was inherited at.
    pub lease_fd: Option<OsString>,
    /// `PATH`.
    pub path: Option<OsString>,
}

impl ShimEnv {
    /// Reads this process's pid, its `argv[0]` and the environment.
    pub fn from_process(argv0: OsString) -> ShimEnv {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        ShimEnv {
            pid: std::process::id(),
            argv0,
            shim_pid: var(SHIM_PID_VAR),
            lease_file: var("LEASE_FILE"),
            lease_git: var("LEASE_GIT"),
            lease_fd: var("LEASE_FD"),
            path: var("PATH"),
        }
    }
}

/// What the shim does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Exec this git with the shim's arguments: outside a lease, or
    /// holding it.
    Run(PathBuf),
    /// Run this git with the shim's arguments under `lease join --`: inside
    /// a lease whose descriptor this process does not hold.
    Join(PathBuf),
    /// Refuse with this message (exit 125): a loop, or no real git.
    Fail(String),
}

/// Decides what the shim does (the module docs' steps).
pub fn decide(env: &ShimEnv) -> Step {
    if env.shim_pid.as_deref() == Some(env.pid.to_string().as_ref()) {
        return Step::Fail(
            "the real git leads back to this shim; set LEASE_GIT to a real git".into(),
        );
    }
    let held = |file: &OsStr| env.lease_fd.as_deref().is_some_and(|fd| holds(fd, file));
    if let (Some(file), Some(git)) = (&env.lease_file, &env.lease_git) {
        let git = PathBuf::from(git);
        return if held(file) {
            Step::Run(git)
        } else {
            Step::Join(git)
        };
    }
    let git = match real_git(env) {
        Ok(g) => g,
        Err(m) => return Step::Fail(m),
    };
    match &env.lease_file {
        None => Step::Run(git),
        Some(file) if held(file) => Step::Run(git),
        Some(_) => Step::Join(git),
    }
}

/// True if descriptor `fd` (decimal digits only, as the script's `case`
/// takes it) is open in this process on the file `lease_file` names:
/// `/proc/self/fd/<fd>` and `lease_file` are the same device and inode
/// ([`crate::os::fs::same_file`], the script's `-ef`).
pub fn holds(fd: &OsStr, lease_file: &OsStr) -> bool {
    if fd.is_empty() || !fd.as_bytes().iter().all(u8::is_ascii_digit) {
        return false;
    }
    let mut link = OsString::from("/proc/self/fd/");
    link.push(fd);
    crate::os::fs::same_file(Path::new(&link), Path::new(lease_file))
}

/// The real git when `LEASE_GIT` does not settle it, as the script finds
/// it: `LEASE_GIT` if set (executable and no shim, else refused); else
/// the first `git` on `PATH` after the shim's own directory
/// ([`own_dir`]), then (if none follows it, or the shim's directory is
/// not on `PATH`) the first anywhere. Only absolute entries that are
/// directories count (an empty or relative one is never a trusted git);
/// a candidate must be a regular file this process may execute and must
/// not carry the shim marker ([`crate::git::is_lease_shim`]), so two
/// shim directories cannot loop. `Err` is the refusal's message.
pub fn real_git(env: &ShimEnv) -> Result<PathBuf, String> {
    if let Some(g) = &env.lease_git {
        let g = Path::new(g);
        if crate::os::fs::executable(g) && !crate::git::is_lease_shim(g) {
            return Ok(g.to_path_buf());
        }
        return Err(format!(
            "LEASE_GIT `{}` is not an executable git",
            g.display()
        ));
    }
    let path = env.path.clone().unwrap_or_default();
    let own = own_dir(&env.argv0, &path);
    for after_own_only in [true, false] {
        let mut seen = !after_own_only;
        for entry in path.as_bytes().split(|b| *b == b':') {
            let entry = Path::new(OsStr::from_bytes(entry));
            if !entry.is_absolute() {
                continue;
            }
            let Some(phys) = physical_dir(entry) else {
                continue;
            };
            if own.as_ref() == Some(&phys) {
                seen = true;
                continue;
            }
            if !seen {
                continue;
            }
            let cand = entry.join("git");
            if cand.is_file()
                && crate::os::fs::executable(&cand)
                && !crate::git::is_lease_shim(&cand)
            {
                return Ok(cand);
            }
        }
    }
    Err(format!(
        "no git found on PATH after `{}`; set LEASE_GIT",
        own.as_deref()
            .map_or("the shim".into(), |d| d.display().to_string())
    ))
}

/// The shim's own directory, physically (symlinks resolved, as `cd -P`):
/// the directory part of `argv0` when it has a `/` (the script's `$0`);
/// else the first absolute directory on `path` holding an executable file
/// of that name (where `execvp` found it: a binary's `argv[0]` is the bare
/// name it was called by, where a script's `$0` is the path the kernel
/// opened).
pub fn own_dir(argv0: &OsStr, path: &OsStr) -> Option<PathBuf> {
    let bytes = argv0.as_bytes();
    if let Some(slash) = bytes.iter().rposition(|b| *b == b'/') {
        let dir = if slash == 0 { b"/" } else { &bytes[..slash] };
        return physical_dir(Path::new(OsStr::from_bytes(dir)));
    }
    if bytes.is_empty() {
        return None;
    }
    path.as_bytes()
        .split(|b| *b == b':')
        .map(|e| Path::new(OsStr::from_bytes(e)))
        .filter(|e| e.is_absolute())
        .find(|e| {
            let p = e.join(argv0);
            p.is_file() && crate::os::fs::executable(&p)
        })
        .and_then(physical_dir)
}

/// Replaces this process with `program` and `args` (`argv[0]` is
/// `program`, as the script's `exec`), in this process's environment
/// unchanged (the caller set `LEASE_SHIM_PID` in it first: std passes
/// an unchanged environment on as it is, where one changed through
/// `Command::env` is copied into a map and back, a fifth of the shim's
/// instructions). Returns only if the exec failed.
pub fn exec(program: &Path, args: &[OsString]) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    std::process::Command::new(program).args(args).exec()
}

/// The variable of the loop guard (the module docs' step 1).
pub const SHIM_PID_VAR: &str = "LEASE_SHIM_PID";

/// Where `command -v NAME` finds the lease binary `LEASE_BIN` names: a name
/// with a `/` is itself, if it is a regular file this process may
/// execute; a bare name is the first such file of that name in an
/// absolute directory on `path` (a relative entry is never trusted, as
/// for git).
pub fn find_program(name: &OsStr, path: Option<&OsStr>) -> Option<PathBuf> {
    let ok = |p: &Path| p.is_file() && crate::os::fs::executable(p);
    if name.as_bytes().contains(&b'/') {
        let p = Path::new(name);
        return ok(p).then(|| p.to_path_buf());
    }
    path?
        .as_bytes()
        .split(|b| *b == b':')
        .map(|e| Path::new(OsStr::from_bytes(e)))
        .filter(|e| e.is_absolute())
        .map(|e| e.join(name))
        .find(|p| ok(p))
}

/// `dir` with every symlink resolved, if it is a directory (`cd -P`).
fn physical_dir(dir: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(dir).ok().filter(|p| p.is_dir())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn exe(p: &Path, body: &str) {
        std::fs::write(p, body).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn holds_only_a_descriptor_of_digits_open_on_the_lease_inode() {
        let tmp = tempfile::tempdir().unwrap();
        let lease = tmp.path().join("x.lease");
        let other = tmp.path().join("other");
        std::fs::write(&lease, "").unwrap();
        std::fs::write(&other, "").unwrap();
        let f = std::fs::File::open(&lease).unwrap();
        use std::os::fd::AsRawFd;
        let fd = f.as_raw_fd().to_string();
        assert!(holds(fd.as_ref(), lease.as_os_str()));
        assert!(!holds(fd.as_ref(), other.as_os_str()), "another file");
        // A hard link is the same inode: the same file, as `-ef` says.
        let link = tmp.path().join("link");
        std::fs::hard_link(&lease, &link).unwrap();
        assert!(holds(fd.as_ref(), link.as_os_str()));
        for bad in ["", "x", "-1", "+3", " 3", "3 ", "99999"] {
            assert!(!holds(bad.as_ref(), lease.as_os_str()), "{bad:?}");
        }
        assert!(!holds(fd.as_ref(), tmp.path().join("none").as_os_str()));
    }

    #[test]
    fn the_loop_guard_and_the_lease_git_fast_path() {
        let tmp = tempfile::tempdir().unwrap();
        let lease = tmp.path().join("x.lease");
        std::fs::write(&lease, "").unwrap();
        let f = std::fs::File::open(&lease).unwrap();
        use std::os::fd::AsRawFd;
        let env = ShimEnv {
            pid: 42,
            lease_file: Some(lease.clone().into()),
            // Never looked at on this path: not even there.
            lease_git: Some("/no/such/git".into()),
            lease_fd: Some(f.as_raw_fd().to_string().into()),
            ..ShimEnv::default()
        };
        assert_eq!(decide(&env), Step::Run("/no/such/git".into()));
        let lost = ShimEnv {
            lease_fd: None,
            ..env.clone()
        };
        assert_eq!(decide(&lost), Step::Join("/no/such/git".into()));
        let again = ShimEnv {
            shim_pid: Some("42".into()),
            ..env.clone()
        };
        assert!(matches!(decide(&again), Step::Fail(m) if m.contains("leads back")));
        let other_pid = ShimEnv {
            shim_pid: Some("41".into()),
            ..env
        };
        assert_eq!(decide(&other_pid), Step::Run("/no/such/git".into()));
    }

    #[test]
    fn the_real_git_is_the_first_after_the_shim_then_any_never_a_shim() {
        let tmp = tempfile::tempdir().unwrap();
        let d = |n: &str| {
            let p = tmp.path().join(n);
            std::fs::create_dir_all(&p).unwrap();
            p
        };
        let (before, shim, other_shim, after, plain) = (
            d("before"),
            d("shim"),
            d("other-shim"),
            d("after"),
            d("plain"),
        );
        exe(&before.join("git"), "#!/bin/sh\n");
        exe(&shim.join("git"), "#!/bin/sh\n# lease-shim\n");
        exe(&other_shim.join("git"), "#!/bin/sh\n# lease-shim\n");
        exe(&after.join("git"), "#!/bin/sh\n");
        std::fs::write(plain.join("git"), "not executable").unwrap();
        let path = |dirs: &[&Path]| {
            let v: Vec<String> = dirs.iter().map(|p| p.display().to_string()).collect();
            OsString::from(format!("rel:{}:", v.join(":")))
        };
        let env = |argv0: &Path, dirs: &[&Path]| ShimEnv {
            argv0: argv0.into(),
            path: Some(path(dirs)),
            ..ShimEnv::default()
        };
        let all = [&before, &shim, &other_shim, &plain, &after].map(PathBuf::as_path);
        // Run by path: the first git after its own directory.
        assert_eq!(
            real_git(&env(&shim.join("git"), &all)),
            Ok(after.join("git"))
        );
        // Run by its bare name: its directory is where PATH finds it.
        assert_eq!(
            real_git(&env("git".as_ref(), &all[1..])),
            Ok(after.join("git"))
        );
        // Nothing after it: the first anywhere.
        let first = [&before, &shim].map(PathBuf::as_path);
        assert_eq!(
            real_git(&env(&shim.join("git"), &first)),
            Ok(before.join("git"))
        );
        // Only shims and a file that is not executable: none.
        let none = [&shim, &other_shim, &plain].map(PathBuf::as_path);
        let e = real_git(&env(&shim.join("git"), &none)).unwrap_err();
        assert!(e.contains("no git found on PATH after"), "{e}");
        // LEASE_GIT wins, but never a shim.
        let lg = |g: &Path| ShimEnv {
            lease_git: Some(g.into()),
            ..env(&shim.join("git"), &all)
        };
        assert_eq!(real_git(&lg(&before.join("git"))), Ok(before.join("git")));
        assert!(real_git(&lg(&other_shim.join("git"))).is_err());
        assert!(real_git(&lg(&plain.join("git"))).is_err());
    }
}
