//! The launch floor for scripts/bench: the least a launcher can do and still
//! be lease's launcher, with std only (compiled by the bench with
//! `rustc -O`; not part of the crate).
//!
//! Usage: bench-floor LEASE-FILE RECORD FSYNCS|append -- COMMAND [ARGS...]
//!
//! It opens LEASE-FILE without following a symlink, checks by name and
//! through the descriptor that both are the same regular file, takes a shared
//! flock(2) on it, reads RECORD, writes those bytes back atomically (a temporary
//! file in the same directory, rename) as the session's start, spawns
//! COMMAND (posix_spawn via std) with the locked descriptor inherited at
//! LEASE_FD, waits, writes RECORD atomically again as the outcome, and
//! exits with COMMAND's status. FSYNCS (0 to 6) is how many of the six
//! fsyncs lease makes today it makes too, in lease's order: the first
//! record file, its directory, an audit line, the second record file, its
//! directory, an audit line. So `FSYNCS=0` is the floor of an atomic but not
//! durable session, `1` what SPEC invariant 7 leaves for a launch, and `6`
//! today's durability at the floor's CPU cost. `append` writes neither the
//! record nor the audit log again: each session line is appended (O_APPEND,
//! no rename, no fsync) to RECORD.sessions, the cheapest atomic-enough
//! session log (a torn last line is detectable).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitCode};

const O_NOFOLLOW: i32 = 0o400000; // Linux x86_64/aarch64, open(2)
const F_SETFD: i32 = 2; // fcntl(2)

unsafe extern "C" {
    fn fcntl(fd: i32, cmd: i32, ...) -> i32;
}

/// The directory holding `path` ("." for a bare file name).
fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

fn write_atomic(path: &Path, bytes: &[u8], budget: &mut u32) -> std::io::Result<()> {
    let dir = dir_of(path);
    let tmp = dir.join(format!(".floor.tmp-{}", std::process::id()));
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    if *budget > 0 {
        f.sync_all()?;
        *budget -= 1;
    }
    drop(f);
    fs::rename(&tmp, path)?;
    if *budget > 0 {
        File::open(dir)?.sync_all()?;
        *budget -= 1;
    }
    Ok(())
}

fn audit(dir: &Path, line: &str, budget: &mut u32) -> std::io::Result<()> {
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(dir.join("floor-audit.jsonl"))?;
    f.write_all(line.as_bytes())?;
    if *budget > 0 {
        f.sync_all()?;
        *budget -= 1;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 6 || args[4] != "--" {
        eprintln!("usage: bench-floor LEASE-FILE RECORD FSYNCS|append -- COMMAND [ARGS...]");
        return ExitCode::from(125);
    }
    let (lease, record) = (Path::new(&args[1]), Path::new(&args[2]));
    let append = args[3] == "append";
    let mut budget: u32 = args[3].parse().unwrap_or(0);
    let sessions = record.with_extension("sessions");
    let session = |line: &str| -> std::io::Result<()> {
        OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&sessions)?
            .write_all(line.as_bytes())
    };
    let mut run = || -> std::io::Result<i32> {
        let f = OpenOptions::new()
            .read(true)
            .custom_flags(O_NOFOLLOW)
            .open(lease)?;
        let (by_fd, by_name) = (f.metadata()?, fs::symlink_metadata(lease)?);
        if !by_fd.is_file() || (by_fd.dev(), by_fd.ino()) != (by_name.dev(), by_name.ino()) {
            return Err(std::io::Error::other("not the lease file"));
        }
        f.lock_shared()?;
        let mut rec = Vec::new();
        File::open(record)?.read_to_end(&mut rec)?;
        let dir = dir_of(record);
        if append {
            session("{\"session\":\"start\"}\n")?;
        } else {
            write_atomic(record, &rec, &mut budget)?;
            audit(dir, "{\"event\":\"session-start\"}\n", &mut budget)?;
        }
        let fd = f.as_raw_fd();
        // SAFETY: fcntl(F_SETFD, 0) on a descriptor this function owns only
        // clears its close-on-exec flag for the spawn below.
        unsafe { fcntl(fd, F_SETFD, 0) };
        let status = Command::new(&args[5])
            .args(&args[6..])
            .env("LEASE_FD", fd.to_string())
            .status()?;
        let code = status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
        if append {
            session("{\"session\":\"end\"}\n")?;
        } else {
            write_atomic(record, &rec, &mut budget)?;
            audit(dir, "{\"event\":\"session-end\"}\n", &mut budget)?;
        }
        Ok(code)
    };
    match run() {
        Ok(c) => ExitCode::from(u8::try_from(c & 0xff).unwrap_or(125)),
        Err(e) => {
            eprintln!("bench-floor: {e}");
            ExitCode::from(125)
        }
    }
}
