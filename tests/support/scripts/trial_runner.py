"""Randomised gpu_release trials, run INSIDE a private PID namespace (see tests/support/pidns.py).

Never run this on the machine's own process table: it kills by pattern.

  trial_runner.py batch ROOT SEED FIRST COUNT
      Runs trials FIRST..FIRST+COUNT-1 in this process: for each, builds a random
      process tree on the fake GPU root (os.fork; children call setproctitle and
      fakegpu.hold, then pause), runs the Releaser of module_utils in-process,
      checks the invariant, SIGKILLs (by PID) what it started and survived, and
      prints one JSON line per trial, then a summary line.
  trial_runner.py tree ROOT SEED INDEX
      Builds trial INDEX's tree and prints {"args": module args, "nodes": ...};
      then reads one line from stdin (the module's result as JSON, from a real
      `ansible` run), checks the same invariant, cleans up, prints the verdict.

Trial INDEX of SEED is generated from random.Random("SEED-INDEX") alone, so a
failing trial can be replayed by itself.

The invariant (the oracle below computes it from the tree's construction, not
with the module's code):
  * a node whose title matches a pattern, and is not protected, goes (pattern);
  * so does every descendant of such a node that is not protected (descendant);
  * with sweep on, so does every other unprotected node holding a selected GPU
    whose user passes sweep_users (device);
  * protected: GPU daemons, titles matching an extra `protect` regex; everything
    else stays alive, and so does every process of the namespace that is not part
    of the tree (the runner's parent shell, whose command line carries the pattern,
    included). A node titled exactly like the runner's own command line (a
    look-alike: it sits under init or another node, never beside an ancestor of
    the runner) is released by the rules above like any other: protection goes by
    identity, not by a title;
  * `killed` lists exactly the nodes that went, with the reasons above;
  * with verify on, the run fails exactly when an expected survivor keeps memory
    on a selected GPU, and the message names exactly those GPUs.
"""
import json
import os
import random
import re
import select
import signal
import sys
import time

# A program: the collection on sys.path
import _bootstrap  # noqa: F401,E402  pylint: disable=unused-import
import setproctitle  # noqa: E402
from simlib import fakegpu  # noqa: E402
from simlib.gpu_cli import daemon_exe  # noqa: E402

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError  # noqa: E402
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.release import ReleaseOptions, Releaser  # noqa: E402
from tests.support import procfs  # noqa: E402
from tests.support.procfs import starttime  # noqa: E402

NOBODY = 65534
GPUS = 8
TERM_TIMEOUT = 0.15
UNFREE_TIMEOUT = 0.8   # a trial expected to fail verification waits this long
TIMEOUT = 15.0         # every other trial: a deadline never meant to be reached

PATTERN_SETS = [
    [r"sglang::|sglang\.launch_server"],
    [r"sglang::", r"sglang\.launch_server"],
    [r"sglang::|sglang\.launch_server|sglang\.bench|sglang\.data_parallel|sglang\.srt|sgl_diffusion::"],
]
MATCH_TITLES = [
    "sglang::scheduler_TP{r}",
    "sglang::scheduler_DP0_TP{r}_EP{r}",
    "sglang::detokenizer",
    "sglang::data_parallel_controller",
    "python3 -m sglang.launch_server --model-path /models/kimi-k2.5 --tp-size 8 --port 3000{r}",
]
OTHER_TITLES = [
    "python3 /opt/helpers/prefetch_worker.py --rank {r}",
    "ray::IDLE",
    "torch_compile_worker {r}",
    "python3 -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd={r})",
    "python3 train.py --epochs 3 --gpu {r}",
    "bash /opt/run_eval.sh {r}",
]
DAEMON_TITLES = [
    "nvidia-persistenced --user nvidia-persistenced",
    "/usr/bin/nv-hostengine -n --service-account nvidia-dcgm",
    "dcgm-exporter",
    "/usr/bin/dcgm-exporter --collectors /etc/dcgm-exporter/sglang::metrics.csv",  # carries the pattern
    "/usr/bin/nvidia-fabricmanager -c /etc/fabricmanager.cfg",
    "nvidia-cuda-mps-control -d",
]
PROTECT_SETS = [["keepme"], [r"KEEP-\d+"], ["keepme", r"KEEP-\d+"]]
KEEP_SUFFIXES = [" --tag keepme", " KEEP-7"]


