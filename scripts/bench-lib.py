#!/usr/bin/env python3
"""Helpers for scripts/bench: fixtures, trace parsing, and the report.

Subcommands (scripts/bench calls them; nothing here runs lease itself):
  repo FILES COMMITS           a git fast-import stream on stdout
  records PIDFILE HOME:N ...   generated records (and live holders) per state root
  spawns NAMES TIMING...       git spawns of one scenario from strace output (JSON)
  report DIR OUT               docs/PERFORMANCE.md from everything in DIR
"""

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


def gen_records(pidfile, specs, live):
    """Fills each state root HOME (which already holds one real removed and
    one real retained record, the templates) up to N records: `live` active
    records whose leases are held by one `sleep` each (the same process holds
    the lease of its twin in every root), 85% of the rest removed, 15%
    retained with an existing worktree directory and lease file."""
    homes = []
    for spec in specs:
        home, n = spec.rsplit(":", 1)
        recs = [json.load(open(p)) for p in glob.glob(os.path.join(home, "records", "*.json"))]
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
        out = os.path.join(home, "records")

        def write(rec):
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
        if a in ("--no-optional-locks", "--no-replace-objects"):
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


def report(d, out):
    meta = json.load(open(os.path.join(d, "meta.json")))
    rows = {}
    for row in ("launch", "create", "retire", "procs", "before", "bundle", "list", "reap", "adoptscale"):
        times, rounds = load_row(d, row)
        if times:
            rows[row] = (
                {k: statistics.median(v) * 1000 for k, v in times.items()},
                {k: len(v) for k, v in times.items()},
                rounds,
            )

    def med(row, name):
        return rows.get(row, ({}, {}, {}))[0].get(name)

    def n(row, name):
        return rows.get(row, ({}, {}, {}))[1].get(name, 0)

    def per_round(row, a, b):
        r = rows.get(row, ({}, {}, {}))[2]
        return [r[a][k] / r[b][k] for k in r.get(a, {}) if k in r.get(b, {}) and r[b][k]]

    def ratio(row, a, b):
        """The median of the per-round ratios: drift between rounds cancels."""
        per = per_round(row, a, b)
        return statistics.median(per) if per else None

    def spread(row, a, b):
        per = sorted(per_round(row, a, b))
        if len(per) >= 4:
            q = statistics.quantiles(per, n=4)
            return (q[0], q[2])
        return (per[0], per[-1]) if per else (None, None)

    def fx(x):
        return "n/a" if x is None else "%.2fx" % x

    def verdict(ok):
        return "n/a" if ok is None else ("**pass**" if ok else "**FAIL**")

    rss = json.load(open(os.path.join(d, "rss.json")))
    sp = {k: json.load(open(os.path.join(d, "spawns-%s.json" % k))) for k in ("adopt", "create", "retire", "bundle")}
    extra = json.load(open(os.path.join(d, "extra.json")))
    prof = json.load(open(os.path.join(d, "profile.json")))
    L = []
    w = L.append

    w("# Performance")
    w("")
    w(
        "Generated by `scripts/bench` on %s, measuring commit `%s`%s; %s. "
        "Every figure below comes from that one run. Absolute times on this shared "
        "2-core machine are noise (other engineers compile on it); each target is a "
        "ratio against a baseline measured in the same run, interleaved with it."
        % (
            meta["date"],
            meta["commit"],
            " (with uncommitted changes)" if meta["dirty"] else "",
            "total runtime %s" % meta.get("runtime", "?"),
        )
    )
    w("")
    w("Reproduce (from a checkout; installs `hyperfine` and `strace` with apt-get if missing):")
    w("")
    w("```sh")
    w("scripts/bench                 # BENCH_RUNS=%d BENCH_ROUNDS=%d, about %s here" % (meta["runs"], meta["rounds"], meta.get("runtime", "?")))
    w("BENCH_RUNS=60 scripts/bench   # more runs per row, proportionally longer")
    w("```")
    w("")
    w("## Machine")
    w("")
    w("| | |")
    w("|---|---|")
    for k in ("nproc", "kernel", "cpu", "git", "hyperfine", "rustc", "procs", "load_start", "load_end", "checkout"):
        label = {
            "nproc": "nproc",
            "kernel": "kernel",
            "cpu": "cpu",
            "git": "git",
            "hyperfine": "hyperfine",
            "rustc": "rustc",
            "procs": "processes in /proc at start",
            "load_start": "load average at start",
            "load_end": "load average at end",
            "checkout": "one `git worktree add` of the 5,000-file fixture",
        }[k]
        w("| %s | %s |" % (label, meta.get(k, "?")))
    w("")

    # ---- summary table
    launch_r = ratio("launch", "lease", "flock")
    create_r = ratio("create", "lease", "git")
    retire_r = ratio("retire", "lease", "git")
    bundle_r = ratio("bundle", "lease", "git")
    bytes_l, bytes_g = extra.get("bundle_bytes_lease"), extra.get("bundle_bytes_git")
    bytes_r = bytes_l / bytes_g if bytes_l and bytes_g else None
    l1, l10 = med("list", "k1"), med("list", "k10")
    list_r = l10 / l1 if l1 and l10 else None
    rss_l = rss.get("lease_create_kib")
    rss_f = rss.get("flock_kib")

    w("## Results")
    w("")
    w(
        "*lease* and *baseline* are medians over all runs (n = runs per command). *Ratio* is "
        "the median of the per-round ratios (lease's median in a round over its baseline's in "
        "the same round), so drift between rounds cancels; *spread* is the interquartile range "
        "of those per-round ratios (their range when there are fewer than 4 rounds). The "
        "worktree rows alternate lease and baseline run by run; the launch row runs %d "
        "round(s) of %d. *lease − baseline* is the difference of the medians."
        % (meta["rounds"], max(1, -(-meta["runs"] * 5 // meta["rounds"])))
    )
    w("")
    w("| measure | lease | baseline | ratio | spread | lease − baseline | target | result |")
    w("|---|---|---|---|---|---|---|---|")

    def over(row, a, b):
        x, y = med(row, a), med(row, b)
        return ("+" + ms(x - y)) if x is not None and y is not None and x >= y else (ms(x - y) if x is not None and y is not None else "")
    s = spread("launch", "lease", "flock")
    w(
        "| `lease exec --adopt W -- true` (n=%d) | %s | `flock -s FILE true` %s; bare `true` %s (%s) | %s | %s–%s | %s | <= 1.5x flock(1) | %s |"
        % (
            n("launch", "lease"),
            ms(med("launch", "lease")),
            ms(med("launch", "flock")),
            ms(med("launch", "true")),
            "lease is " + fx(ratio("launch", "lease", "true")) + " bare `true`",
            fx(launch_r),
            fx(s[0]),
            fx(s[1]),
            over("launch", "lease", "flock"),
            verdict(None if launch_r is None else launch_r <= 1.5),
        )
    )
    s = spread("create", "lease", "git")
    w(
        "| `lease exec -- true` creating a worktree, then its retire (n=%d) | %s | `git worktree add` + `git worktree remove` %s | %s | %s–%s | %s | <= 1.3x | %s |"
        % (n("create", "lease"), ms(med("create", "lease")), ms(med("create", "git")), fx(create_r), fx(s[0]), fx(s[1]), over("create", "lease", "git"), verdict(None if create_r is None else create_r <= 1.3) + " (see *Where the gaps come from*)")
    )
    s = spread("retire", "lease", "git")
    w(
        "| `lease retire` of a clean, pushed worktree (n=%d) | %s | `git worktree remove` %s | %s | %s–%s | %s | <= 2.0x | %s |"
        % (n("retire", "lease"), ms(med("retire", "lease")), ms(med("retire", "git")), fx(retire_r), fx(s[0]), fx(s[1]), over("retire", "lease", "git"), verdict(None if retire_r is None else retire_r <= 2.0))
    )
    if "procs" in rows:
        s = spread("procs", "many", "usual")
        procs_r = ratio("procs", "many", "usual")
        extra_n = extra.get("procs_extra", 500)
        diff = (med("procs", "many") or 0) - (med("procs", "usual") or 0)
        w(
            "| `lease retire` of a clean worktree with %d more processes running (n=%d; /proc held %s processes at the row's start, %s with the extra ones, other users' included) | %s | the same retire without them %s | %s | %s–%s | %s (%s per 100 processes) | <= 1.5x (gate 4 is linear in processes) | %s |"
            % (
                extra_n,
                n("procs", "many"),
                extra.get("procs_usual", "?"),
                extra.get("procs_with_extra", "?"),
                ms(med("procs", "many")),
                ms(med("procs", "usual")),
                fx(procs_r),
                fx(s[0]),
                fx(s[1]),
                over("procs", "many", "usual"),
                ms(diff * 100 / extra_n) if extra_n else "n/a",
                verdict(None if procs_r is None else procs_r <= 1.5),
            )
        )
    if "before" in rows:
        s = spread("before", "now", "before")
        before_r = ratio("before", "now", "before")
        w(
            "| `lease retire` of a clean 5,000-file worktree, this commit against `%s` (n=%d) | %s | the same retire by `%s` %s | %s | %s–%s | %s | context, not a target | |"
            % (
                extra.get("before_rev", "?"),
                n("before", "now"),
                ms(med("before", "now")),
                extra.get("before_rev", "?"),
                ms(med("before", "before")),
                fx(before_r),
                fx(s[0]),
                fx(s[1]),
                over("before", "now", "before"),
            )
        )
    s = spread("bundle", "lease", "git")
    w(
        "| `lease retire` archiving one unpushed commit (n=%d) | %s | `git bundle create` of that commit %s | %s | %s–%s | %s | <= 2.0x | %s |"
        % (n("bundle", "lease"), ms(med("bundle", "lease")), ms(med("bundle", "git")), fx(bundle_r), fx(s[0]), fx(s[1]), over("bundle", "lease", "git"), verdict(None if bundle_r is None else bundle_r <= 2.0))
    )
    b_c = med("bundle", "clean")
    if b_c and med("bundle", "lease") and med("bundle", "git"):
        inc = med("bundle", "lease") - b_c
        w(
            "| what archiving adds: that retire minus a clean retire in the same rounds (n=%d) | %s | `git bundle create` %s | %s | | | context, not a target | |"
            % (n("bundle", "clean"), ms(inc), ms(med("bundle", "git")), fx(inc / med("bundle", "git")))
        )
    w(
        "| bundle bytes | %s B | %s B | %s | | | within 10%% | %s |"
        % (bytes_l or "n/a", bytes_g or "n/a", fx(bytes_r), verdict(None if bytes_r is None else abs(bytes_r - 1) <= 0.10))
    )
    w(
        "| `lease list --json`, 1k and 10k records (n=%d, %d) | 1k %s; 10k %s | itself at 1k | 10k/1k %s | | | 10k < 1 s, 10k/1k <= 12x | %s |"
        % (
            n("list", "k1"),
            n("list", "k10"),
            ms(l1),
            ms(l10),
            fx(list_r),
            verdict(None if l10 is None else (l10 < 1000 and list_r <= 12)),
        )
    )
    if "reap" in rows:
        r1, r10 = med("reap", "k1"), med("reap", "k10")
        rr = r10 / r1 if r1 and r10 else None
        w(
            "| `lease reap --dry-run --json`, 1k and 10k records | 1k %s; 10k %s | itself at 1k | 10k/1k %s | | | 10k < 1 s, 10k/1k <= 12x | %s |"
            % (ms(r1), ms(r10), fx(rr), verdict(None if r10 is None else (r10 < 1000 and rr <= 12)))
        )
    else:
        w("| `lease reap --dry-run --json` | pending: `lease reap` is not in this build (`lease reap --help` fails); the script measures it once it is | | | | | 10k < 1 s, 10k/1k <= 12x | pending |")
    w(
        "| launcher peak RSS (VmHWM) while `lease exec -- sleep 2` runs | %.1f MiB (adopt: %.1f MiB) | `flock(1)` %.1f MiB | %s | | | <= 8 MiB | %s |"
        % (
            (rss_l or 0) / 1024,
            (rss.get("lease_adopt_kib") or 0) / 1024,
            (rss_f or 0) / 1024,
            fx(rss_l / rss_f if rss_l and rss_f else None),
            verdict(None if rss_l is None else max(rss_l, rss.get("lease_adopt_kib") or 0) <= 8 * 1024),
        )
    )
    w("")
    a1, a10 = med("adoptscale", "k1"), med("adoptscale", "k10")
    if a1 and a10:
        w(
            "Registry size also reaches `lease exec --adopt` (it parses every record to find the "
            "one for its path): %s with 1k records, %s with 10k (%.1fx), against %s with the one "
            "record of the launch row (n=%d each, same %d live holders as the list row)."
            % (ms(a1), ms(a10), a10 / a1, ms(med("launch", "lease")), n("adoptscale", "k1"), meta["live"])
        )
        w("")
    w("Checks made during the run: %s." % "; ".join(extra.get("checks", [])))
    w("")

    # ---- gaps
    w("## Where the gaps come from")
    w("")
    sc = sp["create"]["spawns"]
    if med("create", "lease") and med("create", "git"):
        d_ = med("create", "lease") - med("create", "git")
        common = total(find(sc, "git worktree add")) + total(find(sc, "git worktree remove"))
        st_ = total(find(sc, "git status"))
        rest_git = total([x for x in sc if x["cmd"].startswith("git")]) - common - st_
        w(
            "- **exec (create+retire)**: lease takes %s more than add+remove in the row. In the "
            "spawn section's runs its own `worktree add` and `worktree remove` take %s together "
            "(the baseline's work); on top of them it runs %d `git status` probes (%s), %d other "
            "gits (%s), and spends %s of its own CPU (start-up, walks, `/proc` audit, records). "
            "This run's ratio passes only because checkouts were slow: the fixture's checkout "
            "took %s (Machine table). Against a 0.3 s add+remove (fast checkouts, as seen on this "
            "machine earlier the same day) the same %s would be %.2fx, so the overhead, not this "
            "run's verdict, is what the suggestions below target."
            % (
                ms(d_),
                ms(common),
                len(find(sc, "git status")),
                ms(st_),
                len([x for x in sc if x["cmd"].startswith("git")]) - len(find(sc, "git status")) - 2,
                ms(rest_git),
                ms(sp["create"].get("own_cpu_ms")),
                meta.get("checkout", "?").split(" at the start")[0],
                "+" + ms(d_),
                (300 + d_) / 300,
            )
        )
    sr = sp["retire"]["spawns"]
    if med("retire", "lease") and med("retire", "git"):
        w(
            "- **retire (clean)**: in the spawn section's runs, `git worktree remove` inside lease's "
            "retire takes %s (the baseline's median in the row: %s); the rest is %d other gits (%s, of which `git status` %s) and lease's "
            "own work. The table in *Where a retire's time goes* splits it."
            % (
                ms(total(find(sr, "git worktree remove"))),
                ms(med("retire", "git")),
                len([x for x in sr if x["cmd"].startswith("git")]) - 1,
                ms(total([x for x in sr if x["cmd"].startswith("git") and not x["cmd"].startswith("git worktree remove")])),
                ms(total(find(sr, "git status"))),
            )
        )
    if med("bundle", "lease") and med("bundle", "git"):
        w(
            "- **retire with a bundle**: the target compares a whole retire (every gate, the "
            "bundle, its verification in a scratch repository, and the removal of a 5,000-file "
            "worktree) with `git bundle create` alone (%s). The removal by itself (`git worktree "
            "remove`, the retire row's baseline) is %s, so no "
            "retire can come within 2x of that baseline; the comparable figure is what archiving "
            "adds to a clean retire, in the row below it. The bundle itself is within %s of "
            "git's bytes."
            % (
                ms(med("bundle", "git")),
                ms(med("retire", "git")),
                ("%.0f%%" % (100 * abs(bytes_r - 1))) if bytes_r else "n/a",
            )
        )
    if l1 and l10:
        w(
            "- **list**: every record with a lease costs one full `/proc` scan (see the first "
            "suggestion): %s per record here, with %s processes. Both sizes are dominated by it, "
            "so the ratio passes while 10k takes %s."
            % (ms((l10 - l1) / 9000), extra.get("procs_during_list", "?"), ms(l10))
        )
    sa = sp["adopt"]
    if med("launch", "lease") and med("launch", "flock"):
        ga_ = [x for x in sa["spawns"] if x["cmd"].startswith("git")]
        w_ = work(sa)
        w(
            "- **launch**: a join costs %s more than flock(1) in the row. In the spawn section's "
            "runs git is %s of a join's sequential work: %d spawns (%s), against lease's own CPU "
            "(%s) and %d fsyncs (%s)."
            % (
                ms(med("launch", "lease") - med("launch", "flock")),
                pct(total(ga_) / w_) if w_ else "n/a",
                len(ga_),
                ms(total(ga_)),
                ms(sa.get("own_cpu_ms")),
                sa["fsyncs"],
                ms(sa["fsync_ms"]),
            )
            + (
                " A join starts no git any more; what it adds to flock(1)'s fork and exec is lease's "
                "own start-up and checks (the lease file opened and checked twice, the registry read, "
                "libgit2 opening the repository for the worktree list and the outcome's HEAD) and two "
                "durable record updates (session start, session end: each a temporary file, fsync, "
                "rename, directory fsync) plus an audit line. The target, 1.5x flock(1) = %s, leaves "
                "%s for all of that above the %s of flock(1) itself, less than lease's own CPU and "
                "fsyncs measured here; meeting it would mean dropping the durable session records "
                "(SPEC principle 7: every transition is in the registry, atomic and fsynced), which this branch does not do."
                % (
                    ms(1.5 * med("launch", "flock")),
                    ms(0.5 * med("launch", "flock")),
                    ms(med("launch", "flock")),
                )
                if not ga_
                else ""
            )
        )
    w("")

    # ---- spawns
    def spawn_table(key, title):
        s = sp[key]
        total = s.get("untraced_ms")
        git_direct = [x for x in s["spawns"] if x["cmd"].startswith("git")]
        nested = sum(len(x["nested"]) for x in s["spawns"])
        git_ms = sum(x["ms"] or 0 for x in git_direct)
        other = [x for x in s["spawns"] if not x["cmd"].startswith("git")]
        w("### %s" % title)
        w("")
        own_ = s.get("own_cpu_ms")
        wsum = git_ms + (own_ or 0) + (s["fsync_ms"] or 0)
        w(
            "**%d git processes** started by lease (%d more started by those gits themselves)%s. "
            "Their wall time sums to **%s**; lease's own CPU is %s and its %d fsyncs take %s, so "
            "git is **%s** of the three together (untraced total of this scenario: %s)."
            % (
                len(git_direct),
                nested,
                (", plus the command (`%s`, %s)" % (other[0]["cmd"], ms(other[0]["ms"]))) if other else "",
                ms(git_ms),
                ms(own_),
                s["fsyncs"],
                ms(s["fsync_ms"]),
                ("%.0f%%" % (100 * git_ms / wsum)) if own_ is not None and wsum else "n/a",
                ms(total),
            )
        )
        w("")
        w("| # | command (lease's fixed `-c` overrides and `--no-optional-locks --no-replace-objects` left out) | ms | share of git + own CPU + fsync |")
        w("|---|---|---|---|")
        for i, x in enumerate(s["spawns"], 1):
            cmd = x["cmd"].replace("|", "\\|")
            nest = ("<br>↳ " + "<br>↳ ".join(y.replace("|", "\\|") for y in x["nested"])) if x["nested"] else ""
            share = ("%.1f%%" % (100 * x["ms"] / wsum)) if own_ is not None and wsum and x["ms"] else ""
            w("| %d | `%s`%s | %s | %s |" % (i, cmd, nest, ms(x["ms"]), share))
        w("")
        return git_ms, len(git_direct)

    w("## Git spawns")
    w("")
    w(
        "Counted with `strace -f -e trace=execve,clone,clone3,vfork,fork` (commands and their "
        "parentage). Timed with a parent-only `strace -ttt -T`, which leaves the children "
        "untraced (tracing them with `-f` slowed `git worktree add` about tenfold here): a "
        "spawn's time runs from lease's `clone3` to the `wait4` that reaps it, so it includes "
        "fork, exec and reading the output; median of %d traced runs per spawn. Lease's own "
        "CPU time comes from `perf stat -e task-clock --no-inherit` on %d untraced runs of the "
        "same scenario, alternated with the traced ones (their wall time is the *untraced "
        "total*); a traced run's own total is not used, since tracing lease slows its ~20k "
        "syscalls. *Share* is git's part of git wall time + lease's own CPU + fsync time, all "
        "of which happen one after the other."
        % (sp["retire"]["timing_runs"], sp["retire"].get("untraced_runs", 0))
    )
    w("")
    w("| scenario | git spawns by lease | by those gits | git wall time | lease's own CPU | fsyncs | share | untraced total |")
    w("|---|---|---|---|---|---|---|---|")
    for key, label in (
        ("adopt", "`lease exec --adopt W -- true` (join)"),
        ("create", "`lease exec -- true` (create, run, retire)"),
        ("retire", "`lease retire` (clean, pushed)"),
        ("bundle", "`lease retire` (one unpushed commit)"),
    ):
        s_ = sp[key]
        gd = [x for x in s_["spawns"] if x["cmd"].startswith("git")]
        gm = total(gd)
        own_ = s_.get("own_cpu_ms")
        wsum = gm + (own_ or 0) + (s_["fsync_ms"] or 0)
        w(
            "| %s | %d | %d | %s | %s | %d, %s | %s | %s |"
            % (
                label,
                len(gd),
                sum(len(x["nested"]) for x in s_["spawns"]),
                ms(gm),
                ms(own_),
                s_["fsyncs"],
                ms(s_["fsync_ms"]),
                ("%.0f%%" % (100 * gm / wsum)) if own_ is not None and wsum else "n/a",
                ms(s_.get("untraced_ms")),
            )
        )
    w("")
    g_adopt = spawn_table("adopt", "`lease exec --adopt W -- true` (a join: the record exists)")
    g_create = spawn_table("create", "`lease exec -- true`: create, run, retire")
    g_retire = spawn_table("retire", "`lease retire` of a clean, pushed worktree")
    g_bundle = spawn_table("bundle", "`lease retire` archiving one unpushed commit")

    # ---- profile
    w("## Where a retire's time goes")
    w("")
    sr_ = sp["retire"]
    base = med("retire", "git") or 0
    remove_ms = total(find(sr_["spawns"], "git worktree remove"))
    status_ms = [x["ms"] or 0 for x in sr_["spawns"] if x["cmd"].startswith("git status")]
    small = [x["ms"] or 0 for x in sr_["spawns"] if x["cmd"].startswith("git") and not x["cmd"].startswith(("git status", "git worktree remove"))]
    parts = [
        ("`git worktree remove` itself (git's own status and the deletion of the tree)", remove_ms),
        ("%d `git status` probe(s) (gate 5; gate 7 repeats it only after archiving)" % len(status_ms), sum(status_ms)),
        ("%d other git spawns (version, filter config, ls-files, private refs and reflogs)" % len(small), sum(small)),
        ("lease's own CPU (start-up, one walk of the tree, `/proc` audit, libgit2 reads, records, audit log; perf, untraced runs)", sr_.get("own_cpu_ms") or 0),
        ("%d fsyncs" % sr_["fsyncs"], sr_["fsync_ms"] or 0),
    ]
    sum_ = sum(v for _, v in parts)
    w(
        "A clean retire, split into its sequential parts (medians of the spawn section's runs; "
        "their sum, %s, against an untraced total of %s in the same section and %s in the retire "
        "row, whose baseline `git worktree remove` took %s):"
        % (ms(sum_), ms(sr_.get("untraced_ms")), ms(med("retire", "lease")), ms(base))
    )
    w("")
    w("| part | ms | share |")
    w("|---|---|---|")
    for label, v in parts:
        w("| %s | %s | %s |" % (label, ms(v), ("%.0f%%" % (100 * v / sum_)) if sum_ else ""))
    w("")
    if prof.get("perf"):
        pf = prof["perf"]
        w(
            "`perf stat -e task-clock` on one retire (software counters only; this VM exposes no "
            "hardware counters): lease's own CPU %s (`--no-inherit`), lease and its children %s, "
            "wall %s. %s"
            % (
                ms(pf.get("own_ms")),
                ms(pf.get("all_ms")),
                ms(pf.get("wall_ms")),
                "Most of the wall time is spent in git processes and waiting on the disk, not in lease's code.",
            )
        )
        w("")
    if prof.get("functions"):
        own = (prof.get("perf") or {}).get("own_ms")
        w(
            "`perf record -e cpu-clock --call-graph dwarf` on lease alone (`-i`: children not "
            "followed), with a symbolized build of the same code (`CARGO_PROFILE_RELEASE_STRIP=false`, "
            "`CARGO_PROFILE_RELEASE_DEBUG=line-tables-only`): where lease's own CPU goes, "
            "user and kernel time of the syscalls it makes, inclusive of callees:"
        )
        w("")
        w("| function | share of lease's own CPU | ≈ ms |")
        w("|---|---|---|")
        for name, share_ in prof["functions"]:
            w("| `%s` | %.0f%% | %s |" % (name, share_, ms(own * share_ / 100) if own else ""))
        w("")
    if prof.get("syscalls"):
        w("Lease's own syscalls during that retire (`strace -c`, lease only, counts):")
        w("")
        w("| syscall | calls |")
        w("|---|---|")
        for name, calls in prof["syscalls"][:10]:
            w("| `%s` | %d |" % (name, calls))
        w("")
    if prof.get("callgrind"):
        cg = prof["callgrind"]
        w(
            "`valgrind --tool=callgrind` on lease alone (children not traced), symbolized build "
            "(`CARGO_PROFILE_RELEASE_STRIP=false`, same optimization): %s instructions in all. "
            "Inclusive instruction counts of lease's functions:" % format(cg["total"], ",")
        )
        w("")
        w("| function | instructions | share |")
        w("|---|---|---|")
        for name, ir in cg["functions"]:
            w("| `%s` | %s | %.0f%% |" % (name, format(ir, ","), 100 * ir / cg["total"]))
        w("")
        if cg.get("note"):
            w(cg["note"])
            w("")

    if prof.get("join_functions"):
        w("## Where a join's time goes")
        w("")
        w(
            "`perf record -e cpu-clock --call-graph dwarf` over %d joins (`lease exec --adopt W -- "
            "true` of the spawn section's recorded worktree, symbolized build), samples of the "
            "`lease` processes only: where a join's own CPU goes, inclusive of callees, user and "
            "kernel time (a blocked fsync is off the CPU and not sampled; the spawn section times "
            "those). `lease::git::libgit2` rows are the in-process libgit2 reads." % prof.get("join_runs", 0)
        )
        w("")
        w("| function | share of a join's own CPU |")
        w("|---|---|")
        for name, share_ in prof["join_functions"]:
            w("| `%s` | %.0f%% |" % (name, share_))
        w("")
    # ---- what changed
    w("## What was cut (issue 7)")
    w("")
    w(
        "Git processes started by lease per scenario, counted by the spawn section above, "
        "against the same count at commit `39cf86b` (this script's run before the cuts, "
        "same fixture and method):"
    )
    w("")
    w("| scenario | git spawns before | now |")
    w("|---|---|---|")
    for key, title in SCENARIOS:
        now = len([x for x in sp[key]["spawns"] if x["cmd"].startswith("git")])
        w("| %s | %d | %d |" % (title, SPAWNS_BEFORE[key], now))
    w("")
    for line in CUTS:
        w("- " + line)
    w("")

    # ---- suggestions
    w("## What would still pay off")
    w("")
    w(
        "Ranked by the share of its row's median each would remove, every gate kept. "
        "Costs are the medians measured above."
    )
    w("")
    sugg = suggestions(rows, sp, extra, prof, med)
    for i, (title, body) in enumerate(sugg, 1):
        w("%d. **%s** %s" % (i, title, body))
        w("")

    # ---- method
    w("## How it is measured")
    w("")
    for line in method_lines(meta):
        w(line)
    w("")
    with open(out, "w") as f:
        f.write("\n".join(L))


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
    "**No `/proc` descriptor scan after a command** when `/proc/locks` lists no lock on "
    "the lease.",
]


def work(sp_):
    """Git wall time + lease's own CPU + fsync time: lease's sequential
    parts of one scenario (the command excluded), from the spawn section."""
    git = [x for x in sp_["spawns"] if x["cmd"].startswith("git")]
    return total(git) + (sp_.get("own_cpu_ms") or 0) + (sp_.get("fsync_ms") or 0)


def row_ratio(rows, row, a, b):
    """The median of per-round ratios of `a` over `b` in `row`."""
    r = rows.get(row, ({}, {}, {}))[2]
    per = [r[a][k] / r[b][k] for k in r.get(a, {}) if k in r.get(b, {}) and r[b][k]]
    return statistics.median(per) if per else None


def find(spawns, prefix):
    return [x for x in spawns if x["cmd"].startswith(prefix)]


def total(xs):
    return sum(x["ms"] or 0 for x in xs)


def suggestions(rows, sp, extra, prof, med):
    """Each suggestion with the measured cost it removes, ranked by it."""
    out = []
    rt = sp["retire"]["spawns"]
    cr = sp["create"]["spawns"]
    ad = sp["adopt"]["spawns"]
    bd = sp["bundle"]["spawns"]
    own = (prof.get("perf") or {}).get("own_ms")
    fn = dict(prof.get("functions") or [])
    inv = fn.get("lease::os::walk::inventory")
    walk = inv * own / 100 if inv and own else None  # one walk per clean retire
    w_rt, w_cr, w_ad, w_bd = work(sp["retire"]), work(sp["create"]), work(sp["adopt"]), work(sp["bundle"])
    rt_ratio = row_ratio(rows, "retire", "lease", "git")

    def proj(saving):
        if not (w_rt and rt_ratio):
            return ""
        return " The retire row would go from %.2fx to about %.2fx (projected, not measured)." % (
            rt_ratio,
            rt_ratio * (1 - saving / w_rt),
        )

    # list: one /proc scan per record.
    l1, l10 = med("list", "k1"), med("list", "k10")
    if l1 and l10:
        per = (l10 - l1) / 9000
        out.append(
            (
                frac(l10 - l10 / 10000, l10),
                "`lease list`: one `/proc` scan per command, not one per record.",
                "`record_json` calls `procs::holders` for every record that has a lease (removed "
                "ones too), and each call lists every process's `fd` directory and stats every "
                "descriptor. At 10k records that is 10k full scans: %s, about %s per record with "
                "%s processes running, which is why 10k takes %s instead of under 1 s (the 10k/1k "
                "ratio of %.1fx looks fine only because both sizes are dominated by the same "
                "per-record scan). Build one map from lease (dev, ino) to pids in a single pass, "
                "look every record up in it, and skip records whose lease file is gone (a removed "
                "record's lease was unlinked under the exclusive lock). Expected: one scan (a few "
                "ms) plus reading and printing the records. `lease reap` needs the same single "
                "scan, and `lease exec --adopt` (below) the same care with the registry."
                % (ms(l10), ms(per), extra.get("procs_during_list", "?"), ms(l10), l10 / l1),
            )
        )

    # gate 5 / gate 7.
    st = find(rt, "git status")
    ls = find(rt, "git ls-files")
    if len(st) >= 2 and ls:
        saving = (st[-1]["ms"] or 0) + (ls[-1]["ms"] or 0) + (walk or 0)
        out.append(
            (
                frac(saving, w_rt),
                "One content look per clean retire instead of two (gates 5 and 7).",
                "With nothing to archive, gate 7 repeats gate 5 a few ms later: `git status` "
                "(%s), `ls-files` (%s) and lease's walk of the tree (%s by the profile). Reading "
                "gate 6's refs *before* gate 5, and giving gate 5 gate 7's HEAD comparison (HEAD "
                "still equal to what gate 6 read, so a commit made in between cannot escape the "
                "archive), makes gate 5 the last look before `retiring`, which is what gate 7 "
                "guarantees; gate 7's probes then run only when a bundle was written in between "
                "(its in-process checks, the record and the bundle's hash, stay). Same checks, "
                "same position relative to removal. Saves %s per clean retire and per `lease "
                "exec`.%s"
                % (ms(st[-1]["ms"]), ms(ls[-1]["ms"]), ms(walk) if walk else "n/a", ms(saving), proj(saving))
                + tail(saving, w_rt, "a clean retire"),
            )
        )

    # gate 6 reads.
    g6 = [x for x in rt if re.match(r"git (remote|symbolic-ref|for-each-ref|reflog|rev-list|rev-parse --verify)", x["cmd"])]
    if g6:
        t6 = total(g6)
        out.append(
            (
                frac(t6, w_rt),
                "The rest of gate 6 in process.",
                "A clean retire still spends %d spawns, %s, on the worktree's private tips: "
                "`for-each-ref` of `refs/worktree|bisect|rewritten`, `rev-parse ORIG_HEAD` and "
                "`rev-list --single-worktree --reflog` (the durable ref and the reachability walk "
                "already run in libgit2). All three read the worktree's admin directory; libgit2 "
                "can read them (per-worktree refs and reflogs), but `rev-parse ORIG_HEAD`'s "
                "ref-name guessing and `--reflog`'s old-and-new sides need their own cases in "
                "the differential test first. Saves up to %s per retire and per exec.%s"
                % (len(g6), ms(t6), ms(t6), proj(t6)) + tail(t6, w_rt, "a clean retire"),
            )
        )

    # repeated identical reads.
    cfg, cfg_c = find(rt, "git config"), find(cr, "git config")
    ls_c = find(cr, "git ls-files")
    # Two config reads are distinct (the common config before gate 2, the
    # worktree's after it); the others repeat the first.
    save = total(cfg[1:-1]) + ((ls[0]["ms"] or 0) if len(ls) >= 3 else 0)
    save_c = total(cfg_c[1:-1]) + ((ls_c[0]["ms"] or 0) if len(ls_c) >= 3 else 0)
    if len(cfg) > 2:
        out.append(
            (
                frac(save, w_rt),
                "Read each thing once per process.",
                "`git config -z --get-regexp ^filter\\.` runs %d times per retire and %d times "
                "per `lease exec`, but only two reads differ: the common config (before gate 2 "
                "proves the worktree) and the worktree's own (after it, which also sees "
                "`config.worktree`). The others repeat the first: `repo_at` calls `Git::repo` "
                "again, and so do the launcher after the command and the retire it starts. Gate 5 "
                "runs `ls-files -v -s -z` in `probe_tree` and again in `probe_content` a moment "
                "later, and `parse_hidden` parses all 5,000 lines each time. Keeping the filter "
                "list in `RepoGit` and passing gate 5's listing on saves %s per retire and %s per "
                "exec, with no check removed (gate 7, gate 8's identity re-check and the "
                "post-removal read-back keep their own reads)."
                % (len(cfg), len(cfg_c), ms(save), ms(save_c)) + tail(save, w_rt, "a clean retire"),
            )
        )

    # adopt / join.
    ga = [x for x in ad if x["cmd"].startswith("git")]
    lf, fl = med("launch", "lease"), med("launch", "flock")
    a1, a10 = med("adoptscale", "k1"), med("adoptscale", "k10")
    if ga and lf and fl:
        cut_a = total(ga) - min(x["ms"] or 0 for x in ga)
        out.append(
            (
                frac(cut_a, w_ad),
                "`lease exec --adopt` of a recorded worktree: no git, no registry scan.",
                "The launch row is %.1fx flock(1) (target 1.5x) because a join starts %d gits "
                "(%s of git wall time in the spawn section, against %s of lease's own CPU): `git --version`, `rev-parse --git-common-dir`, the filter config "
                "twice, `worktree list`, and `rev-parse HEAD` after the command. For a worktree "
                "that already has a record, its identity is the record's (dev, ino) plus the "
                "`.git` file and the admin `gitdir` naming each other (what `linked_admin` already "
                "checks without git); the common dir is the admin dir's `commondir`; the "
                "outcome's HEAD can be read from the admin dir or git2; the filter config is "
                "never used on this path. `git --version` can be cached in the state root by "
                "(path, size, mtime). The launch target is %s, so the join must stay within "
                "about one spawn plus the record update (%d fsyncs, %s). Also, `adopt` parses "
                "every record to find the one for this path: %s with 1k records, %s with 10k. A "
                "path index (or a name derived from the path) makes that O(1)."
                % (
                    row_ratio(rows, "launch", "lease", "flock") or lf / fl,
                    len(ga),
                    ms(total(ga)),
                    ms(sp["adopt"].get("own_cpu_ms")),
                    ms(1.5 * fl),
                    sp["adopt"]["fsyncs"],
                    ms(sp["adopt"]["fsync_ms"]),
                    ms(a1),
                    ms(a10),
                )
                + tail(cut_a, w_ad, "a join, keeping one spawn"),
            )
        )

    # worktree list.
    wl = find(rt, "git worktree list")
    if len(wl) >= 2:
        out.append(
            (
                frac(total(wl) * 0.9, w_rt),
                "`git worktree list` in-process.",
                "Each retire lists worktrees %d times (%s): gate 2, gate 8's identity re-check "
                "right before removal, and the read-back after it. All three are needed, at "
                "those moments; what `git worktree list` reads is the files under "
                "`<common>/worktrees/<name>/` (`gitdir`, `locked`, `HEAD`), which git2's worktree "
                "API reads in-process (git2's `Worktree::validate` and `Worktree::is_prunable`, docs.rs/git2), "
                "with the CLI kept where libgit2 cannot open the repository."
                % (len(wl), ms(total(wl))) + tail(total(wl) * 0.9, w_rt, "a clean retire"),
            )
        )

    # creation prelude.
    pre = []
    for x in cr:
        if x["cmd"].startswith("git worktree add"):
            break
        if x["cmd"].startswith("git"):
            pre.append(x)
    if pre:
        cut = [x for x in pre if re.match(r"git (--version|check-ref-format|rev-parse --verify -q refs/heads)", x["cmd"])]
        out.append(
            (
                frac(total(cut), w_cr),
                "Fewer spawns before `git worktree add`.",
                "Creation starts %d gits before the add (%s). `check-ref-format` is needed only "
                "for a `--branch` the user named (lease's own `lease/<id prefix>` is valid by "
                "construction); whether that branch exists is a ref read (git2, or the same "
                "`cat-file --batch-check` as gate 6); `git --version` can be cached. That removes "
                "%d spawns (%s); `rev-parse HEAD` and `--git-common-dir` move with the other reads."
                % (len(pre), ms(total(pre)), len(cut), ms(total(cut))) + tail(total(cut), w_cr, "a `lease exec` (create+retire)"),
            )
        )

    # archive.
    ver = [x for x in bd if re.match(r"git (init|update-ref|bundle|cat-file|rev-list --objects|rev-parse --show-object-format|-c transfer)", x["cmd"])]
    b_l, b_c = med("bundle", "lease"), med("bundle", "clean")
    fmt = find(bd, "git rev-parse --show-object-format")
    if ver:
        out.append(
            (
                frac(total(fmt), w_bd),
                "Archive: fold the per-tip calls.",
                "Archiving one commit adds %d spawns (%s; the bundle row minus a clean retire in "
                "the same rounds: %s, the rest being the bundle's fsyncs, two sha256 passes and a "
                "record update): `rev-parse --show-object-format`, two `git init` of scratch "
                "repositories, `update-ref` per tip, `bundle create`, `bundle unbundle` with fsck, "
                "`cat-file -e` per tip, `rev-list --objects`. The verification stays (`git bundle "
                "verify` passes corrupt bundles, tests/it/adversarial.rs `c13_tampered_bundle_before_verification`). The object format can ride "
                "on the config read lease already makes (`--get-regexp "
                "'^(filter\\.|extensions\\.objectformat)'`, %s); with N tips (HEAD, ORIG_HEAD, "
                "reflog entries, private refs) the per-tip `update-ref`s become one `update-ref "
                "--stdin` and the per-tip `cat-file -e` one `cat-file --batch-check`, saving "
                "2(N-1) spawns. Small for one commit."
                % (len(ver), ms(total(ver)), ms(b_l - b_c) if b_l and b_c else "n/a", ms(total(fmt)))
                + tail(total(fmt), w_bd, "an archiving retire"),
            )
        )

    # walk.
    if walk:
        out.append(
            (
                0.0,
                "The walk: near its floor once it runs once.",
                "`os::walk::inventory` is %.0f%% of lease's own CPU in a clean retire (%s, its one "
                "walk; `strace -c` counts %s `statx` calls in one retire). Each entry needs "
                "its `statx` (size for the tombstone, mount id, type without trusting `d_type`) "
                "and each directory an open; reusing the per-entry path buffer (allocation is a "
                "visible part of the profile) is a micro-optimization."
                % (inv, ms(walk), dict(prof.get("syscalls") or []).get("statx", "?")),
            )
        )

    # fsync.
    fs_ms = sp["create"]["fsync_ms"]
    if fs_ms is not None:
        out.append(
            (
                frac(fs_ms / 3, w_cr),
                "fsync placement: measured, small; leave it.",
                "A `lease exec` (create+retire) makes %d fsyncs, %s in all; a clean retire %d "
                "(%s); a join %d (%s). Each record write costs two (the file, its directory) and "
                "each audit line one. Coalescing them would save perhaps a third, %s per exec, "
                "below the noise of every row, against the crash guarantees the matrix tests."
                % (
                    sp["create"]["fsyncs"],
                    ms(fs_ms),
                    sp["retire"]["fsyncs"],
                    ms(sp["retire"]["fsync_ms"]),
                    sp["adopt"]["fsyncs"],
                    ms(sp["adopt"]["fsync_ms"]),
                    ms(fs_ms / 3),
                ),
            )
        )

    out.sort(key=lambda t: -t[0])
    return [(t, b) for _, t, b in out]


def combined(rows, sp, prof, med):
    rt, cr = sp["retire"]["spawns"], sp["create"]["spawns"]
    rt_med, rt_base = med("retire", "lease"), med("retire", "git")
    cr_med, cr_base = med("create", "lease"), med("create", "git")
    if not (rt_med and rt_base and cr_med and cr_base):
        return None
    own = (prof.get("perf") or {}).get("own_ms")
    inv = dict(prof.get("functions") or []).get("lease::os::walk::inventory")
    walk = inv * own / 100 / 2 if inv and own else 0

    def common(sp_):
        st, ls = find(sp_, "git status"), find(sp_, "git ls-files")
        g57 = ((st[-1]["ms"] or 0) + (ls[-1]["ms"] or 0) + walk) if len(st) >= 2 and ls else 0
        g6 = total([x for x in sp_ if re.match(r"git (remote|symbolic-ref|for-each-ref|reflog|rev-list|rev-parse --verify)", x["cmd"])])
        cfg = total(find(sp_, "git config")[1:-1])
        ls1 = (ls[0]["ms"] or 0) if len(ls) >= 3 else 0
        wl = 0.9 * total(find(sp_, "git worktree list"))
        return g57 + g6 + cfg + ls1 + wl

    r = common(rt)
    pre = []
    for x in cr:
        if x["cmd"].startswith("git worktree add"):
            break
        pre.append(x)
    # The branch-exists read is already counted with the other ref reads.
    c = common(cr) + total([x for x in pre if re.match(r"git (--version|check-ref-format)", x["cmd"])])
    rt0 = row_ratio(rows, "retire", "lease", "git")
    cr0 = row_ratio(rows, "create", "lease", "git")
    return {
        "retire": r,
        "create": c,
        "rt0": rt0,
        "rt1": rt0 * (1 - r / work(sp["retire"])),
        "cr0": cr0,
        "cr1": cr0 * (1 - c / work(sp["create"])),
    }


def frac(saving, whole):
    return saving / whole if saving and whole else 0.0


def pct(x):
    return ("%.1f%%" % (100 * x)) if x < 0.01 else ("%.0f%%" % (100 * x))


def tail(saving, whole, what):
    if not (saving and whole):
        return ""
    return " Removes about %s of %s (git + lease's CPU + fsync, spawn section)." % (pct(saving / whole), what)


def method_lines(meta):
    return [
        "- **Fixture** (made fresh in a temporary directory each run): a bare repository "
        "generated with `git fast-import` (%d files in 500 directories, %d commits), cloned "
        "as the working repository, so `origin` and `refs/remotes/origin/HEAD` exist; "
        "`LEASE_HOME` and the worktree roots in the same temporary directory, a fresh one "
        "per row; `HOME` pointed at an empty directory with only `user.name`/`user.email` "
        "so no personal git config applies to either side." % (meta["files"], meta["commits"]),
        "- **Interleaving**: every row runs in rounds; in every round each command gets its "
        "own `hyperfine` call (`--runs`, `--export-json`; `--warmup` in the first round) and "
        "the order of the commands rotates from round to round, so a burst of load from other "
        "users lands on lease and its baseline alike. The worktree rows run %d rounds of one "
        "run each (lease and baseline alternate run by run), the launch row %d rounds of %d "
        "runs, the list rows one run per round. Ratios are medians of the per-round ratios."
        % (meta["runs"], meta["rounds"], max(1, -(-meta["runs"] * 5 // meta["rounds"]))),
        "- **Shell**: the launch row uses `-N` (no shell); rows that need one (`&&` in the "
        "baseline, reading the id of the worktree the prepare step made) use hyperfine's "
        "default shell on both sides, whose startup hyperfine measures and subtracts.",
        "- **Per-iteration setup** is `--prepare`, never timed: the retire rows make a "
        "worktree with `lease exec --keep -- …` then end it with `lease exec --adopt W -- "
        "true` so the record is terminal; their baselines prepare a plain `git worktree "
        "add`. The bundle row's command commits one change (the same file content as the "
        "baseline's commit) and the baseline bundles that one commit with `--not origin/HEAD`.",
        "- **Records** for the list rows are the real schema: each state root first gets one "
        "real removed and one real retained record from `lease exec`, and the generator "
        "copies them: %d active records whose leases are held (shared flock) by one `sleep` "
        "each, 85%% of the rest removed, 15%% retained with their worktree directory and "
        "lease file present." % meta["live"],
        "- **RSS**: `VmHWM` of the launcher's `/proc/<pid>/status`, read while its command "
        "(`sleep 2`) runs, %d times each, interleaved; the median." % meta["rss_runs"],
        "- **Spawns** come from traced runs of each scenario; see that section.",
        "- **Noise that ratios do not cancel**: on this VM the cost of writing a fresh "
        "5,000-file checkout is not stable (one `git worktree add` took 0.12 s to 1.9 s on the "
        "same day while this script was written, nearly all of it system time; the Machine "
        "table gives this run's figure). lease and its baselines share that cost, so the "
        "create row's ratio shrinks when checkouts are slow; the *lease − baseline* column, "
        "lease's own overhead in ms, moves less.",
    ]


def perf_functions(path, comm=None):
    """Inclusive (children) sample shares of lease's own functions from
    `perf report --children --sort sym --stdio` (only processes named
    `comm` if given)."""
    cmd = ["perf", "report", "-i", path, "--children", "--sort", "sym", "--stdio"]
    if comm:
        cmd += ["--comm", comm]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    funcs = {}
    for line in out.splitlines():
        m = re.match(r"^\s+([\d.]+)%\s+([\d.]+)%\s+\[\.\]\s+(lease::[A-Za-z0-9_:]+)\s*$", line)
        if m:
            funcs[m.group(3)] = max(funcs.get(m.group(3), 0.0), float(m.group(1)))
    skip = ("lease::main", "lease::cli::run", "lease::retire::Engine::retire", "lease::cli::exec")
    keep = [(k, v) for k, v in sorted(funcs.items(), key=lambda kv: -kv[1]) if k not in skip]
    return keep[:14]


def callgrind(path):
    """Inclusive instruction counts of lease's own functions."""
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
        capture_output=True,
        text=True,
    ).stdout
    total = 0
    funcs = {}
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$", line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        what = m.group(2)
        if "PROGRAM TOTALS" in what:
            total = ir
            continue
        fm = re.search(r":((?:<[^>]*>::)?lease::[A-Za-z0-9_:]+)", what)
        if fm:
            name = fm.group(1)
            funcs[name] = max(funcs.get(name, 0), ir)
    keep = [
        (k, v)
        for k, v in sorted(funcs.items(), key=lambda kv: -kv[1])
        if not k.startswith(("lease::main", "lease::cli::run"))
    ]
    return {"total": total, "functions": keep[:14]}


def main():
    cmd = sys.argv[1]
    if cmd == "repo":
        gen_repo(int(sys.argv[2]), int(sys.argv[3]))
    elif cmd == "records":
        live = int(os.environ.get("BENCH_LIVE", "300"))
        gen_records(sys.argv[2], sys.argv[3:], live)
    elif cmd == "procs":
        keep_procs(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
    elif cmd == "spawns":
        tmp = os.environ.get("BENCH_TMP", "")
        json.dump(spawns(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:], tmp), sys.stdout, indent=1)
    elif cmd == "perf-functions":
        json.dump(perf_functions(sys.argv[2]), sys.stdout, indent=1)
    elif cmd == "callgrind":
        json.dump(callgrind(sys.argv[2]), sys.stdout, indent=1)
    elif cmd == "report":
        report(sys.argv[2], sys.argv[3])
    else:
        sys.exit("unknown subcommand " + cmd)


if __name__ == "__main__":
    main()
