#!/usr/bin/env python3
"""Helpers for scripts/bench: fixtures, measurements, trace parsing, and the
report. Subcommands (scripts/bench calls them):

  repo FILES COMMITS           a git fast-import stream on stdout
  history COMMITS              a long, narrow history (fast-import stream)
  records PIDFILE HOME:N ...   generated records (and live holders) per state root
  spawns NAMES UNTRACED OWN TIMING...  git spawns of one scenario from strace output (JSON)
  bundles STATE-ROOT BUNDLE    lease's bundle bytes against git's (JSON)
  mem PID                      one process's smaps_rollup and status (one JSON line)
  keeper LEASE STATE-ROOT REPO issue 17's keeper, measured once `lease create` exists
  count-tree DIR               files, directories and links under DIR (JSON)
  walks TRACE TOP TREE         tree passes per process in a `strace -f -y` trace (JSON)
  diag DIR OUT                 the diagnosis files of one filesystem, summarized (JSON)
  report DIR OUT               docs/PERFORMANCE.md from everything in DIR
"""

import collections
import copy
import fcntl
import glob
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
import uuid

# --------------------------------------------------------------------------
# Fixtures


def gen_repo(files, commits):
    """A fast-import stream: `files` text files in 50x10 directories, then
    `commits - 1` commits that each rewrite 50 of them."""
    rnd = random.Random(7)
    out = sys.stdout.buffer
    paths = [
        "src/m%02d/d%02d/f%04d.txt" % (i % 50, (i // 50) % 10, i) for i in range(files)
    ]
    for c in range(commits):
        out.write(
            b"commit refs/heads/main\ncommitter Bench <bench@example.com> %d +0000\n"
            % (1700000000 + c * 60)
        )
        msg = b"bench commit %d\n" % c
        out.write(b"data %d\n%s" % (len(msg), msg))
        for p in paths if c == 0 else rnd.sample(paths, 50):
            line = ("%s rev %d %08x\n" % (p, c, rnd.getrandbits(32))).encode()
            data = line * rnd.randrange(8, 40)
            out.write(b"M 100644 inline %s\ndata %d\n%s\n" % (p.encode(), len(data), data))
        out.write(b"\n")


def start_time(pid):
    """Field 22 of /proc/<pid>/stat (clock ticks since boot)."""
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    return int(s[s.rindex(")") + 2 :].split()[19])


def file_id(path):
    st = os.lstat(path)
    return {"path": path, "dev": st.st_dev, "ino": st.st_ino}


def record_files(home):
    """Every record file of state root HOME: live (`records/*.json`) and
    shelved (`records/removed/*.json`, the removed ones)."""
    return glob.glob(os.path.join(home, "records", "*.json")) + glob.glob(
        os.path.join(home, "records", "removed", "*.json")
    )


def gen_records(pidfile, specs, live):
    """Fills each state root HOME (which already holds one real removed and
    one real retained record, the templates) up to N records: `live` active
    records whose leases are held by one `sleep` each (the same process holds
    the lease of its twin in every root), 85% of the rest removed, 15%
    retained with an existing worktree directory and lease file."""
    homes = []
    for spec in specs:
        home, n = spec.rsplit(":", 1)
        recs = [json.load(open(p)) for p in record_files(home)]
        removed = next(r for r in recs if r["state"] == "removed")
        retained = next(r for r in recs if r["state"] == "retained")
        homes.append((home, int(n), removed, retained, len(recs)))
    rnd = random.Random(11)

    def new_lease(home, rid=None):
        rid = rid or uuid.UUID(int=rnd.getrandbits(128)).hex
        path = os.path.join(home, "leases", rid + ".lease")
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        os.close(fd)
        return rid, path

    def new_dir(root, rid):
        path = os.path.join(root, rid)
        os.mkdir(path, 0o700)
        return file_id(path)

    # Live leases first: one holder process per live worktree.
    live_ids = [[] for _ in homes]
    pids = []
    for _ in range(live):
        fds = []
        for i, (home, *_rest) in enumerate(homes):
            rid, path = new_lease(home)
            fd = os.open(path, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_SH)
            fds.append(fd)
            live_ids[i].append((rid, path))
        p = subprocess.Popen(
            ["sleep", "86399"],
            pass_fds=fds,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for fd in fds:
            os.close(fd)
        pids.append(p.pid)
    with open(pidfile, "w") as f:
        f.write("".join("%d\n" % p for p in pids))

    for i, (home, n, removed, retained, have) in enumerate(homes):
        root = retained["root"]["path"]
        live_dir = os.path.join(home, "records")
        # Removed records where lease keeps them once removed: shelved in
        # records/removed/ (as the template removed record already is).
        shelf = os.path.join(live_dir, "removed")
        os.makedirs(shelf, mode=0o700, exist_ok=True)

        def write(rec):
            out = shelf if rec["state"] == "removed" else live_dir
            with open(os.path.join(out, rec["id"] + ".json"), "w") as f:
                json.dump(rec, f, indent=2)
            os.chmod(os.path.join(out, rec["id"] + ".json"), 0o600)

        for (rid, path), pid in zip(live_ids[i], pids):
            r = copy.deepcopy(retained)
            r["id"], r["state"], r["retention"], r["outcome"] = rid, "active", None, None
            r["branch"] = "lease/" + rid[:8]
            r["lease"] = file_id(path)
            r["worktree"] = new_dir(root, rid)
            s = copy.deepcopy(retained["sessions"][0])
            s.update(pid=pid, start_time=start_time(pid), ended_at=None, outcome=None)
            r["sessions"] = [s]
            write(r)
        for _ in range(max(0, n - have - live)):
            rid = uuid.UUID(int=rnd.getrandbits(128)).hex
            if rnd.random() < 0.85:
                r = copy.deepcopy(removed)
                wt = os.path.join(root, rid)
                r["worktree"] = {"path": wt, "dev": removed["worktree"]["dev"], "ino": rnd.getrandbits(31)}
                r["lease"] = {
                    "path": os.path.join(home, "leases", rid + ".lease"),
                    "dev": removed["lease"]["dev"],
                    "ino": rnd.getrandbits(31),
                }
                r["tombstone"]["path"], r["tombstone"]["id"] = wt, rid
            else:
                r = copy.deepcopy(retained)
                _, path = new_lease(home, rid)
                r["lease"] = file_id(path)
                r["worktree"] = new_dir(root, rid)
            r["id"], r["branch"] = rid, "lease/" + rid[:8]
            write(r)


# --------------------------------------------------------------------------
# strace parsing

LINE = re.compile(r"^(?:(\d+)\s+)?(?:(\d+\.\d+)\s+)?(.*)$")
STR = re.compile(r'"((?:[^"\\]|\\.)*)"')
HEX = re.compile(r"^[0-9a-f]{40}$")


def short_argv(argv, tmp):
    """`git <args>` without lease's fixed sanitizing flags, with temporary
    paths and object ids shortened."""
    out, skip = [], False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if i == 0:
            out.append(os.path.basename(a))
            continue
        if a == "-c" and i + 1 < len(argv) and "fsck" not in argv[i + 1]:
            skip = True
            continue
        if a in ("--no-pager", "--no-optional-locks", "--no-replace-objects"):
            continue
        if tmp and a.startswith(tmp):
            a = "…/" + os.path.basename(a)
        elif tmp and tmp in a:
            a = a.replace(tmp, "…")
        a = re.sub(r"[0-9a-f]{40}", lambda m: m.group(0)[:8], a)
        a = re.sub(r"[0-9a-f]{32}", lambda m: m.group(0)[:8], a)
        out.append(a)
    return " ".join(out)


def parse_names(path, tmp):
    """From `strace -f -e trace=execve,clone*`: the direct children of the
    first process that exec'd something, in order, each with the commands
    its own descendants exec'd."""
    parent, argv, order, ok = {}, {}, [], set()
    pending_clone = {}
    root = None
    for line in open(path, errors="replace"):
        m = LINE.match(line.rstrip("\n"))
        if not m or m.group(1) is None:
            continue
        pid, rest = int(m.group(1)), m.group(3)
        if rest.startswith(("clone", "vfork", "fork")):
            if "<unfinished" in rest:
                pending_clone[pid] = True
                continue
            r = re.search(r"= (\d+)", rest)
            if r:
                parent[int(r.group(1))] = pid
            continue
        if rest.startswith("<... clone") or rest.startswith("<... vfork") or rest.startswith("<... fork"):
            r = re.search(r"= (\d+)", rest)
            if r and pending_clone.pop(pid, None):
                parent[int(r.group(1))] = pid
            continue
        if rest.startswith("execve("):
            args = rest[len("execve(") :]
            arr = args[args.index("[") :]
            depth, end = 0, 0
            for j, ch in enumerate(arr):
                if ch == "[":
                    depth += 1
                elif ch == "]":
                    depth -= 1
                    if depth == 0:
                        end = j
                        break
            vec = [bytes(s, "utf-8").decode("unicode_escape") for s in STR.findall(arr[:end])]
            argv.setdefault(pid, []).append(vec)
            if root is None:
                root = pid
            if re.search(r"\)\s+=\s+0\b", rest):
                ok.add(pid)
                if pid not in order:
                    order.append(pid)
            continue
        if rest.startswith("<... execve resumed>") and re.search(r"\)\s+=\s+0\b", rest):
            ok.add(pid)
            if pid not in order:
                order.append(pid)
    final = {p: argv[p][-1] for p in ok}

    def top(p):
        while p in parent and parent[p] != root:
            p = parent[p]
        return p if parent.get(p) == root else None

    spawns = []
    index = {}
    for p in order:
        if p == root:
            continue
        if parent.get(p) == root:
            index[p] = len(spawns)
            spawns.append({"cmd": short_argv(final[p], tmp), "nested": []})
    for p in order:
        if p == root or parent.get(p) == root:
            continue
        t = top(p)
        if t in index:
            spawns[index[t]]["nested"].append(short_argv(final[p], tmp))
    return spawns


def parse_timing(path):
    """From a parent-only `strace -ttt -T`: each child's wall time (spawn to
    reaped) in spawn order, the fsyncs, and the process's total."""
    starts, ends, fsyncs = {}, {}, []
    first = last = None
    order = []
    for line in open(path, errors="replace"):
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        if m.group(2) is None:
            continue
        ts, rest = float(m.group(2)), m.group(3)
        first = ts if first is None else first
        last = ts
        dur = re.search(r"<(\d+\.\d+)>\s*$", rest)
        dur = float(dur.group(1)) if dur else 0.0
        if rest.startswith(("clone3(", "clone(", "vfork(", "fork(")):
            if "CLONE_THREAD" in rest:
                continue
            r = re.search(r"\) = (\d+)", rest)
            if r:
                starts[int(r.group(1))] = ts
                order.append(int(r.group(1)))
        elif rest.startswith("wait4("):
            r = re.search(r"\) = (\d+)", rest)
            if r:
                ends[int(r.group(1))] = ts + dur
        elif rest.startswith(("fsync(", "fdatasync(")):
            fsyncs.append(dur)
    spawns = [(ends[p] - starts[p]) * 1000 for p in order if p in ends]
    return {
        "spawns_ms": spawns,
        "fsync_ms": [d * 1000 for d in fsyncs],
        "total_ms": ((last or 0) - (first or 0)) * 1000,
    }


def spawns(names, untraced, owncpu, timings, tmp):
    named = parse_names(names, tmp)
    plain = [int(x) / 1000 for x in open(untraced).read().split()]
    own = [float(x) for x in open(owncpu).read().split()]
    runs = [parse_timing(t) for t in timings]
    runs = [r for r in runs if len(r["spawns_ms"]) == len(named)] or runs
    for i, s in enumerate(named):
        vals = [r["spawns_ms"][i] for r in runs if i < len(r["spawns_ms"])]
        s["ms"] = statistics.median(vals) if vals else None
    return {
        "spawns": named,
        "timing_runs": len(runs),
        "matched": all(len(r["spawns_ms"]) == len(named) for r in runs),
        "fsyncs": statistics.median([len(r["fsync_ms"]) for r in runs]) if runs else 0,
        "fsync_ms": statistics.median([sum(r["fsync_ms"]) for r in runs]) if runs else 0,
        "traced_total_ms": statistics.median([r["total_ms"] for r in runs]) if runs else 0,
        "untraced_ms": statistics.median(plain) if plain else None,
        "own_cpu_ms": statistics.median(own) if own else None,
        "untraced_runs": len(plain),
    }


# --------------------------------------------------------------------------
# Report


def keep_procs(ready, n, cwd, pidfile):
    """Starts `n` more processes and keeps them until SIGTERM (or until the
    script that started this one dies: PR_SET_PDEATHSIG), then kills and
    reaps every one before it exits, so none is left as a zombie in /proc.
    Each is a `sleep` with its cwd in `cwd` (outside every worktree) and 8
    more descriptors (files under `cwd`), as a busy machine's processes
    would have. Their pids are appended to `pidfile` (the script's
    `kill_holders` ends them if it stops early); `ready` is written (a temp
    name, then renamed) once every one has exec'd `sleep`."""
    import ctypes
    import signal

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    files = []
    for i in range(8):
        path = os.path.join(cwd, "procs-fd-%d" % i)
        open(path, "w").close()
        files.append(os.open(path, os.O_RDONLY))
    kids = []
    with open(os.devnull, "rb") as null:
        for _ in range(n):
            kids.append(
                subprocess.Popen(
                    ["sleep", "86398"], cwd=cwd, stdin=null, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, pass_fds=files,
                )
            )
    for fd in files:
        os.close(fd)
    for k in kids:
        for _ in range(6000):
            try:
                if open("/proc/%d/comm" % k.pid).read().strip() == "sleep":
                    break
            except OSError:
                break
            time.sleep(0.01)
    with open(pidfile, "a") as f:
        f.write("".join("%d\n" % k.pid for k in kids))
    with open(ready + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(ready + ".tmp", ready)
    signal.sigwait({signal.SIGTERM})
    for k in kids:
        k.kill()
    for k in kids:
        k.wait()


def load_row(d, row):
    """Every hyperfine export of `row`: name -> all run times (s), and
    per-round medians."""
    times, rounds = {}, {}
    for p in sorted(glob.glob(os.path.join(d, "hf", row + "__*.json"))):
        _, rnd, name = os.path.basename(p)[: -len(".json")].split("__")
        res = json.load(open(p))["results"][0]
        times.setdefault(name, []).extend(res["times"])
        rounds.setdefault(name, {})[int(rnd)] = statistics.median(res["times"])
    return times, rounds


def ms(x):
    if x is None:
        return "n/a"
    if x >= 1000:
        return "%.2f s" % (x / 1000)
    if x >= 100:
        return "%.0f ms" % x
    if x >= 10:
        return "%.1f ms" % x
    return "%.2f ms" % x


def read(d, name, default=""):
    try:
        return open(os.path.join(d, name)).read().strip()
    except OSError:
        return default


def gen_history(commits):
    """A fast-import stream of a long history: 100 files, then `commits - 1`
    commits that each rewrite one of them (issue 18's repository without a
    remote)."""
    rnd = random.Random(5)
    out = sys.stdout.buffer
    paths = ["src/m%02d/d%02d/f%04d.txt" % (i % 50, (i // 50) % 10, i) for i in range(100)]
    for c in range(commits):
        out.write(
            b"commit refs/heads/main\ncommitter Bench <bench@example.com> %d +0000\n"
            % (1700000000 + c * 60)
        )
        msg = b"history commit %d\n" % c
        out.write(b"data %d\n%s" % (len(msg), msg))
        for p in paths if c == 0 else [rnd.choice(paths)]:
            data = ("%s rev %d %08x\n" % (p, c, rnd.getrandbits(32))).encode() * rnd.randrange(4, 20)
            out.write(b"M 100644 inline %s\ndata %d\n%s\n" % (p.encode(), len(data), data))
        out.write(b"\n")


def bundles(state_root, git_bundle):
    """Bytes of lease's bundles under STATE_ROOT (median), how many, the
    commits each archived (from the records), and git's own bundle's bytes."""
    sizes = sorted(os.path.getsize(p) for p in glob.glob(os.path.join(state_root, "archives", "*", "*.bundle")))
    commits = set()
    for p in record_files(state_root):
        try:
            a = json.load(open(p)).get("archive")
        except (OSError, ValueError):
            continue
        if a:
            commits.add(a.get("commits"))
    return {
        "lease_bytes": statistics.median(sizes) if sizes else None,
        "count": len(sizes),
        "commits": sorted(c for c in commits if c is not None),
        "git_bytes": os.path.getsize(git_bundle) if os.path.exists(git_bundle) else None,
    }


def mem(pid):
    """One process's memory, from /proc/PID/smaps_rollup and status (kB)."""
    v = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            m = re.match(r"^(\w+):\s+(\d+) kB", line)
            if m:
                v[m.group(1)] = int(m.group(2))
    st = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, rest = line.partition(":")
            st[k] = rest.strip()
    return {
        "rss_kib": v.get("Rss"),
        "pss_kib": v.get("Pss"),
        "uss_kib": v.get("Private_Clean", 0) + v.get("Private_Dirty", 0) + v.get("Private_Hugetlb", 0),
        "private_clean_kib": v.get("Private_Clean"),
        "private_dirty_kib": v.get("Private_Dirty"),
        "anon_kib": v.get("Anonymous"),
        "hwm_kib": int(st.get("VmHWM", "0 kB").split()[0]),
        "threads": int(st.get("Threads", "0")),
    }


def keeper(lease, state_root, repo):
    """Issue 17's keeper, once `lease create` exists: a worktree created
    bound to a `sleep`, the keeper found as the process other than the
    sleep that holds the new lease file open, its memory read, then the
    sleep ended. Best effort: the report shows what it found."""
    env = dict(os.environ, LEASE_HOME=state_root)
    sl = subprocess.Popen(["sleep", "120"], stdin=subprocess.DEVNULL)
    try:
        out = subprocess.run(
            [lease, "create", "--repo", repo, "--bind-pid", str(sl.pid), "--json"],
            env=env, capture_output=True, text=True, timeout=300,
        )
        if out.returncode != 0:
            return {"error": "lease create exited %d: %s" % (out.returncode, out.stderr.strip()[:300])}
        leases = os.path.realpath(os.path.join(state_root, "leases"))
        found = None
        for fd in glob.glob("/proc/[0-9]*/fd/*"):
            try:
                tgt = os.readlink(fd)
            except OSError:
                continue
            pid = int(fd.split("/")[2])
            if tgt.startswith(leases + "/") and pid not in (sl.pid, os.getpid()):
                found = pid
                break
        if found is None:
            return {"error": "no process other than the bound one holds a lease file"}
        m = mem(found)
        m["pid_comm"] = open("/proc/%d/comm" % found).read().strip()
        return m
    finally:
        sl.kill()
        sl.wait()


def count_tree(top):
    """Files, directories and symlinks under TOP (not following links), the
    top directory itself counted."""
    files = dirs = links = 0
    for _root, ds, fs in os.walk(top):
        dirs += 1
        for n in ds + fs:
            if os.path.islink(os.path.join(_root, n)):
                links += 1
        files += sum(1 for n in fs if not os.path.islink(os.path.join(_root, n)))
    return {"files": files, "dirs": dirs, "links": links, "entries": files + dirs + links}


# --------------------------------------------------------------------------
# Diagnosis: strace -c tables, event traces, callgrind, massif, tree walks

SC_LINE = re.compile(r"^\s*([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)(?:\s+(\d+))?\s+(\w+)\s*$")


def strace_c(path):
    """`strace -c` summary: {syscall: [calls, errors]} and the total calls."""
    calls = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return None
    for line in lines:
        m = SC_LINE.match(line)
        if m and m.group(6) != "total":
            calls[m.group(6)] = [int(m.group(4)), int(m.group(5) or 0)]
    return {"calls": calls, "total": sum(c for c, _ in calls.values())}


def events(path):
    """From `strace -f -y -e trace=fsync,...,clone*,execve`: threads and
    processes created, exec attempts (PATH tries included) and the programs
    exec'd, and each fsync with the file it synced."""
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return None
    pc = proc_counts(path)
    out = {"threads": 0, "processes": pc["forks"], "exec_attempts": 0, "execs": pc["execs"], "fsyncs": []}
    for line in lines:
        m = re.match(r"^(\d+)\s+(.*)$", line)
        rest = m.group(2) if m else line
        if re.match(r"^(clone3?|fork|vfork)\(", rest) and "CLONE_THREAD" in rest:
            out["threads"] += 1
        elif rest.startswith("execve("):
            out["exec_attempts"] += 1
        elif re.match(r"^(fsync|fdatasync|sync_file_range)\(", rest):
            f = re.search(r"\(\d+<([^>]*)>", rest)
            out["fsyncs"].append(f.group(1) if f else "?")
    return out


def proc_counts(path):
    """From `strace -f -e trace=clone*,fork,vfork,execve`: processes forked
    (threads apart) and the programs exec'd, in order (ENOENT PATH tries
    apart)."""
    pend = {}
    forks = 0
    execs = []
    for line in open(path, errors="replace"):
        m = re.match(r"^(\d+)\s+(.*)$", line.rstrip("\n"))
        pid, rest = (int(m.group(1)), m.group(2)) if m else (0, line.rstrip("\n"))
        if re.match(r"^(clone3?|fork|vfork)\(", rest) and "CLONE_THREAD" not in rest:
            forks += 1
        elif rest.startswith("execve("):
            s = STR.search(rest)
            if "<unfinished" in rest:
                pend[pid] = s.group(1) if s else "?"
            elif re.search(r"\)\s+=\s+0\b", rest) and s:
                execs.append(os.path.basename(s.group(1)))
        elif rest.startswith("<... execve resumed>") and re.search(r"=\s+0\b", rest) and pid in pend:
            execs.append(os.path.basename(pend.pop(pid)))
    return {"forks": forks, "execs": execs}


CURATED = [
    ("dynamic loading and relocation (`ld.so`)", ["_dl_start"]),
    ("argument parsing (clap)", ["clap_builder::builder::command::Command::try_get_matches_from"]),
    ("policy: config files and resolution", ["lease::policy::load_layers", "lease::policy::resolve"]),
    ("logging set-up", ["lease::cli::log::install"]),
    ("registry scan (every record read and parsed)", ["lease::registry::Registry::scan"]),
    ("registry reads (`load`, all callers)", ["lease::registry::Registry::load"]),
    ("registry writes (`update`: read, lock, write)", ["lease::registry::Registry::update"]),
    ("record serialization and atomic write (`write`)", ["lease::registry::Registry::write"]),
    ("audit line (`Audit::append`)", ["lease::audit::Audit::append"]),
    ("libgit2: open the repository (`Reader::open`)", ["lease::git::libgit2::Reader::open"]),
    ("the worktree list (`git::worktrees`)", ["lease::git::worktrees"]),
    ("the outcome's HEAD (`Reader::head_commit`)", ["lease::git::libgit2::Reader::head_commit"]),
    ("git binary resolution (`Git::resolve_lazy`)", ["lease::git::Git::resolve_lazy"]),
    ("join: lease opened and locked twice, record updated", ["lease::ops::launcher::join_session"]),
    ("signal handling set-up (signal-hook)", ["signal_hook::iterator::SignalsInfo<E>::new"]),
    ("the forwarder thread's spawn", ["std::thread::Builder::spawn_unchecked", "std::thread::spawn"]),
    ("serde_json into `Value`, then into the record", ["serde_json::value::de::<impl serde_core::de::Deserialize for serde_json::value::Value>::deserialize"]),
    ("malloc + free (all callers)", ["malloc", "free"]),
    ("the `/proc` holder scan (`holders_of`)", ["lease::os::procfs::holders_of"]),
    ("the reconciler's scan (`reap::scan`)", ["lease::ops::reap::scan::scan"]),
    ("`list`'s JSON (`record_json`)", ["lease::cli::record_json"]),
    ("pretty-printing the JSON", ["serde_json::ser::to_string_pretty"]),
    ("the tree walk (`os::walk::inventory`)", ["lease::os::walk::inventory"]),
    ("the process audit (`procfs::audit`)", ["lease::os::procfs::audit"]),
]


def callgrind_funcs(path):
    """Inclusive instruction counts per function name (the max over the
    objects it appears in) and the program total."""
    try:
        out = subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
            capture_output=True, text=True,
        ).stdout
    except OSError:
        return None
    total, funcs = 0, {}
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$", line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        what = m.group(2)
        if "PROGRAM TOTALS" in what:
            total = ir
            continue
        what = re.sub(r"\s+\[[^\]]*\]\s*$", "", what)
        name = what.split(":", 1)[1] if ":" in what else what
        name = re.sub(r"\s+\(\d+x\)$", "", name.strip())
        name = re.sub(r"'\d+$", "", name)
        funcs[name] = max(funcs.get(name, 0), ir)
    if not total:
        return None
    return {"total": total, "funcs": funcs}


def callgrind_summary(path, top=12):
    c = callgrind_funcs(path)
    if not c:
        return None
    f = c["funcs"]
    cur = []
    for label, names in CURATED:
        v = sum(f.get(n, 0) for n in names) if label.startswith("malloc") else max((f.get(n, 0) for n in names), default=0)
        if v:
            cur.append((label, v))
    skip = ("lease::main", "lease::cli::run")
    own = [(k, v) for k, v in sorted(f.items(), key=lambda kv: -kv[1]) if k.startswith("lease::") and k not in skip]
    return {"total": c["total"], "curated": cur, "lease": own[:top]}


def massif(path):
    """Peak heap (bytes, useful + allocator overhead) and the heap at the
    last snapshot, from a massif output file."""
    try:
        text = open(path).read()
    except OSError:
        return None
    snaps = []
    for block in text.split("snapshot=")[1:]:
        h = re.search(r"mem_heap_B=(\d+)", block)
        e = re.search(r"mem_heap_extra_B=(\d+)", block)
        if h:
            snaps.append(int(h.group(1)) + (int(e.group(1)) if e else 0))
    if not snaps:
        return None
    return {"peak_bytes": max(snaps), "last_bytes": snaps[-1], "snapshots": len(snaps)}


WALK_CALLS = ("getdents64", "openat", "open", "statx", "newfstatat", "lstat", "stat", "fstatat64", "unlink", "unlinkat", "rmdir", "chdir")


def walks(trace, top, tree):
    """Per process of a `strace -f -y` trace: how often it read and statted
    the tree under TOP. A readdir pass is one getdents64 that returned 0
    per directory; a stat pass one stat-family call per entry."""
    top = os.path.realpath(top).rstrip("/")
    tree = json.load(open(tree))
    cwd, parent, prog, pending, pexec = {}, {}, {}, {}, {}
    stats = {}

    def inside(p):
        return p == top or p.startswith(top + "/")

    def resolve(pid, dirfd, path):
        if path.startswith("/"):
            return os.path.normpath(path)
        if dirfd:
            return os.path.normpath(os.path.join(dirfd, path)) if path else dirfd
        base = cwd.get(pid)
        return os.path.normpath(os.path.join(base, path)) if base else None

    def st(pid):
        return stats.setdefault(pid, {"getdents": 0, "readdir_end": 0, "dir_opens": 0, "file_opens": 0, "stats": 0, "unlinks": 0})

    for line in open(trace, errors="replace"):
        m = re.match(r"^(\d+)\s+(.*)$", line.rstrip("\n"))
        if not m:
            continue
        pid, rest = int(m.group(1)), m.group(2)
        if rest.startswith("<... "):
            r = re.match(r"^<\.\.\. (\w+) resumed>.*=\s+(-?\d+)", rest)
            if r and r.group(1) == "getdents64" and pending.pop(pid, False) and r.group(2) == "0":
                st(pid)["readdir_end"] += 1
            if r and r.group(1) == "execve" and pid in pexec and r.group(2) == "0":
                prog[pid] = pexec.pop(pid)
            continue
        cm = re.match(r"^(\w+)\((.*)$", rest)
        if not cm:
            continue
        call, args = cm.group(1), cm.group(2)
        if call in ("clone", "clone3", "vfork", "fork"):
            r = re.search(r"=\s+(\d+)", rest)
            if r and "CLONE_THREAD" not in rest:
                child = int(r.group(1))
                parent[child] = pid
                cwd[child] = cwd.get(pid)
                prog.setdefault(child, prog.get(pid, "?"))
            continue
        if call == "execve":
            s = STR.search(args)
            argv = STR.findall(args[args.index("[") :].split("]")[0]) if "[" in args else []
            name = " ".join(short_argv(argv, os.environ.get("BENCH_TMP", "")).split()[:4]) if argv else (s.group(1) if s else "?")
            if "<unfinished" in rest:
                pexec[pid] = name
            elif re.search(r"=\s+0\b", rest):
                prog[pid] = name
            continue
        if call not in WALK_CALLS:
            continue
        dm = re.match(r"^(\d+)<([^>]*)>", args)
        dirfd = dm.group(2) if dm else None
        s = STR.search(args)
        path = s.group(1) if s else None
        if call == "chdir":
            if path and re.search(r"=\s+0\b", rest):
                cwd[pid] = resolve(pid, None, path)
            continue
        if call == "getdents64":
            if dirfd and inside(dirfd):
                st(pid)["getdents"] += 1
                if "<unfinished" in rest:
                    pending[pid] = True
                elif re.search(r"=\s+0$", rest):
                    st(pid)["readdir_end"] += 1
            continue
        if path is None:
            continue
        p = resolve(pid, dirfd, path)
        if not p or not inside(p):
            continue
        if call in ("openat", "open"):
            if re.search(r"=\s+-1\b", rest):
                continue
            if "O_DIRECTORY" in args:
                st(pid)["dir_opens"] += 1
            else:
                st(pid)["file_opens"] += 1
        elif call in ("unlink", "unlinkat", "rmdir"):
            st(pid)["unlinks"] += 1
        else:
            st(pid)["stats"] += 1
    procs = []
    for pid, s in stats.items():
        if not any(s.values()):
            continue
        s = dict(s)
        s["pid"] = pid
        s["prog"] = prog.get(pid, "?")
        s["readdir_passes"] = s["readdir_end"] / tree["dirs"] if tree["dirs"] else 0
        s["stat_passes"] = s["stats"] / tree["entries"] if tree["entries"] else 0
        procs.append(s)
    procs.sort(key=lambda s: s["pid"])
    return {"tree": tree, "procs": procs}


def diag(g, out):
    """Everything the diagnosis steps of one filesystem left in G, as JSON."""
    j = lambda n: os.path.join(g, n)  # noqa: E731
    d = {"syscalls": {}, "events": {}, "callgrind": {}, "massif": {}, "shim": {}}
    for n in ("launch", "flock", "floor1", "launch10k", "list10k", "reap10k", "cat10k", "retire"):
        d["syscalls"][n] = strace_c(j("sc-%s.txt" % n))
    for n in ("launch", "flock"):
        d["events"][n] = events(j("ev-%s.txt" % n))
    for n in ("launch", "launch1k", "launch10k", "version", "flock", "floor1", "join", "list1k", "list10k", "reap1k", "reap10k", "retire"):
        d["callgrind"][n] = callgrind_summary(j("cg-%s.out" % n))
    for n in ("launch", "launch10k"):
        d["massif"][n] = massif(j("massif-%s.out" % n))
    for n in ("shim-held", "shim-lost", "proto-held", "proto-lost", "git-plain"):
        try:
            d["shim"][n] = proc_counts(j(n + ".txt"))
        except OSError:
            d["shim"][n] = None
    try:
        d["path_entries"] = int(open(j("path_entries")).read().strip())
    except (OSError, ValueError):
        d["path_entries"] = None
    json.dump(d, open(out, "w"), indent=1)


# --------------------------------------------------------------------------
# Report


class Run:
    """Everything one filesystem's rows and diagnosis left in DIR/FS."""

    def __init__(self, d, fs):
        self.fs, self.dir = fs, os.path.join(d, fs)
        self.rows = {}
        for p in sorted(glob.glob(os.path.join(self.dir, "hf", "*.json"))):
            row, rnd, name = os.path.basename(p)[: -len(".json")].split("__")
            res = json.load(open(p))["results"][0]
            r = self.rows.setdefault(row, {"times": {}, "rounds": {}})
            r["times"].setdefault(name, []).extend(res["times"])
            r["rounds"].setdefault(name, {})[int(rnd)] = statistics.median(res["times"]) * 1000
        self.j = lambda n, default=None: _load(os.path.join(self.dir, n), default)
        self.diag = self.j("diag.json", {}) or {}
        self.sp = {k: self.j("spawns-%s.json" % k) for k in ("adopt", "create", "retire", "bundle")}
        self.mem = {}
        for k in ("adopt1", "adopt10k", "create", "flock", "adopt1shared"):
            try:
                vals = [json.loads(x) for x in open(os.path.join(self.dir, "mem." + k)).read().split("\n") if x.strip()]
            except OSError:
                vals = []
            if vals:
                self.mem[k] = {f: statistics.median([v[f] for v in vals if v.get(f) is not None]) for f in vals[0]}
                self.mem[k]["n"] = len(vals)
        self.checks = read(self.dir, "checks.txt").splitlines()

    def med(self, row, name):
        t = self.rows.get(row, {}).get("times", {}).get(name)
        return statistics.median(t) * 1000 if t else None

    def n(self, row, name):
        return len(self.rows.get(row, {}).get("times", {}).get(name, []))

    def per(self, row, f):
        """f(round's medians by name) for every round that has them all."""
        rr = self.rows.get(row, {}).get("rounds", {})
        ks = set.intersection(*(set(v) for v in rr.values())) if rr else set()
        out = []
        for k in sorted(ks):
            try:
                v = f({name: rr[name][k] for name in rr})
            except (KeyError, ZeroDivisionError):
                continue
            if v is not None:
                out.append(v)
        return out

    def ratio(self, row, a, b):
        return stat(self.per(row, lambda m: m[a] / m[b]))


def _load(path, default=None):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return default


def stat(per):
    """(median, (q1, q3)) of per-round values; the range below 4 rounds."""
    if not per:
        return (None, (None, None))
    s = sorted(per)
    if len(s) >= 4:
        q = statistics.quantiles(s, n=4)
        sp = (q[0], q[2])
    else:
        sp = (s[0], s[-1])
    return (statistics.median(s), sp)


def fx(x):
    return "n/a" if x is None else ("%.2fx" % x if x < 100 else "%.0fx" % x)


def mib(kib):
    return "n/a" if kib is None else "%.2f MiB" % (kib / 1024)


def ir(x):
    if x is None:
        return "n/a"
    if x >= 1e9:
        return "%.2f G" % (x / 1e9)
    if x >= 1e6:
        return "%.2f M" % (x / 1e6)
    if x >= 1e3:
        return "%.0f k" % (x / 1e3)
    return "%d" % x


def verdict(ok, applies=True):
    if ok is None:
        return "n/a"
    v = "**pass**" if ok else "**FAIL**"
    return v if applies else "(%s: target is on tmpfs)" % ("pass" if ok else "fail")


def spread(s):
    lo, hi = s
    return "" if lo is None else "%s–%s" % (fx(lo), fx(hi))


def find(spawns, prefix):
    return [x for x in spawns if x["cmd"].startswith(prefix)]


def total(xs):
    return sum(x["ms"] or 0 for x in xs)


def gits(sp_):
    return [x for x in sp_["spawns"] if x["cmd"].startswith("git")] if sp_ else []


def pct(x):
    return ("%.1f%%" % (100 * x)) if x < 0.1 else ("%.0f%%" % (100 * x))


def results(run, meta):
    """The issue 19 rows of one filesystem: (key, label, lease, baseline,
    ratio, spread, target, verdict)."""
    r, fs = run, run.fs
    on_tmpfs = fs == "tmpfs"
    out = []

    def add(key, label, lease, base, st, target, ok, applies=True):
        out.append((key, label, lease, base, fx(st[0]) if isinstance(st, tuple) else st,
                    spread(st[1]) if isinstance(st, tuple) else "", target, verdict(ok, applies)))

    # The launch back to back, then spaced out; each with BENCH_BEFORE's
    # binary in the same rounds when there is one.
    for row, label, base in (("launch", "`lease exec --adopt W -- true`", "`flock -s F true`"),
                             ("spaced", "the same, one launch every 200 ms", "`flock -s F true` the same way")):
        if row == "spaced" and not r.n(row, "lease"):
            continue  # a run without the spaced row (BENCH_ROWS) leaves it out
        s = r.ratio(row, "lease", "flock")
        add(row, "%s (n=%d)" % (label, r.n(row, "lease")), ms(r.med(row, "lease")),
            "%s %s" % (base, ms(r.med(row, "flock"))), s, "<= 1.25x", None if s[0] is None else s[0] <= 1.25)
        if r.n(row, "before"):
            s = r.ratio(row, "before", "flock")
            add(row + "-before", "the same by `%s` (BENCH_BEFORE; n=%d)" % (meta.get("before_rev") or "?", r.n(row, "before")),
                ms(r.med(row, "before")), "`flock -s F true` %s" % ms(r.med(row, "flock")), s, "context", None)
    fl = r.mem.get("flock", {}).get("uss_kib")
    for k, what in (("adopt1", "1 record"), ("adopt10k", "%s records" % format(meta["nrec_l"], ","))):
        u = r.mem.get(k, {}).get("uss_kib")
        add("uss-" + k, "launcher's private memory (USS) while its command runs, %s (n=%d)" % (what, r.mem.get(k, {}).get("n", 0)),
            mib(u), "`flock(1)` %s" % mib(fl), fx(u / fl) if u and fl else "n/a", "<= 1 MiB",
            None if u is None else u <= 1024)
    for k, t in (("held", 1.3), ("lost", 1.6)):
        s = r.ratio("shim", k, "git")
        add("shim-" + k, "`git rev-parse HEAD` through `shim/git`, descriptor %s (n=%d)" % (k, r.n("shim", k)),
            ms(r.med("shim", k)), "plain git %s" % ms(r.med("shim", "git")), s, "<= %.1fx" % t,
            None if s[0] is None else s[0] <= t)
        for c, how in (("c", "statically linked"), ("d", "as `cargo build` links it")):
            if r.n("shim", c + k):
                s = r.ratio("shim", c + k, "git")
                add("shim-" + c + k, "the same through the compiled shim `lease-git-shim`, %s (n=%d)" % (how, r.n("shim", c + k)),
                    ms(r.med("shim", c + k)), "plain git %s" % ms(r.med("shim", "git")), s, "<= %.1fx" % t,
                    None if s[0] is None else s[0] <= t)
        b = "before" + k
        if r.n("shim", b):
            s = r.ratio("shim", b, "git")
            add("shim-" + b, "the same by `%s`'s shim and binary (BENCH_BEFORE; n=%d)" % (meta.get("before_rev") or "?", r.n("shim", b)),
                ms(r.med("shim", b)), "plain git %s" % ms(r.med("shim", "git")), s, "context", None)
    s = r.ratio("adoptscale", "k10", "one")
    add("adopt10k", "`exec --adopt` with %s records (n=%d)" % (format(meta["nrec_l"], ","), r.n("adoptscale", "k10")),
        ms(r.med("adoptscale", "k10")), "with 1 record %s" % ms(r.med("adoptscale", "one")), s, "<= 1.2x",
        None if s[0] is None else s[0] <= 1.2)
    s = r.ratio("list", "k10", "cat")
    add("list-cat", "`list --json` of %s records (n=%d)" % (format(meta["nrec_l"], ","), r.n("list", "k10")),
        ms(r.med("list", "k10")), "`cat` of their %s bytes %s" % (format(int(read(r.dir, "records_bytes", "0") or 0), ","), ms(r.med("list", "cat"))),
        s, "<= 1.5x", None if s[0] is None else s[0] <= 1.5)
    s = r.ratio("reap", "k10", "k1")
    grow = meta["nrec_l"] / meta["nrec_s"]
    add("reap", "`reap --dry-run --json`, %s vs %s records (n=%d)" % (format(meta["nrec_l"], ","), format(meta["nrec_s"], ","), r.n("reap", "k10")),
        ms(r.med("reap", "k10")), "%s records %s" % (format(meta["nrec_s"], ","), ms(r.med("reap", "k1"))), s,
        "linear: <= %.0fx (%.0fx records, 1.2x per record)" % (1.2 * grow, grow), None if s[0] is None else s[0] <= 1.2 * grow)
    for row, files in (("retire", meta["files"]), ("retire50", meta["big_files"])):
        if row not in r.rows:
            out.append((row, "clean retire, %s files" % format(files, ","), "not measured", "", "", "", "<= 1.4x on tmpfs",
                        "skipped on %s (its target is on tmpfs; BENCH_EXT4_BIG=1 measures it)" % fs))
            continue
        s = r.ratio(row, "clean", "remove")
        add(row, "clean retire, %s files (n=%d)" % (format(files, ","), r.n(row, "clean")), ms(r.med(row, "clean")),
            "`git worktree remove` %s" % ms(r.med(row, "remove")), s, "<= 1.4x on tmpfs",
            None if s[0] is None else s[0] <= 1.4, on_tmpfs)
    s = r.ratio("create", "lease", "git")
    add("create", "`lease exec -- true`: create, run, retire (n=%d)" % r.n("create", "lease"), ms(r.med("create", "lease")),
        "`git worktree add` + `remove` %s" % ms(r.med("create", "git")), s, "<= 1.2x on tmpfs",
        None if s[0] is None else s[0] <= 1.2, on_tmpfs)
    s = stat(r.per("retire", lambda m: (m["archive"] - m["clean"]) / m["bundlev"]))
    a_ = r.med("retire", "archive")
    c_ = r.med("retire", "clean")
    add("archive", "what archiving one commit adds to a clean retire (n=%d)" % r.n("retire", "archive"),
        ms(a_ - c_) if a_ and c_ else "n/a", "`git bundle create` + `verify` %s" % ms(r.med("retire", "bundlev")), s,
        "<= 3x on tmpfs", None if s[0] is None else s[0] <= 3, on_tmpfs)
    return out


def earlier(run, meta):
    """The issue 7 rows, kept: same commands, same targets."""
    r = run
    out = []
    s = r.ratio("launch", "lease", "flock")
    out.append(("`lease exec --adopt W -- true` vs `flock -s F true`", ms(r.med("launch", "lease")), ms(r.med("launch", "flock")),
                fx(s[0]), spread(s[1]), "<= 1.5x", verdict(None if s[0] is None else s[0] <= 1.5)))
    s = r.ratio("create", "lease", "git")
    out.append(("`lease exec -- true` (create+retire) vs `git worktree add` + `remove`", ms(r.med("create", "lease")), ms(r.med("create", "git")),
                fx(s[0]), spread(s[1]), "<= 1.3x", verdict(None if s[0] is None else s[0] <= 1.3)))
    s = r.ratio("retire", "clean", "remove")
    out.append(("clean `lease retire` vs `git worktree remove` (%s files)" % format(meta["files"], ","), ms(r.med("retire", "clean")), ms(r.med("retire", "remove")),
                fx(s[0]), spread(s[1]), "<= 2.0x", verdict(None if s[0] is None else s[0] <= 2.0)))
    s = r.ratio("retire", "archive", "bundle")
    out.append(("`lease retire` archiving one commit vs `git bundle create`", ms(r.med("retire", "archive")), ms(r.med("retire", "bundle")),
                fx(s[0]), spread(s[1]), "<= 2.0x", verdict(None if s[0] is None else s[0] <= 2.0)))
    b = r.j("bundles.json", {}) or {}
    bl, bg = b.get("lease_bytes"), b.get("git_bytes")
    br = bl / bg if bl and bg else None
    out.append(("bundle bytes (commits per bundle %s)" % b.get("commits"), "%s B" % (bl or "n/a"), "%s B" % (bg or "n/a"),
                fx(br), "", "within 10%", verdict(None if br is None else abs(br - 1) <= 0.10)))
    for row, what in (("list", "`lease list --json`"), ("reap", "`lease reap --dry-run --json`")):
        a, b_ = r.med(row, "k1"), r.med(row, "k10")
        s = r.ratio(row, "k10", "k1")
        ok = None if b_ is None or s[0] is None else (b_ < 1000 and s[0] <= 12)
        out.append(("%s at %s and %s records" % (what, format(meta["nrec_s"], ","), format(meta["nrec_l"], ",")),
                    "%s; %s" % (ms(a), ms(b_)), "itself at %s" % format(meta["nrec_s"], ","), fx(s[0]), spread(s[1]),
                    "larger < 1 s, ratio <= 12x", verdict(ok)))
    hw = [r.mem.get(k, {}).get("hwm_kib") for k in ("create", "adopt1")]
    fl = r.mem.get("flock", {}).get("hwm_kib")
    ok = None if None in hw else max(hw) <= 8 * 1024
    out.append(("launcher peak RSS (VmHWM): create; adopt", "%s; %s" % (mib(hw[0]), mib(hw[1])), "`flock(1)` %s" % mib(fl),
                fx(hw[0] / fl) if hw[0] and fl else "n/a", "", "<= 8 MiB", verdict(ok)))
    return out


def report(d, out):
    meta = json.load(open(os.path.join(d, "meta.json")))
    runs = {fs: Run(d, fs) for fs in meta["fses"]}
    main = runs.get("tmpfs") or runs.get("ext4")
    L = []
    w = L.append
    w("# Performance")
    w("")
    w(
        "Generated by `scripts/bench` on %s from commit `%s` (`src/` tree `%s`)%s%s; %s of measuring after "
        "%s of building. Every figure below comes from that one run. Absolute times on this shared "
        "2-core machine are noise (other engineers compile on it; see the load averages); each target is "
        "a ratio against a baseline measured in the same run, interleaved with it, and *ratio* is the "
        "median of the per-round ratios."
        % (meta["date"], meta["commit"], meta["src_tree"], " (with uncommitted changes)" if meta["dirty"] else "",
           " — **a BENCH_QUICK smoke pass: small fixtures, few rounds; not a measurement**" if meta.get("quick") else "",
           meta["runtime"], meta["build"])
    )
    w("")
    w("Reproduce (from a checkout, as root or as an ordinary user; installs `hyperfine`, `strace` and `valgrind` with apt-get if missing):")
    w("")
    w("```sh")
    w("scripts/bench                  # this report: every row on ext4 and tmpfs, then the diagnosis")
    w("BENCH_QUICK=1 scripts/bench    # a smoke pass in a few minutes, written to target/PERFORMANCE-quick.md")
    w("BENCH_RUNS=40 scripts/bench    # more rounds of the worktree rows, proportionally longer")
    w("```")
    w("")
    w("## Machine")
    w("")
    w("| | |")
    w("|---|---|")
    for k, label in (("nproc", "nproc"), ("kernel", "kernel"), ("cpu", "cpu"), ("git", "git"), ("hyperfine", "hyperfine"),
                     ("valgrind", "valgrind"), ("strace", "strace"), ("rustc", "rustc"), ("procs", "processes in /proc at start"),
                     ("load_start", "load average at start (1, 5, 15 min)"), ("load_end", "load average at end")):
        w("| %s | %s |" % (label, meta.get(k, "?")))
    w("| ext4 | the run's temporary directory under /tmp (`stat -f`: %s) |" % meta.get("ext4_type"))
    w("| tmpfs | %s |" % (meta.get("tmpfs_note") or "not asked for (BENCH_FS)"))
    for fs, r in runs.items():
        w("| processes in /proc during the retire rows on %s | %s |" % (fs, read(r.dir, "procs_retire", "?")))
        w("| one `git worktree add` on %s | %s ms (%s files)%s |"
          % (fs, read(r.dir, "checkout_ms", "?"), format(meta["files"], ","),
             ", %s ms (%s files)" % (read(r.dir, "checkout50_ms"), format(meta["big_files"], ",")) if read(r.dir, "checkout50_ms") else ""))
    w("")

    # ---- issue 19
    w("## Targets (issue 19)")
    w("")
    w(
        "Every row on both filesystems. *lease* and *baseline* are medians over all runs; *ratio* is the "
        "median of the per-round ratios (lease's median in a round over its baseline's in the same round), "
        "*spread* their interquartile range (their range below 4 rounds). The launch, shim and registry "
        "rows run %d rounds of %d runs per command (the registry rows %d rounds); the worktree rows %d rounds "
        "of one run each on tmpfs, %d on ext4 (%d for %s files); the memory rows are medians of %d readings. "
        "Retire, create and archive targets apply on tmpfs (issue 19); their ext4 verdicts are in parentheses."
        % (meta["rounds"], meta["launch_runs"], meta.get("reg_rounds", meta["rounds"]), meta["runs"], max(3, meta["runs"] // 4),
           meta["big_rounds"], format(meta["big_files"], ","), meta["mem_runs"])
    )
    w("")
    w("| row | fs | lease | baseline | ratio | spread | target | verdict |")
    w("|---|---|---|---|---|---|---|---|")
    res = {fs: results(r, meta) for fs, r in runs.items()}
    keys = [x[0] for x in next(iter(res.values()))] if res else []
    for i, _k in enumerate(keys):
        for fs in runs:
            x = res[fs][i]
            w("| %s | %s | %s | %s | %s | %s | %s | %s |" % (x[1], fs, x[2], x[3], x[4], x[5], x[6], x[7]))
    w("")
    w("%d of %d rows pass on tmpfs, %d of %d on ext4." % (
        sum(1 for x in res.get("tmpfs", []) if "pass" in x[7] and "fail" not in x[7].lower()), len(res.get("tmpfs", [])),
        sum(1 for x in res.get("ext4", []) if x[7] == "**pass**" or x[7].startswith("(pass")), len(res.get("ext4", []))))
    w("")
    # ---- issue 7
    w("## Earlier targets (issue 7), kept")
    w("")
    w("The same commands and targets as before issue 19, measured in the same rounds as the rows above.")
    w("")
    w("| row | fs | lease | baseline | ratio | spread | target | verdict |")
    w("|---|---|---|---|---|---|---|---|")
    ear = {fs: earlier(r, meta) for fs, r in runs.items()}
    for i in range(len(next(iter(ear.values()))) if ear else 0):
        for fs in runs:
            x = ear[fs][i]
            w("| %s | %s | %s | %s | %s | %s | %s | %s |" % (x[0], fs, x[1], x[2], x[3], x[4], x[5], x[6]))
    w("")
    # ---- placeholders
    w("## Rows other issues need")
    w("")
    w("Each row is measured once its feature is in the binary (the probe named here); until then it is skipped and says so.")
    w("")
    w("| row | issue | fs | figure | baseline | target | status |")
    w("|---|---|---|---|---|---|---|")
    for fs, r in runs.items():
        k = r.j("keeper.json")
        hw = r.mem.get("create", {}).get("hwm_kib")
        if meta.get("create_probe") and k and not k.get("error"):
            w("| keeper peak RSS (VmHWM), next to the launcher's | 17 | %s | keeper %s (USS %s) | launcher %s | tiny: <= the launcher's | %s |"
              % (fs, mib(k.get("hwm_kib")), mib(k.get("uss_kib")), mib(hw), verdict(k.get("hwm_kib") <= (hw or 0))))
        elif meta.get("create_probe"):
            w("| keeper peak RSS (VmHWM), next to the launcher's | 17 | %s | %s | launcher %s | tiny: <= the launcher's | not measured |"
              % (fs, (k or {}).get("error", "?"), mib(hw)))
        else:
            w("| keeper peak RSS (VmHWM), next to the launcher's | 17 | %s | | launcher %s | tiny: <= the launcher's | not built yet (`lease create --help` fails) |" % (fs, mib(hw)))
    prov = {}
    if os.path.exists(os.path.join(d, "provision.json")):
        prov = json.load(open(os.path.join(d, "provision.json")))
    if prov.get("rows"):
        # scripts/bench-provision: lease exec --keep -- true provisioning the
        # tree, against cp -r of it on the same filesystem, interleaved.
        for name in ("reflink", "copy"):
            r = prov["rows"].get(name)
            fs = "xfs image (reflink=1)" if name == "reflink" else (r or {}).get("fs", "disk")
            if r:
                w("| provisioning a %d MB ignored tree: %s (n=%d) | 18 | %s | `lease exec --keep -- true` %s (provisioned by %s) | `cp -r` %s | context: the ratio against `cp -r` | %.2fx |"
                  % (prov["mb"], name, prov["rounds"], fs, ms(r["lease"] * 1000), r["how"], ms(r["cp"] * 1000), r["ratio"]))
            else:
                w("| provisioning a %d MB ignored tree: reflink | 18 | xfs image | | `cp -r` | context | %s |"
                  % (prov["mb"], prov.get("reflink_note") or "not measured"))
    else:
        w("| provisioning a 200 MB ignored tree: reflink vs copy | 18 | both | | `cp -r` | | %s |"
          % (prov.get("error") or "not measured (scripts/bench-provision wrote nothing)"))
    for fs, r in runs.items():
        h = r.j("hist-bundles.json", {}) or {}
        hl, hg = h.get("lease_bytes"), h.get("git_bytes")
        a_, rm_, bv = r.med("hist", "archive"), r.med("hist", "remove"), r.med("hist", "bundlev")
        ok = None if not (hl and hg) else hl <= 1.1 * hg
        status = "**pass**" if ok else ("not built yet: lease bundles the whole history (%s commits per bundle)" % h.get("commits") if ok is False else "n/a")
        w("| %s-commit repository without a remote: bundle bytes and retire time | 18 | %s | bundle %s B; archiving retire %s | `git bundle` of the unique commit %s B; `git worktree remove` %s + `bundle create` + `verify` %s | bytes within 10%% of git's | %s |"
          % (format(meta["hist"], ","), fs, format(int(hl), ",") if hl else "n/a", ms(a_), format(hg, ",") if hg else "n/a", ms(rm_), ms(bv), status))
        hb = r.j("hist-before-bundles.json", {}) or {}
        if r.med("hist", "before") is not None:
            w("| the same, by %s (BENCH_BEFORE, same rounds) | 18 | %s | now: bundle %s B, retire %s | before: bundle %s B (%s commits), retire %s | context | |"
              % (meta.get("before_rev", "BENCH_BEFORE"), fs, format(int(hl), ",") if hl else "n/a", ms(a_), format(int(hb["lease_bytes"]), ",") if hb.get("lease_bytes") else "n/a", hb.get("commits"), ms(r.med("hist", "before"))))
    for fs, r in runs.items():
        if "procs" not in r.rows:
            continue
        s = r.ratio("procs", "many", "usual")
        extra_n = meta.get("procs_extra", 500)
        mm, mu = r.med("procs", "many"), r.med("procs", "usual")
        per100 = ms((mm - mu) * 100 / extra_n) if mm and mu and extra_n else "n/a"
        w("| `lease retire` of a clean worktree with %d more processes running (n=%d; /proc held %s processes without them, %s with them, other users' included) | 14 | %s | %s (%s per 100 processes) | the same retire without them %s | <= 1.5x (gate 4 is linear in processes) | %s %s |"
          % (extra_n, r.n("procs", "many"), read(r.dir, "procs_usual", "?"), read(r.dir, "procs_with_extra", "?"), fs,
             ms(mm), per100, ms(mu), fx(s[0]), verdict(None if s[0] is None else s[0] <= 1.5)))
    for fs, r in runs.items():
        if "before" not in r.rows:
            continue
        s = r.ratio("before", "now", "before")
        w("| `lease retire` of a clean %s-file worktree, this commit against `%s` (n=%d) | context | %s | %s | the same retire by `%s` %s | context, not a target | %s (spread %s) |"
          % (format(meta["files"], ","), meta.get("before_rev", "?"), r.n("before", "now"), fs, ms(r.med("before", "now")),
             meta.get("before_rev", "?"), ms(r.med("before", "before")), fx(s[0]), spread(s[1])))
    w("")
    w("Checks made during the run: %s." % "; ".join("%s: %s" % (fs, "; ".join(r.checks)) for fs, r in runs.items()))
    w("")
    # ---- where the time goes
    where(w, runs, main, meta)
    # ---- spawns
    spawn_section(w, runs, main, meta)
    w("## What was cut (issue 7)")
    w("")
    w("Git processes started by lease per scenario, counted by the spawn section, against the same count at "
      "commit `39cf86b` (this script's run before issue 7's cuts, same fixture and method):")
    w("")
    w("| scenario | git spawns before | now (%s) |" % main.fs)
    w("|---|---|---|")
    for key, title in SCENARIOS:
        if main.sp.get(key):
            w("| %s | %d | %d |" % (title, SPAWNS_BEFORE[key], len(gits(main.sp[key]))))
    w("")
    for line in CUTS:
        w("- " + line)
    w("")
    w("## How it is measured")
    w("")
    for line in method_lines(meta):
        w(line)
    w("")
    with open(out, "w") as f:
        f.write("\n".join(L))


def cells(runs, f):
    return " | ".join(f(r) for r in runs.values())


def where(w, runs, main, meta):
    fsl = list(runs)
    d = main.diag
    w("## Where the time goes")
    w("")
    w(
        "Measured in the same run, mostly on %s (where issue 19 sets the worktree targets; fsync times on "
        "both). Counts (syscalls, processes, instructions, tree passes) do not depend on the load; times do. "
        "Instruction counts are `valgrind --tool=callgrind` of lease's own process (children not traced), "
        "inclusive of callees, on a symbolized build of the same code "
        "(`CARGO_PROFILE_RELEASE_STRIP=false CARGO_PROFILE_RELEASE_DEBUG=line-tables-only`). Each subsection "
        "ends with what its figures point to." % main.fs
    )
    w("")

    # ---- launch
    w("### The launch: `exec --adopt W -- true` against `flock -s F true`")
    w("")
    w("The launch row's other commands, in the same rounds: the floor of a launcher doing lease's work "
      "(`scripts/bench-floor.rs`, std only: open the lease without following links, check it by name and "
      "descriptor, `flock` shared, read the record and write it back atomically before and after a "
      "`posix_spawn`ed command) with 0, 1 or 6 fsyncs (lease makes 6 today: two record writes of file + "
      "directory, two audit lines), or with each session line appended to a log instead of the record "
      "rewritten, and `lease --version` (the binary's start-up and clap).")
    w("")
    w("| command | " + " | ".join("%s median | ratio to flock | spread" % fs for fs in fsl) + " |")
    w("|---|" + "---|---|---|" * len(fsl))
    for lab, what in (("lease", "`lease exec --adopt W -- true`"), ("flock", "`flock -s F true`"), ("true", "`true`"),
                      ("floor0", "floor, 0 fsyncs"), ("floor1", "floor, 1 fsync"), ("floor6", "floor, 6 fsyncs"),
                      ("floorapp", "floor, sessions appended (no rename, no fsync)"),
                      ("version", "`lease --version`")):
        w("| %s | %s |" % (what, " | ".join("%s | %s | %s" % (ms(r.med("launch", lab)), fx(r.ratio("launch", lab, "flock")[0]),
                                                               spread(r.ratio("launch", lab, "flock")[1])) for r in runs.values())))
    w("")
    sc = d.get("syscalls", {})
    la, fl_, f1 = sc.get("launch"), sc.get("flock"), sc.get("floor1")
    if la and fl_ and f1:
        w("Syscalls (`strace -f -c`, the command `true` included): lease %d, flock(1) %d, the 1-fsync floor %d. "
          "The largest counts:" % (la["total"], fl_["total"], f1["total"]))
        w("")
        w("| syscall | lease | flock(1) | floor (1 fsync) |")
        w("|---|---|---|---|")
        for name, (c, e) in sorted(la["calls"].items(), key=lambda kv: -kv[1][0])[:16]:
            w("| `%s` | %d%s | %s | %s |" % (name, c, " (%d failed)" % e if e else "", fl_["calls"].get(name, [0])[0], f1["calls"].get(name, [0])[0]))
        w("")
    ev, evf = d.get("events", {}).get("launch"), d.get("events", {}).get("flock")
    if ev:
        by = collections.Counter(re.sub(r"\.[0-9a-f]{32}\.json\.tmp-\d+$", ".<id>.json.tmp", re.sub(r"^.*/(state-[^/]*)/", r"\1/", p)) for p in ev["fsyncs"])
        fs_ms = "; ".join("%s %s" % (fs, ms((r.sp.get("adopt") or {}).get("fsync_ms"))) for fs, r in runs.items())
        w("- **fsyncs**: %d per launch (%s), taking %s in all (parent-only `strace -T`, median of %d)."
          % (len(ev["fsyncs"]), ", ".join("`%s` ×%d" % (k, v) for k, v in by.items()), fs_ms, meta["timing_runs"]))
        w("- **processes and threads**: lease creates %d thread(s) (the signal forwarder) and %d process(es) (the command); "
          "%d `execve` attempts for %s, the rest ENOENT tries along PATH (flock(1): %d threads, %d processes, %d attempts)."
          % (ev["threads"], ev["processes"], ev["exec_attempts"], ", ".join("`%s`" % e for e in ev["execs"]),
             (evf or {}).get("threads", 0), (evf or {}).get("processes", 0), (evf or {}).get("exec_attempts", 0)))
        w("- **git**: %s git processes in a join (spawn section)." % len(gits(main.sp.get("adopt"))))
    cg = d.get("callgrind", {})
    cl, cv, cf, c1 = cg.get("launch"), cg.get("version"), cg.get("flock"), cg.get("floor1")
    if cl:
        w("- **instructions**: a join executes %s instructions, `lease --version` %s, flock(1) %s, the 1-fsync floor %s."
          % (ir(cl["total"]), ir((cv or {}).get("total")), ir((cf or {}).get("total")), ir((c1 or {}).get("total"))))
    ma = d.get("massif", {})
    if ma.get("launch"):
        w("- **heap** (massif, useful + allocator overhead): peak %s at 1 record, %s at %s records."
          % (kb(ma["launch"]["peak_bytes"]), kb((ma.get("launch10k") or {}).get("peak_bytes")), format(meta["nrec_l"], ",")))
    w("")
    if cl:
        w("Where a join's instructions go (inclusive; the rows overlap where one calls another):")
        w("")
        w("| part | instructions | share |")
        w("|---|---|---|")
        for label, v in cl["curated"]:
            w("| %s | %s | %s |" % (label, ir(v), pct(v / cl["total"])))
        w("")

    pts = []
    for fs, r in runs.items():
        fl = r.med("launch", "flock")
        if not fl:
            continue
        pts.append("on %s the budget above flock(1) is %s (0.25 × %s); lease spends %s more, the 1-fsync floor %s, "
                   "`lease --version` alone %s" % (fs, ms(0.25 * fl), ms(fl), ms(r.med("launch", "lease") - fl),
                                                  ms(r.med("launch", "floor1") - fl), ms(r.med("launch", "version") - fl)))
    if pts:
        w("**What this points to.** The target allows 1.25x flock(1): %s. So the target is reachable only by a "
          "launch path that costs what the floor costs: no clap, policy or libgit2 start-up before it (`lease "
          "--version`'s own cost is the start-up every command pays), one record read and one write per "
          "transition (not a registry scan), at most one fsync (the floor's 0- and 6-fsync lines show what each "
          "costs on each disk), no thread, and no PATH walk lease's own `execvp` does not need." % "; ".join(pts))
        if cl and c1:
            w("In instructions: a join executes %.0fx what the floor does (%s against %s); parsing the record through "
              "`serde_json::Value` alone is %s." % (cl["total"] / c1["total"], ir(cl["total"]), ir(c1["total"]),
                                                   ir(dict(cl["curated"]).get("serde_json into `Value`, then into the record"))))
        w("")

    # ---- memory
    w("### Memory: the launcher's USS")
    w("")
    w("`/proc/PID/smaps_rollup` of the launcher while its command (`sleep`) runs; USS is Private_Clean + "
      "Private_Dirty. Private_Clean is mostly lease's own code pages (no other lease process shares them "
      "while it runs alone), Private_Dirty its heap, stacks and relocated data. Medians of %d readings." % meta["mem_runs"])
    w("")
    w("| process | fs | USS | Private_Dirty | Private_Clean | Anonymous | RSS | VmHWM | threads |")
    w("|---|---|---|---|---|---|---|---|---|")
    for k, what in (("adopt1", "`exec --adopt`, 1 record"), ("adopt1shared", "`exec --adopt`, 1 record, beside a second launcher"),
                    ("adopt10k", "`exec --adopt`, %s records" % format(meta["nrec_l"], ",")),
                    ("create", "`exec` creating a worktree"), ("flock", "`flock(1)`")):
        for fs, r in runs.items():
            m = r.mem.get(k)
            if m:
                w("| %s | %s | %s | %s | %s | %s | %s | %s | %d |" % (what, fs, mib(m["uss_kib"]), mib(m["private_dirty_kib"]), mib(m["private_clean_kib"]),
                                                                   mib(m["anon_kib"]), mib(m["rss_kib"]), mib(m["hwm_kib"]), m["threads"]))
    w("")

    m1, m10, msh = main.mem.get("adopt1"), main.mem.get("adopt10k"), main.mem.get("adopt1shared")
    if msh:
        w("Beside a second launcher of the same binary (two agents), each one's USS is %s: the code pages are "
          "then shared and only Private_Dirty (%s) stays private." % (mib(msh["uss_kib"]), mib(msh["private_dirty_kib"])))
        w("")
    if m1 and m10:
        w("**What this points to.** At one record the USS is %s: %s of it Private_Clean, the pages of lease's own "
          "%s binary that this launch touched, and %s Private_Dirty. With %s records Private_Dirty grows to %s: "
          "the registry scan's freed heap stays in the process (glibc keeps it) for as long as the command runs "
          "(massif: peak heap %s). A 1 MiB USS needs both: a launch path that touches little code (a fast path "
          "that never runs clap, libgit2 or serde_json's `Value`), and no registry-sized allocation (an index "
          "lookup, one record parsed)."
          % (mib(m1["uss_kib"]), mib(m1["private_clean_kib"]), kb(meta.get("binary_bytes")), mib(m1["private_dirty_kib"]),
             format(meta["nrec_l"], ","), mib(m10["private_dirty_kib"]), kb((ma.get("launch10k") or {}).get("peak_bytes"))))
        w("")

    # ---- shim
    w("### The shim: `git rev-parse HEAD` through `shim/git`")
    w("")
    sh = d.get("shim", {})
    w("Inside a lease session of the launch row's worktree, `shim/` first on PATH (%s PATH entries here; "
      "the shim runs `cd -P` in a subshell for each entry until it finds git). *proto* is the fork-free "
      "held path issue 19 proposes (`[ /proc/$$/fd/$LEASE_FD -ef \"$LEASE_FILE\" ]`, git from `LEASE_GIT`, "
      "else `lease join`), measured as a prototype; *join* is `lease join -- git rev-parse HEAD` by itself. "
      "Processes and programs from `strace -f` of one run each." % (d.get("path_entries") or "?"))
    w("")
    w("| case | " + " | ".join("%s median | ratio to git" % fs for fs in fsl) + " | processes forked | programs exec'd |")
    w("|---|" + "---|---|" * len(fsl) + "---|---|")
    for lab, key, what in (("git", "git-plain", "plain git"), ("held", "shim-held", "shim, descriptor held"),
                           ("lost", "shim-lost", "shim, descriptor lost"), ("protoheld", "proto-held", "proto, held"),
                           ("protolost", "proto-lost", "proto, lost"), ("join", None, "`lease join -- git`")):
        pc = sh.get(key) if key else None
        w("| %s | %s | %s | %s |" % (what, " | ".join("%s | %s" % (ms(r.med("shim", lab)), fx(r.ratio("shim", lab, "git")[0])) for r in runs.values()),
                                    pc["forks"] if pc else "", ", ".join(collections.OrderedDict((e, 1) for e in pc["execs"])) + " (%d in all)" % len(pc["execs"]) if pc else ""))
    w("")
    cj = cg.get("join")
    if cj:
        w("`lease join -- true` executes %s instructions (a join through `exec --adopt`: %s); the largest parts:" % (ir(cj["total"]), ir((cl or {}).get("total"))))
        w("")
        w("| part | instructions | share |")
        w("|---|---|---|")
        for label, v in cj["curated"][:10]:
            w("| %s | %s | %s |" % (label, ir(v), pct(v / cj["total"])))
        w("")

    pts = []
    for fs, r in runs.items():
        g = r.med("shim", "git")
        if g:
            pts.append("on %s plain git takes %s, so the held path may add %s and the lost path %s; the shim adds %s "
                       "held and %s lost, the prototype %s and %s" % (
                           fs, ms(g), ms(0.3 * g), ms(0.6 * g), ms(r.med("shim", "held") - g), ms(r.med("shim", "lost") - g),
                           ms(r.med("shim", "protoheld") - g), ms(r.med("shim", "protolost") - g)))
    if pts:
        w("**What this points to.** %s. The held path's cost is the shell's own start-up plus its forks "
          "(`$(...)` for the shim's directory and for the PATH walk, `dd | grep` to read each candidate's first "
          "4 KiB, `stat` for the descriptor); the prototype has none. The lost path is `lease join` itself: "
          "whatever it costs over git is the launch path's start-up again." % "; ".join(pts))
        w("")

    # ---- registry
    w("### Registry size: `exec --adopt`, `list`, `reap`")
    w("")
    s_, l_ = format(meta["nrec_s"], ","), format(meta["nrec_l"], ",")
    w("| command | fs | 1 record | %s | %s | %s over %s (time) | instructions at 1 / %s / %s |" % (s_, l_, l_, s_, s_, l_))
    w("|---|---|---|---|---|---|---|")
    for row, one, what, c0, c1_, c2 in (("adoptscale", "one", "`exec --adopt W -- true`", "launch", "launch1k", "launch10k"),
                                        ("list", None, "`list --json`", None, "list1k", "list10k"),
                                        ("reap", None, "`reap --dry-run --json`", None, "reap1k", "reap10k")):
        for fs, r in runs.items():
            cgr = r.diag.get("callgrind", {})
            w("| %s | %s | %s | %s | %s | %s | %s |" % (
                what, fs, ms(r.med(row, one)) if one else "", ms(r.med(row, "k1")), ms(r.med(row, "k10")),
                fx(r.ratio(row, "k10", "k1")[0]),
                " / ".join(ir((cgr.get(c) or {}).get("total")) if c else "–" for c in (c0, c1_, c2)) if r is main else "(counted on %s)" % main.fs))
    w("")
    w("`cat` of the %s records' bytes: %s. Syscalls at %s records (`strace -f -c`):" % (l_, "; ".join("%s %s" % (fs, ms(r.med("list", "cat"))) for fs, r in runs.items()), l_))
    w("")
    names = ("openat", "read", "close", "getdents64", "statx", "newfstatat", "readlink", "flock", "mmap", "brk", "write")
    w("| command | total | " + " | ".join("`%s`" % n for n in names) + " |")
    w("|---|---|" + "---|" * len(names))
    for key, what in (("launch10k", "`exec --adopt`"), ("list10k", "`list --json`"), ("reap10k", "`reap --dry-run`"), ("cat10k", "`sh -c 'cat *.json'`")):
        s = sc.get(key)
        if s:
            w("| %s | %d | %s |" % (what, s["total"], " | ".join(str(s["calls"].get(n, [0])[0]) for n in names)))
    w("")
    for key, what in (("launch10k", "`exec --adopt` at %s records" % l_), ("list10k", "`list --json` at %s records" % l_), ("reap10k", "`reap --dry-run` at %s records" % l_)):
        c = cg.get(key)
        if not c:
            continue
        w("Where %s's %s instructions go:" % (what, ir(c["total"])))
        w("")
        w("| part | instructions | share |")
        w("|---|---|---|")
        for label, v in c["curated"][:12]:
            w("| %s | %s | %s |" % (label, ir(v), pct(v / c["total"])))
        w("")
    if ma.get("launch10k"):
        w("Heap (massif): `exec --adopt` peaks at %s with %s records against %s with one; the launcher's "
          "USS while its command runs is in the memory table above." % (kb(ma["launch10k"]["peak_bytes"]), l_, kb((ma.get("launch") or {}).get("peak_bytes"))))
        w("")

    i1, i10 = (cg.get("launch") or {}).get("total"), (cg.get("launch10k") or {}).get("total")
    li1, li10 = (cg.get("list1k") or {}).get("total"), (cg.get("list10k") or {}).get("total")
    ri1, ri10 = (cg.get("reap1k") or {}).get("total"), (cg.get("reap10k") or {}).get("total")
    rb = int(read(main.dir, "records_bytes", "0") or 0)
    if i1 and i10 and li10 and ri10:
        # What the growth means depends on the code measured: said from the
        # figures, not from what an earlier version did.
        flat = abs(i10 - i1) <= 0.05 * i1
        w("**What this points to.** `exec --adopt` grows by %s instructions per record (%s at %s records against %s "
          "at one): %s "
          "`list --json` spends %.0f instructions per record byte (%s bytes at %s records) where `cat` spends "
          "none on content, nearly all of it parsing each file into the record type (the file's own bytes are "
          "printed; from 512 files on, the reading and parsing are shared among threads). "
          "`reap --dry-run` is %.1fx `list` in instructions at %s records%s; its growth from %s to %s records "
          "is %.1fx in instructions (%.1fx records), %.1fx for `list`."
          % (ir((i10 - i1) / meta["nrec_l"]), ir(i10), format(meta["nrec_l"], ","), ir(i1),
             "flat within 5%: it reads only the record git's lock on the worktree names." if flat else
             "it grows with the registry, so something on its path reads more than the one record it needs.",
             li10 / rb if rb else 0,
             format(rb, ","), format(meta["nrec_l"], ","), ri10 / li10, format(meta["nrec_l"], ","),
             " (it opens each record's repository with libgit2: `Reader::open` is %s of it)" % pct(dict((cg.get("reap10k") or {}).get("curated", [])).get("libgit2: open the repository (`Reader::open`)", 0) / ri10)
             if dict((cg.get("reap10k") or {}).get("curated", [])).get("libgit2: open the repository (`Reader::open`)") else "",
             format(meta["nrec_s"], ","), format(meta["nrec_l"], ","), ri10 / ri1 if ri1 else 0, meta["nrec_l"] / meta["nrec_s"],
             li10 / li1 if li1 else 0))
        w("")

    # ---- retire
    w("### A clean retire against `git worktree remove`")
    w("")
    wl, wg = main.j("walks-lease.json"), main.j("walks-git.json")
    if wl and wg:
        t = wl["tree"]
        w("Tree passes, from `strace -f -y` of one clean retire of a %s-file worktree (%d directories, %d entries) "
          "and of one `git worktree remove` of the same tree: a *readdir pass* is one `getdents64` that returned 0 "
          "per directory of the tree, a *stat pass* one stat-family call (`statx`, `newfstatat`, `lstat`) per entry; "
          "opens count the ones that succeeded." % (format(t["files"], ","), t["dirs"], t["entries"]))
        w("")
        w("| who | process | readdir passes | stat passes | `getdents64` | stat calls | dir opens | file opens | unlinks |")
        w("|---|---|---|---|---|---|---|---|---|")
        for who, wk in (("lease retire", wl), ("git worktree remove", wg)):
            small = [p for p in wk["procs"] if p["readdir_passes"] < 0.1 and p["stat_passes"] < 0.1 and not p["unlinks"]]
            for p in wk["procs"]:
                if p in small:
                    continue
                w("| %s | `%s` | %.1f | %.1f | %d | %d | %d | %d | %d |" % (who, p["prog"].replace("|", "\\|")[:70], p["readdir_passes"], p["stat_passes"],
                                                                        p["getdents"], p["stats"], p["dir_opens"], p["file_opens"], p["unlinks"]))
            if small:
                w("| %s | %d others (%s) | | | %d | %d | %d | %d | |" % (
                    who, len(small), ", ".join(sorted({"`%s`" % " ".join(p["prog"].split()[:2]) for p in small})),
                    sum(p["getdents"] for p in small), sum(p["stats"] for p in small), sum(p["dir_opens"] for p in small),
                    sum(p["file_opens"] for p in small)))
        tl = (sum(p["readdir_passes"] for p in wl["procs"]), sum(p["stat_passes"] for p in wl["procs"]))
        tg = (sum(p["readdir_passes"] for p in wg["procs"]), sum(p["stat_passes"] for p in wg["procs"]))
        w("")
        w("In all: lease's retire makes %.1f readdir passes and %.1f stat passes over the tree; `git worktree remove` %.1f and %.1f."
          % (tl[0], tl[1], tg[0], tg[1]))
        sts = [p for p in wl["procs"] if p["prog"].startswith("git status")]
        if sts and t["files"]:
            w("Each `git status` also opens %s files of the tree, about one per tracked file: after a fresh checkout "
              "the index is racily clean (files written within the index's own timestamp tick, which git marks for a "
              "content check), so git re-reads and hashes every file, and lease's `--no-optional-locks` keeps it from writing the refreshed index back; "
              "the baseline's own status inside `git worktree remove` does the same." % format(max(p["file_opens"] for p in sts), ","))
        w("")
    if "retirefresh" in main.rows:
        s_ = main.ratio("retirefresh", "clean", "remove")
        w("The same retire of a worktree whose index was refreshed (a `git status` run in it a moment after the "
          "checkout, on both sides, as someone working in it would): lease %s, `git worktree remove` %s, ratio %s "
          "(spread %s, n=%d), against %s for the freshly checked-out tree of the target row."
          % (ms(main.med("retirefresh", "clean")), ms(main.med("retirefresh", "remove")), fx(s_[0]), spread(s_[1]),
             main.n("retirefresh", "clean"), fx(main.ratio("retire", "clean", "remove")[0])))
        w("")
    sr = main.sp.get("retire")
    if sr:
        rem = total(find(sr["spawns"], "git worktree remove"))
        st_ = total(find(sr["spawns"], "git status"))
        other = [x for x in gits(sr) if not x["cmd"].startswith(("git status", "git worktree remove"))]
        parts = [("`git worktree remove` inside lease's retire (git's own status and the deletion)", rem),
                 ("gate 5's `git status`", st_),
                 ("%d other git spawns: %s" % (len(other), ", ".join("`%s`" % " ".join(x["cmd"].split()[:2]) for x in other)), total(other)),
                 ("lease's own CPU (perf task-clock, untraced runs)", sr.get("own_cpu_ms") or 0),
                 ("%d fsyncs" % sr["fsyncs"], sr.get("fsync_ms") or 0)]
        sm = sum(v for _, v in parts)
        w("A clean retire's sequential parts on %s (spawn section's runs; sum %s, untraced total %s; the retire row's "
          "baseline `git worktree remove` %s):" % (main.fs, ms(sm), ms(sr.get("untraced_ms")), ms(main.med("retire", "remove"))))
        w("")
        w("| part | ms | share |")
        w("|---|---|---|")
        for label, v in parts:
            w("| %s | %s | %s |" % (label, ms(v), pct(v / sm) if sm else ""))
        w("")
    cr = cg.get("retire")
    if cr:
        w("Lease's own instructions in that retire: %s; the largest parts:" % ir(cr["total"]))
        w("")
        w("| function | instructions | share |")
        w("|---|---|---|")
        for name, v in cr["lease"][:12]:
            w("| `%s` | %s | %s |" % (name, ir(v), pct(v / cr["total"])))
        w("")
        scr = sc.get("retire")
        if scr:
            w("Lease's own syscalls in a clean retire (`strace -c`, children not followed): %d in all; %s."
              % (scr["total"], ", ".join("`%s` %d" % (k, v[0]) for k, v in sorted(scr["calls"].items(), key=lambda kv: -kv[1][0])[:8])))
            w("")
    scn = main.sp.get("create")
    if scn:
        pre = []
        for x in scn["spawns"]:
            if x["cmd"].startswith("git worktree add"):
                break
            if x["cmd"].startswith("git"):
                pre.append(x)
        add_ = total(find(scn["spawns"], "git worktree add"))
        rem_ = total(find(scn["spawns"], "git worktree remove"))
        rest = total(gits(scn)) - add_ - rem_ - total(pre)
        w("Create+retire on %s: lease's `git worktree add` %s and `git worktree remove` %s (the baseline's work; "
          "its median in the row %s), %d gits before the add (%s), the retire's other gits %s, lease's own CPU %s, "
          "%d fsyncs %s." % (main.fs, ms(add_), ms(rem_), ms(main.med("create", "git")), len(pre), ms(total(pre)), ms(rest),
                            ms(scn.get("own_cpu_ms")), scn["fsyncs"], ms(scn.get("fsync_ms"))))
        w("")

    if sr and wl and wg:
        rm_ = main.med("retire", "remove")
        cl_ = main.med("retire", "clean")
        au = dict((cr or {}).get("lease", [])).get("lease::os::procfs::audit")
        inv = dict((cr or {}).get("lease", [])).get("lease::os::walk::inventory")
        w("**What this points to.** On %s the target leaves %s above `git worktree remove` (%s); lease spends %s. "
          "Of lease's own passes, gate 5's `git status` (%s) is a full readdir and stat pass that `git worktree "
          "remove` repeats inside itself, and `os::walk::inventory` is another (%s of lease's instructions); "
          "the `/proc` audit is %s of them with %s processes running (it reads every process's descriptors). "
          "SPEC keeps both statuses (gate 5's, and the non-forced removal's own), so with everything else gone a "
          "clean retire still costs about (removal + gate 5's status) / removal = %s here: the 1.4x target needs "
          "gate 5's status below 40%% of a removal, or the removal's own status skipped."
          % (main.fs, ms(0.4 * rm_) if rm_ else "n/a", ms(rm_), ms(cl_ - rm_) if cl_ and rm_ else "n/a", ms(st_),
             pct(inv / cr["total"]) if inv and cr else "n/a", pct(au / cr["total"]) if au and cr else "n/a", read(main.dir, "procs_retire", "?"),
             fx((rem + st_) / rem) if rem else "n/a"))
        w("")

    # ---- archive
    w("### Archiving one commit")
    w("")
    sb = main.sp.get("bundle")
    if sb and sr:
        norm = lambda c: re.sub(r"[0-9a-f]{8,}", "ID", c)  # noqa: E731
        left = collections.Counter(norm(x["cmd"]) for x in gits(sr))
        extra = []
        for x in gits(sb):
            k = norm(x["cmd"])
            if left[k] > 0:
                left[k] -= 1
            else:
                extra.append(x)
        w("The git calls an archiving retire makes beyond a clean one's (spawn section, %s; each spawn's wall time, "
          "fork to reap): %d calls, %s, plus %d more fsyncs (%s against %s). `git bundle create` + `git bundle verify` "
          "take %s in the retire row, `git bundle create` alone %s; what archiving adds there is %s."
          % (main.fs, len(extra), ms(total(extra)), sb["fsyncs"] - sr["fsyncs"], ms(sb.get("fsync_ms")), ms(sr.get("fsync_ms")),
             ms(main.med("retire", "bundlev")), ms(main.med("retire", "bundle")),
             ms(main.med("retire", "archive") - main.med("retire", "clean")) if main.med("retire", "archive") and main.med("retire", "clean") else "n/a"))
        w("")
        w("| git call | ms |")
        w("|---|---|")
        for x in extra:
            w("| `%s`%s | %s |" % (x["cmd"].replace("|", "\\|"), ("<br>↳ " + "<br>↳ ".join(y.replace("|", "\\|") for y in x["nested"])) if x["nested"] else "", ms(x["ms"])))
        w("")
        w("Lease's own CPU: %s in the archiving retire, %s in the clean one (perf task-clock)." % (ms(sb.get("own_cpu_ms")), ms(sr.get("own_cpu_ms"))))
        w("")
        bv = main.med("retire", "bundlev")
        if bv:
            g7 = [x for x in extra if x["cmd"].startswith(("git status", "git ls-files"))]
            rest_ = [x for x in extra if x not in g7]
            ran = [n for n in ("git status", "git ls-files") if any(x["cmd"].startswith(n) for x in g7)]
            look = " and ".join("`%s`" % n for n in ran) + " again after the bundle" if ran else "no git call"
            if "git status" not in ran:
                look += "; gate 5's status stood (the tree and git's files unchanged), so `git status` did not run again"
            w("**What this points to.** 3x `git bundle create` + `verify` is %s. Gate 7's second look at the tree "
              "(%s) is %s of the %s the extra calls take; the other %d "
              "calls take %s, %s per process start (median), so the target leaves room for about %d of them, the "
              "bundle's own included." % (
                  ms(3 * bv), look, ms(total(g7)), ms(total(extra)), len(rest_), ms(total(rest_)),
                  ms(statistics.median([x["ms"] for x in rest_ if x["ms"]]) if rest_ else None),
                  max(1, int(3 * bv / (statistics.median([x["ms"] for x in rest_ if x["ms"]]) if rest_ else 1)))))
            w("")


def kb(b):
    if b is None:
        return "n/a"
    return "%.1f MiB" % (b / 1048576) if b >= 1048576 else "%.0f KiB" % (b / 1024)


def spawn_section(w, runs, main, meta):
    w("## Git spawns")
    w("")
    w(
        "Counted with `strace -f -e trace=execve,clone,clone3,vfork,fork` (commands and their parentage). Timed "
        "with a parent-only `strace -ttt -T`, which leaves the children untraced: a spawn's time runs from lease's "
        "`clone3` to the `wait4` that reaps it, so it includes fork, exec and reading the output; median of %d traced "
        "runs per spawn on %s, one elsewhere. Lease's own CPU time is `perf stat -e task-clock --no-inherit` of as many "
        "untraced runs, alternated with the traced ones (their wall time is the *untraced total*). *Share* is git's part "
        "of git wall time + lease's own CPU + fsync time, which happen one after the other." % (meta["timing_runs"], meta.get("diag_fs", "tmpfs"))
    )
    w("")
    w("| scenario | fs | git spawns by lease | by those gits | git wall time | lease's own CPU | fsyncs | share | untraced total |")
    w("|---|---|---|---|---|---|---|---|---|")
    for key, label in SCENARIOS:
        for fs, r in runs.items():
            s_ = r.sp.get(key)
            if not s_:
                continue
            gd = gits(s_)
            gm = total(gd)
            own_ = s_.get("own_cpu_ms")
            ws = gm + (own_ or 0) + (s_["fsync_ms"] or 0)
            w("| %s | %s | %d | %d | %s | %s | %d, %s | %s | %s |" % (label, fs, len(gd), sum(len(x["nested"]) for x in s_["spawns"]), ms(gm), ms(own_),
                                                                s_["fsyncs"], ms(s_["fsync_ms"]), ("%.0f%%" % (100 * gm / ws)) if own_ is not None and ws else "n/a",
                                                                ms(s_.get("untraced_ms"))))
    w("")
    for key, label in SCENARIOS:
        s_ = main.sp.get(key)
        if not s_:
            continue
        own_ = s_.get("own_cpu_ms")
        ws = total(gits(s_)) + (own_ or 0) + (s_["fsync_ms"] or 0)
        w("### %s, on %s" % (label, main.fs))
        w("")
        w("| # | command (lease's fixed `-c` overrides and `--no-pager --no-optional-locks --no-replace-objects` left out) | ms | share of git + own CPU + fsync |")
        w("|---|---|---|---|")
        for i, x in enumerate(s_["spawns"], 1):
            nest = ("<br>↳ " + "<br>↳ ".join(y.replace("|", "\\|") for y in x["nested"])) if x["nested"] else ""
            w("| %d | `%s`%s | %s | %s |" % (i, x["cmd"].replace("|", "\\|"), nest, ms(x["ms"]), ("%.1f%%" % (100 * x["ms"] / ws)) if ws and x["ms"] else ""))
        w("")


SCENARIOS = [
    ("adopt", "`lease exec --adopt W -- true` (join)"),
    ("create", "`lease exec -- true` (create, run, retire)"),
    ("retire", "`lease retire` (clean, pushed)"),
    ("bundle", "`lease retire` (one unpushed commit)"),
]
SPAWNS_BEFORE = {"adopt": 6, "create": 31, "retire": 22, "bundle": 30}
CUTS = [
    "**In-process reads with libgit2** (`src/git/libgit2.rs`, git2 0.21 without https/ssh): "
    "`git worktree list` (gate 2, gate 8's re-check and read-back, adopt, creation), HEAD "
    "(gates 6 and 7, exec's outcome), the common dir of a linked worktree, the durable "
    "`origin` ref and the reachability `rev-list`s (a revwalk with the same hidden refs). "
    "libgit2 reads no system/global config (search paths emptied), opens with `NO_SEARCH`, "
    "runs nothing and writes nothing; anything it might read differently (reftable, "
    "sha256, other extensions, grafts, shallow, another owner, an odd HEAD) goes to the "
    "sanitized CLI as before. `tests/it/reader.rs` compares both readers.",
    "**`git --version` on first need**: a join whose reads all succeed in process starts "
    "no git at all.",
    "**Each read once per process**: the filter-driver config per directory (forgotten "
    "when exec's command ends), gate 5's `ls-files` for both of its uses.",
    "**One content look per clean retire**: gate 7 re-runs status and the walk only when a "
    "bundle was written; its HEAD, record and bundle checks stay.",
    "**No `/proc` read after a command** when nothing else holds the lease: the launcher, its "
    "own descriptors closed, asks flock(2) (`LOCK_EX|LOCK_NB` on a fresh open, closed at once) "
    "and scans every process's descriptors only when that is refused. Not `/proc/locks`, whose "
    "read waits for an RCU grace period unless another passed moments before (the kernel takes its flock table's "
    "lock for writing: 6-20 ms here, hidden from back-to-back runs; the spaced launch row "
    "shows it).",
    "**`list` and `reap` scan `/proc` once per command** (a map from lease identity to "
    "holders), not once per record.",
]


def method_lines(meta):
    return [
        "- **Fixtures** (made fresh on each filesystem each run): a bare repository generated with `git "
        "fast-import` (%s files in 500 directories, %d commits), cloned as the working repository, so "
        "`origin` and `refs/remotes/origin/HEAD` exist; a second one of %s files (3 commits); a %s-commit "
        "repository without a remote; `LEASE_HOME` and the worktree roots beside them, one state root per "
        "row; `HOME` an empty directory with only `user.name`/`user.email`, so no personal git config "
        "applies to either side." % (format(meta["files"], ","), meta["commits"], format(meta["big_files"], ","), format(meta["hist"], ",")),
        "- **Filesystems**: ext4 is the run's temporary directory under /tmp; tmpfs is %s." % (meta.get("tmpfs_note") or "not measured"),
        "- **Interleaving**: every row runs in rounds; in every round each command gets its own `hyperfine` "
        "call (`--runs`, `--export-json`; `--warmup` in the first round) and the order of the commands "
        "rotates from round to round, so a burst of load from other users lands on lease and its baseline "
        "alike. Ratios are medians of the per-round ratios; *what archiving adds* is, per round, the "
        "archiving retire minus the clean retire over `git bundle create` + `verify`.",
        "- **Shell**: rows without `&&` or a prepared id use `-N` (no shell); the others use hyperfine's "
        "default shell on both sides, whose start-up hyperfine measures and subtracts. Environment "
        "(`LEASE_HOME`, the lease session of the shim rows) is set on hyperfine itself, never timed.",
        "- **Per-iteration set-up** is `--prepare`, never timed: the retire rows make a worktree with `lease "
        "exec --keep -- …` and end it with `lease exec --adopt W -- true` so the record is terminal; their "
        "baselines prepare a plain `git worktree add`. The archiving retire's command commits one change (the "
        "same content as the baseline's commit), and the baseline bundles that one commit with `--not origin/HEAD`.",
        "- **Records** for the registry rows are the real schema: each state root first gets one real removed "
        "and one real retained record from `lease exec`, and the generator copies them: %d active records "
        "whose leases are held (shared flock) by one `sleep` each, 85%% of the rest removed, 15%% retained with "
        "their worktree directory and lease file present; then each root's own worktree is adopted, and joined "
        "by the rows." % meta["live"],
        "- **Memory**: the launcher's `/proc/PID/smaps_rollup` and `status`, read 0.3 s after its command "
        "(`sleep`) appeared, %d times each; medians." % meta["mem_runs"],
        "- **Diagnosis**: `strace -f -c` (syscall counts), `strace -f -y` (fsyncs by file, threads, processes, "
        "tree passes), `valgrind --tool=callgrind` and `--tool=massif` of lease's own process on the "
        "symbolized build, `perf stat -e task-clock --no-inherit` for lease's own CPU.",
    ]


# The baseline of each row BENCH_ROWS can select.
SUMMARY_BASE = {"launch": "flock", "shim": "git"}


def summary(d, fses):
    """BENCH_ROWS: each selected row's commands, their median (ms) and their
    ratio to the row's baseline (the median of per-round ratios, with its
    spread), one line each, per filesystem."""
    for fs in fses:
        r = Run(d, fs)
        for row in sorted(r.rows):
            base = SUMMARY_BASE.get(row)
            for name in sorted(r.rows[row]["times"]):
                m, (lo, hi) = r.ratio(row, name, base) if base else (None, (None, None))
                rt = "%.2fx (%.2f-%.2f)" % (m, lo, hi) if m is not None else "-"
                print("%-6s %-7s %-11s %8.2f ms  vs %s: %s  n=%d" % (
                    fs, row, name, r.med(row, name), base, rt, r.n(row, name)))


def main():
    cmd = sys.argv[1]
    if cmd == "repo":
        gen_repo(int(sys.argv[2]), int(sys.argv[3]))
    elif cmd == "history":
        gen_history(int(sys.argv[2]))
    elif cmd == "records":
        live = int(os.environ.get("BENCH_LIVE", "300"))
        gen_records(sys.argv[2], sys.argv[3:], live)
    elif cmd == "procs":
        keep_procs(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
    elif cmd == "spawns":
        tmp = os.environ.get("BENCH_TMP", "")
        json.dump(spawns(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:], tmp), sys.stdout, indent=1)
    elif cmd == "bundles":
        json.dump(bundles(sys.argv[2], sys.argv[3]), sys.stdout, indent=1)
    elif cmd == "mem":
        print(json.dumps(mem(int(sys.argv[2]))))
    elif cmd == "keeper":
        json.dump(keeper(sys.argv[2], sys.argv[3], sys.argv[4]), sys.stdout, indent=1)
    elif cmd == "count-tree":
        json.dump(count_tree(sys.argv[2]), sys.stdout, indent=1)
    elif cmd == "walks":
        json.dump(walks(sys.argv[2], sys.argv[3], sys.argv[4]), sys.stdout, indent=1)
    elif cmd == "diag":
        diag(sys.argv[2], sys.argv[3])
    elif cmd == "report":
        report(sys.argv[2], sys.argv[3])
    elif cmd == "summary":
        summary(sys.argv[2], sys.argv[3:])
    else:
        sys.exit("unknown subcommand " + cmd)


if __name__ == "__main__":
    main()