# ---- generating a trial -------------------------------------------------------------

def make_trial(seed, index, own_cmdline, ansible=False):
    rng = random.Random("%s-%d" % (seed, index))
    patterns = rng.choice(PATTERN_SETS)
    protect = rng.choice(PROTECT_SETS) if rng.random() < 0.4 else []
    if rng.random() < 0.35:
        gpus = "all"
    else:
        sel = sorted(rng.sample(range(GPUS), rng.randint(1, GPUS - 1)))
        gpus = ",".join(map(str, sel)) if rng.random() < 0.3 else sel
    if gpus == "all":
        selected = set(range(GPUS))
    elif isinstance(gpus, str):
        selected = set(int(g) for g in gpus.split(","))
    else:
        selected = set(gpus)
    sweep_users = ["root"] if rng.random() < 0.5 else []
    opts = {
        "patterns": patterns, "gpus": gpus, "protect": protect, "sweep_users": sweep_users,
        "sweep": rng.random() < 0.85, "verify": rng.random() < 0.85,
        "term_timeout": TERM_TIMEOUT, "timeout": TIMEOUT, "nvml_timeout": 10,
    }
    check_mode = (not ansible) and rng.random() < 0.08
    nodes = []
    for i in range(rng.randint(3, 13)):
        parent = rng.choice([None, None] + list(range(i))) if i else None
        kind = rng.choices(["match", "other", "daemon", "bystander", "lookalike"],
                           [0.35, 0.3, 0.12, 0.2, 0.03])[0]
        if kind == "lookalike" and ansible:
            kind = "bystander"  # under ansible the module's command line is not the runner's
        r = rng.randint(0, 7)
        if kind == "match":
            title = rng.choice(MATCH_TITLES).format(r=r)
        elif kind == "daemon":
            title = rng.choice(DAEMON_TITLES)
        elif kind == "lookalike":
            title = own_cmdline
        else:
            title = rng.choice(OTHER_TITLES).format(r=r)
        keep = kind in ("match", "other") and rng.random() < 0.2
        if keep:
            title += rng.choice(KEEP_SUFFIXES)
        gpus_held = [] if kind in ("bystander", "lookalike") or rng.random() < 0.2 \
            else sorted(rng.sample(range(GPUS), rng.choice([1, 1, 2])))
        nodes.append({
            "id": i, "parent": parent, "kind": kind, "title": title, "keep": keep,
            "gpus": gpus_held, "mib": rng.choice([0, 100, 500, 2000, 4000]) if gpus_held else 0,
            "user": "nobody" if kind in ("match", "other") and rng.random() < 0.2 else "root",
            "ignore_term": rng.random() < 0.15,
        })
    expected = oracle(nodes, opts, selected)
    # Expected survivors keep no memory on a selected GPU (else verification must
    # wait out its timeout), except in the trials meant to check that failure.
    unfree = set()
    want_unfree = opts["verify"] and rng.random() < 0.1
    for node in nodes:
        if node["id"] not in expected and node["mib"] and selected & set(node["gpus"]):
            if want_unfree and not unfree:
                unfree |= selected & set(node["gpus"])
            else:
                node["mib"] = 0
    if unfree:
        opts["timeout"] = UNFREE_TIMEOUT
    return {"seed": seed, "index": index, "opts": opts, "check_mode": check_mode, "nodes": nodes,
            "selected": sorted(selected), "expected": expected,
            "unfree": sorted(unfree) if opts["verify"] else []}


