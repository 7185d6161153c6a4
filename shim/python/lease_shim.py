"""Keep a lease alive from Python: pass the descriptor on, or join it again.

`lease exec -- CMD` gives its command one open, shared-locked descriptor on a
private lease file (`LEASE_FD`) and describes it in `LEASE_ID`, `LEASE_FILE`
and `LEASE_IDENTITY`. Every process that keeps the descriptor holds the
worktree. Python's `subprocess` closes every descriptor but 0, 1 and 2 in
its children (`close_fds=True` is the default), so a worker spawned the usual
way does not hold the lease. This module, dependency-free and for Python
3.8+, offers two ways around that:

- pass the descriptor on: `pass_fds()` for `subprocess.Popen(...,
  pass_fds=...)`, or the `Popen` and `run` wrappers that add it;
- join again in-process: `with joined(): ...` opens the lease file, checks it
  as `lease join` does, takes the shared lock without waiting, and closes it
  on exit.

The lock is never released with `LOCK_UN`: on an inherited open file
description that would release it for every process sharing it. It ends
when the last descriptor closes.
"""

import contextlib
import errno
import fcntl
import json
import os
import stat
import subprocess
import threading

__all__ = [
    "LeaseError",
    "held_fd",
    "pass_fds",
    "with_lease",
    "Popen",
    "run",
    "joined",
]

_lock = threading.Lock()
_joined = []  # descriptors opened by active `joined()` blocks, innermost last


class LeaseError(Exception):
    """The lease could not be joined.

    `code` is lease's reason code (`lease-identity`, `lease-insecure`,
    `lease-missing`, `retire-in-progress`, `lock-unsupported`,
    `lease-dir-unsafe`, `not-recorded`), or None when this process is not
    inside a lease at all or its record is unreadable.
    """

    def __init__(self, code, message):
        super().__init__("{} [{}]".format(message, code) if code else message)
        self.code = code


def _ticket():
    """Returns (id, path, (dev, ino)) from the environment."""
    values = {}
    for key in ("LEASE_ID", "LEASE_FILE", "LEASE_IDENTITY"):
        v = os.environ.get(key, "")
        if not v:
            raise LeaseError(
                None,
                "`{}` is not set: this process was not started by `lease exec`".format(key),
            )
        values[key] = v
    lease_id = values["LEASE_ID"]
    if len(lease_id) != 32 or any(c not in "0123456789abcdef" for c in lease_id):
        raise LeaseError("lease-identity", "`LEASE_ID` is not a record id")
    identity = _parse_identity(values["LEASE_IDENTITY"])
    if identity is None:
        raise LeaseError(
            "lease-identity",
            "`LEASE_IDENTITY` is `{}`, not `<dev>:<ino>` in decimal".format(
                values["LEASE_IDENTITY"]
            ),
        )
    return lease_id, values["LEASE_FILE"], identity


def _parse_identity(s):
    parts = s.split(":")
    if len(parts) != 2 or not all(p and p.isdigit() and p.isascii() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def _same_inode(fd, identity):
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == identity


def held_fd():
    """Returns the descriptor through which this process holds the lease, or None.

    That is the innermost `joined()` descriptor, else `LEASE_FD` if it is
    open here and is the lease file named by `LEASE_IDENTITY`.
    """
    with _lock:
        if _joined:
            return _joined[-1]
    fd = os.environ.get("LEASE_FD", "")
    identity = _parse_identity(os.environ.get("LEASE_IDENTITY", ""))
    if not fd.isdigit() or identity is None:
        return None
    fd = int(fd)
    return fd if _same_inode(fd, identity) else None


def pass_fds():
    """Returns the tuple of lease descriptors for `subprocess.Popen(pass_fds=...)`.

    Empty when this process holds no lease, so it is always safe to pass.
    """
    fd = held_fd()
    return () if fd is None else (fd,)


def with_lease(kwargs):
    """Returns a copy of Popen keyword arguments that passes the lease on.

    Adds the lease descriptor to `pass_fds` and sets `LEASE_FD` to it in the
    child's environment (a copy of `os.environ` when `env` is not given; a
    given `env` gets `LEASE_FD` only if it carries `LEASE_FILE`).
    """
    kwargs = dict(kwargs)
    fds = pass_fds()
    if not fds:
        return kwargs
    kwargs["pass_fds"] = tuple(kwargs.get("pass_fds", ())) + fds
    env = kwargs.get("env")
    if env is None:
        env = dict(os.environ)
    elif "LEASE_FILE" in env:
        env = dict(env)
    else:
        return kwargs
    env["LEASE_FD"] = str(fds[0])
    kwargs["env"] = env
    return kwargs


class Popen(subprocess.Popen):
    """`subprocess.Popen` whose child inherits the lease (see `with_lease`)."""

    def __init__(self, args, **kwargs):
        super().__init__(args, **with_lease(kwargs))


def run(*popenargs, **kwargs):
    """`subprocess.run` whose child inherits the lease (see `with_lease`)."""
    return subprocess.run(*popenargs, **with_lease(kwargs))


def _check_private_dir(path, canonical):
    try:
        st = os.lstat(path)
    except OSError as e:
        raise LeaseError("lease-dir-unsafe", "cannot stat `{}`: {}".format(path, e))
    if not stat.S_ISDIR(st.st_mode):
        raise LeaseError("lease-dir-unsafe", "`{}` is not a directory".format(path))
    if st.st_uid != os.geteuid():
        raise LeaseError("lease-dir-unsafe", "`{}` is owned by uid {}".format(path, st.st_uid))
    if st.st_mode & 0o077:
        raise LeaseError(
            "lease-dir-unsafe",
            "`{}` has mode {:o}; want 0700".format(path, stat.S_IMODE(st.st_mode)),
        )
    if canonical and os.path.realpath(path) != path:
        raise LeaseError("lease-dir-unsafe", "`{}` is reached through a symlink".format(path))


def _check_seen(st, identity):
    """The checks of lease's `check_lease_seen`, in the same order."""
    if st is None:
        raise LeaseError("lease-missing", "the lease file is missing")
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != identity:
        raise LeaseError(
            "lease-identity",
            "the lease file is {}:{}, LEASE_IDENTITY says {}:{}".format(
                st.st_dev, st.st_ino, identity[0], identity[1]
            ),
        )
    if st.st_nlink != 1:
        raise LeaseError("lease-identity", "the lease file has {} links".format(st.st_nlink))
    if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) != 0o600:
        raise LeaseError(
            "lease-insecure",
            "the lease file is owned by {} with mode {:o}".format(
                st.st_uid, stat.S_IMODE(st.st_mode)
            ),
        )