def oracle(nodes, opts, selected):
    """{node id: reason} that must go, from how the tree was built."""
    regexes = [re.compile(p) for p in opts["patterns"]]
    keep = [re.compile(p) for p in opts["protect"]]

    def protected(n):
        return n["kind"] == "daemon" or any(r.search(n["title"]) for r in keep)

    kids = {}
    for n in nodes:
        kids.setdefault(n["parent"], []).append(n["id"])
    out = {}
    matched = [n["id"] for n in nodes if any(r.search(n["title"]) for r in regexes) and not protected(n)]

    def below(nid):
        found, stack = [], [nid]
        while stack:
            for kid in kids.get(stack.pop(), ()):
                found.append(kid)
                stack.append(kid)
        return found

    # Trees: a match with its descendants (one session here); with a GPU subset
    # a tree whose unprotected members hold only unselected GPUs is left alone; one holding
    # no GPU at all (no CUDA_VISIBLE_DEVICES here) counts as every GPU.
    depth = {n["id"]: 0 for n in nodes}
    for n in nodes:
        p = n["parent"]
        while p is not None:
            depth[n["id"]] += 1
            p = nodes[p]["parent"]
    tree_of, trees = {}, {}
    for nid in sorted(matched, key=lambda i: (depth[i], i)):
        top = tree_of.get(nid, nid)
        for member in [nid] + below(nid):
            if member not in tree_of:
                tree_of[member] = top
                trees.setdefault(top, []).append(member)
    scoped = opts["gpus"] != "all"
    for members in trees.values():
        held = set()
        for m in members:
            if not protected(nodes[m]):
                held |= set(nodes[m]["gpus"])
        if scoped and held and not held & selected:
            continue
        for m in members:
            if not protected(nodes[m]):
                out[m] = "pattern" if m in matched else "descendant"
    if opts["sweep"]:
        for n in nodes:
            if n["id"] in out or protected(n) or not (selected & set(n["gpus"])):
                continue
            if opts["sweep_users"] and n["user"] not in opts["sweep_users"]:
                continue
            out[n["id"]] = "device"
    return out


# ---- building and tearing down a tree ---------------------------------------------------