def _lstat(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _join():
    """Opens, checks and locks the lease; returns the descriptor."""
    lease_id, path, identity = _ticket()
    leases = os.path.dirname(path)
    root = os.path.dirname(leases)
    if (
        not os.path.isabs(path)
        or os.path.basename(path) != lease_id + ".lease"
        or os.path.basename(leases) != "leases"
    ):
        raise LeaseError(
            "lease-identity",
            "`LEASE_FILE` `{}` is not `<state root>/leases/{}.lease`".format(path, lease_id),
        )
    _check_private_dir(root, True)
    _check_private_dir(leases, False)
    _check_seen(_lstat(path), identity)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise LeaseError("lease-identity", "cannot open lease file `{}`: {}".format(path, e))
    try:
        _check_seen(os.fstat(fd), identity)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise LeaseError(
                    "retire-in-progress",
                    "record {} is being retired: its lease is held exclusively".format(lease_id),
                )
            raise LeaseError("lock-unsupported", "cannot lock `{}`: {}".format(path, e))
        # Again, under the lock: a retire that finished between the open and
        # the lock unlinked the file.
        _check_seen(os.fstat(fd), identity)
        _check_seen(_lstat(path), identity)
        _check_record(root, lease_id, path, identity)
    except BaseException:
        os.close(fd)  # the lock, if taken, ends with the descriptor
        raise
    return fd


def _check_record(root, lease_id, path, identity):
    rec_path = os.path.join(root, "records", lease_id + ".json")
    try:
        with open(rec_path, "rb") as f:
            rec = json.load(f)
    except FileNotFoundError:
        raise LeaseError("not-recorded", "no record `{}`".format(rec_path))
    except (OSError, ValueError) as e:
        raise LeaseError(None, "record `{}` is unreadable: {}".format(rec_path, e))
    if not isinstance(rec, dict) or rec.get("schema") != 1:
        raise LeaseError(None, "record `{}` is corrupt or of a newer schema".format(rec_path))
    lease = rec.get("lease") or {}
    if (lease.get("path"), lease.get("dev"), lease.get("ino")) != (path,) + tuple(identity):
        raise LeaseError(
            "lease-identity", "record {} does not name the lease `{}`".format(lease_id, path)
        )
    state = rec.get("state")
    if state == "retiring":
        raise LeaseError("retire-in-progress", "record {} is retiring".format(lease_id))
    if state == "removed":
        raise LeaseError(
            "lease-missing", "record {} is removed: the worktree was retired".format(lease_id)
        )


@contextlib.contextmanager
def joined():
    """Holds the lease in this process for the duration of the block.

    Opens `LEASE_FILE` without following symlinks, checks it is the inode in
    `LEASE_IDENTITY`, a regular file of ours, mode 0600, one link, takes
    `LOCK_SH|LOCK_NB` (failing at once while a retire holds it), checks
    again, and refuses a record that is `retiring` or `removed`: the checks
    of `lease join`. Yields the descriptor; while the block runs,
    `pass_fds()`, `Popen` and `run` pass it on and `os.environ["LEASE_FD"]`
    names it. Raises `LeaseError` when it cannot join.
    """
    fd = _join()
    with _lock:
        _joined.append(fd)
        previous = os.environ.get("LEASE_FD")
        os.environ["LEASE_FD"] = str(fd)
    try:
        yield fd
    finally:
        with _lock:
            _joined.remove(fd)
            if _joined:
                os.environ["LEASE_FD"] = str(_joined[-1])
            elif previous is None:
                os.environ.pop("LEASE_FD", None)
            else:
                os.environ["LEASE_FD"] = previous
        os.close(fd)