def _node(root, nodes, node, wfd):
    """In a forked child: fork own children, take the title, hold memory, report, pause."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # reap our children: no zombies left behind
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        for kid in nodes:
            if kid["parent"] == node["id"]:
                if os.fork() == 0:
                    _node(root, nodes, kid, wfd)
        if node["kind"] == "daemon":
            # A GPU daemon is what it runs: exec a root-owned copy of the
            # interpreter named like the daemon; it holds the memory and reports.
            exe, env = daemon_exe(root, node["title"])
            os.set_inheritable(wfd, True)
            os.execve(exe, [exe, os.path.abspath(__file__), "daemon-node", root, json.dumps(node), str(wfd)], env)
        setproctitle.setproctitle(node["title"])
        if node["ignore_term"]:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if node["gpus"]:
            fakegpu.hold(root, node["gpus"], node["mib"])
        if node["user"] == "nobody":
            os.setgid(NOBODY)
            os.setuid(NOBODY)
        os.write(wfd, ("%d %d\n" % (node["id"], os.getpid())).encode())
        os.close(wfd)
    except BaseException as exc:  # report, then die: the runner fails the trial
        try:
            os.write(wfd, ("%d error %s\n" % (node["id"], str(exc).replace("\n", " "))).encode())
        finally:
            os._exit(3)
    while True:
        signal.pause()


def build(root, trial):
    """Start the tree (roots reparented to the namespace's init); {id: (pid, starttime)}."""
    nodes = trial["nodes"]
    rfd, wfd = os.pipe()
    launcher = os.fork()
    if launcher == 0:
        try:
            os.close(rfd)
            for node in nodes:
                if node["parent"] is None and os.fork() == 0:
                    _node(root, nodes, node, wfd)
        finally:
            os._exit(0)  # roots become children of init: not our descendants
    os.close(wfd)
    os.waitpid(launcher, 0)
    pids, buf, deadline = {}, b"", time.monotonic() + 30
    while len(pids) < len(nodes):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([rfd], [], [], left)[0]:
            raise RuntimeError("tree not ready: %d of %d nodes" % (len(pids), len(nodes)))
        chunk = os.read(rfd, 65536)
        if not chunk:
            raise RuntimeError("tree start failed: %d of %d nodes reported" % (len(pids), len(nodes)))
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            nid, rest = line.decode().split(" ", 1)
            if rest.startswith("error"):
                raise RuntimeError("node %s: %s" % (nid, rest))
            pids[int(nid)] = int(rest)
    os.close(rfd)
    return {nid: (pid, starttime(pid)) for nid, pid in pids.items()}


def alive(pid, start):
    """The very process (PID and start time) still runs and is not a zombie."""
    fields = procfs.stat_fields(pid)
    return fields is not None and fields[0] != "Z" and int(fields[19]) == start


def others():
    """(pid, starttime) of every process here that is neither us nor our children."""
    me = os.getpid()
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != me:
            fields = procfs.stat_fields(entry)
            if fields is None:
                continue
            if int(fields[1]) != me and fields[0] != "Z":
                out.add((int(entry), int(fields[19])))
    return out


def cleanup(root, pids):
    for pid, start in pids.values():
        if alive(pid, start):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    deadline = time.monotonic() + 20
    while any(alive(p, s) for p, s in pids.values()) or \
            any(g["used_mib"] for g in fakegpu.read_status(root)):
        if time.monotonic() > deadline:
            raise RuntimeError("tree or its GPU memory outlived the cleanup")
        time.sleep(0.005)


# ---- checking ----------------------------------------------------------------------

def check(trial, pids, result, error, gone_ids, outsiders_gone):
    """A list of problems (empty when the trial holds the invariant)."""
    problems = []
    expected = {int(k): v for k, v in trial["expected"].items()}
    by_pid = {pid: nid for nid, (pid, unused) in pids.items()}
    killed = {}
    for rec in (result or {}).get("killed", []):
        killed[rec["pid"]] = rec["reason"]
    strangers = sorted(set(killed) - set(by_pid))
    if strangers:
        problems.append("killed lists processes outside the tree: %s" % strangers)
    killed_ids = {by_pid[p]: r for p, r in killed.items() if p in by_pid}
    if killed_ids != expected:
        problems.append("killed %s != expected %s" % (sorted(killed_ids.items()), sorted(expected.items())))
    if outsiders_gone:
        problems.append("processes outside the tree were killed: %s" % sorted(outsiders_gone))
    if trial["check_mode"]:
        if gone_ids:
            problems.append("check mode, yet nodes went: %s" % sorted(gone_ids))
    else:
        if gone_ids != set(killed_ids):
            problems.append("went %s != killed %s" % (sorted(gone_ids), sorted(killed_ids)))
        if gone_ids != set(expected):
            problems.append("went %s != expected %s" % (sorted(gone_ids), sorted(expected)))
    if result is not None:
        if result.get("failed_to_kill"):
            problems.append("failed_to_kill: %s" % result["failed_to_kill"])
        if result.get("changed") != bool(expected):
            problems.append("changed %s with %d expected" % (result.get("changed"), len(expected)))
    want_fail = bool(trial["unfree"])  # check mode predicts the real run's failure too
    if want_fail != (error is not None):
        problems.append("error %r, expected %s" % (error, "a failure on GPUs %s" % trial["unfree"]
                                                   if want_fail else "success"))
    elif error is not None:
        named = sorted(int(g) for g in re.findall(r"GPU (\d+) \(", error))
        if named != trial["unfree"]:
            problems.append("message names GPUs %s, expected %s: %s" % (named, trial["unfree"], error))
    return problems


# The module's defaults for what a trial leaves out (gpu_release.py's argument spec).
MODULE_DEFAULTS = {"max_used_mib": 0.0, "v1_reserve_mib": 1024.0, "devices": None, "force_broad": False}


def run_in_process(trial):
    opts = ReleaseOptions(**dict(MODULE_DEFAULTS, **trial["opts"]))
    try:
        return Releaser(opts, check_mode=trial["check_mode"]).run(), None
    except GpuFleetError as exc:
        return exc.result, exc.msg


def one_trial(root, trial, runner):
    before = others()
    pids = build(root, trial)
    try:
        t0 = time.monotonic()
        result, error = runner(trial, pids)
        took = time.monotonic() - t0
        gone = {nid for nid, (pid, start) in pids.items() if not alive(pid, start)}
        outsiders_gone = {pid for pid, start in before if not alive(pid, start)}
        problems = check(trial, pids, result, error, gone, outsiders_gone)
        return {"index": trial["index"], "ok": not problems, "problems": problems,
                "nodes": len(trial["nodes"]), "expected": len(trial["expected"]),
                "collateral": len(outsiders_gone) + len(gone - set(int(k) for k in trial["expected"])),
                "seconds": round(took, 3),
                "spec": None if not problems else trial, "pids": None if not problems else pids}
    finally:
        cleanup(root, pids)


def daemon_node(root, node, wfd):
    """A daemon node after its exec (see _node): title, memory, report, pause."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        setproctitle.setproctitle(node["title"])
        if node["ignore_term"]:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if node["gpus"]:
            fakegpu.hold(root, node["gpus"], node["mib"])
        os.write(wfd, ("%d %d\n" % (node["id"], os.getpid())).encode())
        os.close(wfd)
    except BaseException as exc:  # report, then die: the runner fails the trial
        os.write(wfd, ("%d error %s\n" % (node["id"], str(exc).replace("\n", " "))).encode())
        os._exit(3)
    while True:
        signal.pause()


def main(argv):
    if argv[0] == "daemon-node":
        return daemon_node(argv[1], json.loads(argv[2]), int(argv[3]))
    mode, root, seed = argv[0], argv[1], argv[2]
    with open("/proc/self/cmdline") as f:
        own = " ".join(f.read().split("\0")).strip()
    parent = os.getppid()
    if mode == "batch":
        first, count = int(argv[3]), int(argv[4])
        stats = {"trials": 0, "failed": 0, "collateral": 0, "killed": 0, "nodes": 0, "check_mode": 0,
                 "unfree": 0, "seconds": 0.0}
        t0 = time.monotonic()
        for index in range(first, first + count):
            trial = make_trial(seed, index, own)
            rep = one_trial(root, trial, lambda t, _p: run_in_process(t))
            print(json.dumps(rep), flush=True)
            stats["trials"] += 1
            stats["failed"] += 0 if rep["ok"] else 1
            stats["collateral"] += rep["collateral"]
            stats["killed"] += 0 if trial["check_mode"] else rep["expected"]
            stats["nodes"] += rep["nodes"]
            stats["check_mode"] += trial["check_mode"]
            stats["unfree"] += bool(trial["unfree"])
        stats["seconds"] = round(time.monotonic() - t0, 1)
        stats["parent_alive"] = os.getppid() == parent
        print(json.dumps({"summary": stats}), flush=True)
        return 0
    if mode == "tree":
        index = int(argv[3])
        trial = make_trial(seed, index, own, ansible=True)

        def through_ansible(t, pids):
            args = dict(t["opts"])
            print(json.dumps({"args": args, "pids": {k: v[0] for k, v in pids.items()}}), flush=True)
            res = json.loads(sys.stdin.readline())
            return res, (res.get("msg") or "failed") if res.get("_rc") else None

        print(json.dumps(one_trial(root, trial, through_ansible)), flush=True)
        return 0
    raise SystemExit("unknown mode %r" % mode)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
