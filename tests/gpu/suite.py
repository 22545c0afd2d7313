"""gpu_release against real CUDA processes holding real GPU memory.

    python3 tests/gpu/suite.py [--json OUT.json] [--only CASE,...] [--tree-gib 24]

Needs: NVIDIA GPUs, PyTorch, nvidia-ml-py, psutil, setproctitle, ansible-core, root
(for the PID-namespace case). Works for any GPU count. Prints PASS/FAIL and seconds
per case; exits 1 on any failure.

Safety: every process the suite starts carries `gfrun=TOKEN` (a fresh random
token) in its title; every kill pattern requires that token, and every
gpu_release run passes `protect: ['^(?!.*gfrun=TOKEN)']`, so the module can
signal no process the suite did not start, whatever else runs on the host.
Each case stops its own processes (by PID, re-checking the token) in a finally
block and waits until every GPU is back at the idle level measured at start.
"""
import argparse
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# A program run on the GPU machine from a copy of the checkout: gpuview.py beside it, and
# the repository root for tests.support (stdlib only; no build/ needed there).
sys.path[:0] = [HERE, REPO]

import gpuview  # noqa: E402

from tests.support import procfs  # noqa: E402

PY = sys.executable
HOLDER = os.path.join(HERE, "holder.py")
SERVER = "python3 -m sglang.launch_server --model-path /models/stand-in --tp-size %d --port 30000"


class CaseFailed(AssertionError):
    pass


def check(cond, what):
    if not cond:
        raise CaseFailed(what)


class Suite:
    def __init__(self, args):
        self.args = args
        self.token = "gfrun=" + secrets.token_hex(4)
        self.nv = gpuview.Nvml()
        self.n = self.nv.count
        self.devices = os.environ.get("GPUFLEET_NVIDIA_DEVICES", "/dev")
        self.ansible = args.ansible or shutil.which("ansible") or os.path.join(os.path.dirname(PY), "ansible")
        self.protect = ["^(?!.*%s)" % self.token]
        self.pat = r"(sglang::|sglang\.launch_server).*%s" % self.token
        self.started = []      # Popen objects of this case
        self.pids = set()      # every PID (host view) this case started
        self.results = []
        self.facts = {}
        self.idle = self.nv.used_all_mib()

    # ---- processes ----------------------------------------------------------
    def title(self, text):
        return "%s %s" % (text, self.token)

    def start(self, title, gpu=0, gib=0.0, kids=(), ignore_term=False, context=False, wrap=None, extra=(), env=None):
        """Start a holder (and its children); returns its ready line {'pid', 'children'}."""
        cmd = [PY, HOLDER, "--title", self.title(title), "--gpu", str(gpu), "--gib", str(gib)]
        for k_gpu, k_gib, k_title, *flags in kids:
            cmd += ["--child", "%d,%s,%s%s" % (k_gpu, k_gib, self.title(k_title),
                                               "".join("," + f for f in flags))]
        if ignore_term:
            cmd.append("--ignore-term")
        if context:
            cmd.append("--context")
        cmd += list(extra)
        if wrap:
            cmd = wrap(cmd)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)
        self.started.append(proc)
        self.pids.add(proc.pid)
        line = proc.stdout.readline()
        check(line, "holder %r did not start (exit %s)" % (title, proc.poll()))
        info = json.loads(line)
        self.pids.update(info["children"].values())
        if not wrap:
            self.pids.add(info["pid"])
        return info

    def stop_case(self):
        """SIGKILL what the case started (token re-checked), reap, wait for idle GPUs."""
        for pid in sorted(self.pids):
            if gpuview.alive(pid) and self.token in gpuview.cmdline(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        for proc in self.started:
            if proc.poll() is None:
                try:
                    proc.kill()
                except OSError:
                    pass
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        self.started, self.pids = [], set()
        took = self.nv.wait_idle(self.idle, timeout=60)
        if took is None:
            raise CaseFailed("GPUs not back at idle after the case: v2 used %s MiB" % self.nv.used_all_mib())

    # ---- gpu_release ----------------------------------------------------------
    def release(self, args, check_mode=False, protect=True):
        """Run gpufleet.serving.gpu_release through `ansible localhost`; result dict."""
        args = dict(args)
        if protect:
            args["protect"] = list(args.get("protect", [])) + self.protect
        return self.module("gpu_release", args, check_mode)

    def module(self, name, args, check_mode=False):
        """Run gpufleet.serving.NAME through `ansible localhost`; result dict."""
        tree = tempfile.mkdtemp(prefix="gf-gpu-tree-")
        cmd = [self.ansible, "localhost", "-m", "gpufleet.serving." + name, "-a", json.dumps(args),
               "-t", tree, "-e", "ansible_python_interpreter=%s" % PY]
        if check_mode:
            cmd.append("--check")
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False")
        t0 = time.monotonic()
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
        wall = time.monotonic() - t0
        try:
            with open(os.path.join(tree, "localhost")) as handle:
                res = json.load(handle)
        except OSError:
            raise CaseFailed("no result from ansible (rc %d):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
        finally:
            shutil.rmtree(tree, ignore_errors=True)
        res["_rc"], res["_wall"], res["_stdout"] = proc.returncode, round(wall, 3), proc.stdout
        return res

    def direct(self, args, check_mode=False):
        """gpu_release's logic without Ansible (tests/gpu/direct_release.py)."""
        args = dict(args, protect=list(args.get("protect", [])) + self.protect)
        cmd = [PY, os.path.join(HERE, "direct_release.py"), json.dumps(args)] + (["--check"] if check_mode else [])
        t0 = time.monotonic()
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO, check=False)
        wall = time.monotonic() - t0
        check(out.returncode == 0, "direct_release failed: %s" % out.stderr[-2000:])
        res = json.loads(out.stdout.splitlines()[-1])
        res["_proc_wall"] = round(wall, 3)
        return res

    def worker_only_mib(self, pid):
        """MiB NVML charges to one process on GPU 0 (its allocations and context)."""
        for p, used in self.nv.procs(0).get("ComputeRunningProcesses", []):
            if p == pid and used is not None:
                return used / 2**20
        return 0.0

    def used_gib(self):
        return round(sum(self.nv.used_all_mib()) / 1024.0, 2)

    # ---- running ------------------------------------------------------------------
    def run_case(self, name, fn):
        t0 = time.monotonic()
        status, detail, facts = "PASS", "", {}
        try:
            facts = fn() or {}
        except CaseFailed as exc:
            status, detail = "FAIL", str(exc)
        except Exception:  # a crash in the case is a failure too
            status, detail = "FAIL", traceback.format_exc()
        finally:
            try:
                self.stop_case()
            except CaseFailed as exc:
                status, detail = "FAIL", (detail + "; " if detail else "") + str(exc)
        took = time.monotonic() - t0
        self.results.append({"case": name, "status": status, "seconds": round(took, 2),
                             "detail": detail, "facts": facts})
        print("%-4s %-22s %7.2fs  %s" % (status, name, took, detail.replace("\n", "\n     ")), flush=True)
        if facts:
            print("     facts: " + json.dumps(facts, default=str), flush=True)


def killed_by_pid(res):
    return {k["pid"]: k for k in res.get("killed", [])}


def short(res):
    """The parts of a result worth printing."""
    keep = ("_rc", "_wall", "changed", "elapsed", "timings", "msg")
    out = {k: res[k] for k in keep if k in res}
    out["killed"] = [{k: e.get(k) for k in ("pid", "cmdline", "reason", "signals", "gone_after")}
                     for e in res.get("killed", [])]
    out["gpus"] = [{k: g.get(k) for k in ("index", "before", "after", "free")} for g in res.get("gpus", [])]
    out["protected_holders"] = [(h["pid"], h.get("protected"), h["cmdline"][:60])
                                for h in res.get("protected_holders", [])]
    return out


# ---- the cases ------------------------------------------------------------------------

def case_device_files(s):
    """What a CUDA process opens and maps, what NVML lists, what a context costs."""
    facts = {"idle_v1_used_mib": [round(s.nv.v1(i)["used"] / 2**20, 1) for i in range(s.n)],
             "idle_v2": [{k: round(v / 2**20, 1) for k, v in s.nv.v2(i).items()} for i in range(s.n)]}
    facts["nvml_only_process_files"] = gpuview.device_files(os.getpid(), s.devices)
    ctx = s.start("gfprobe-context", gpu=0, context=True)
    facts["context_only_v2_used_mib"] = round(s.nv.used_mib(0), 1)
    facts["context_process_files"] = gpuview.device_files(ctx["pid"], s.devices)
    big = s.start("gfprobe-holder", gpu=0, gib=2)
    facts["holder_2gib_v2_used_mib"] = round(s.nv.used_mib(0), 1)
    facts["holder_2gib_v1_used_mib"] = round(s.nv.v1(0)["used"] / 2**20, 1)
    facts["nvml_procs_gpu0"] = s.nv.procs(0)
    files = gpuview.device_files(big["pid"], s.devices)
    facts["holder_files"] = files
    check(any(f.endswith("nvidia%d" % s.nv.minors[0]) for f in files["fds"]), "holder has no /dev/nvidiaN open")
    listed = [p for p, unused in s.nv.procs(0)["ComputeRunningProcesses"]]
    check(big["pid"] in listed and ctx["pid"] in listed, "NVML compute list %s lacks holders" % listed)
    if s.n > 1:  # a process pinned to GPU 0: does it open the other GPUs' files?
        others = ["nvidia%d" % m for m in s.nv.minors[1:]]
        facts["pinned_process_opens_other_gpus"] = sorted(
            f for f in files["fds"] + files["maps"] if os.path.basename(f) in others)
    return facts


def tree_shape(s, total_gib):
    workers = max(s.n, 4)
    gib = round(total_gib / workers, 2)
    return workers, gib, [(r % s.n, gib, "sglang::scheduler_TP%d" % r) for r in range(workers)]


def case_server_tree(s):
    """A server parent and scheduler workers holding >= 20 GB, released by pattern (the timing case)."""
    workers, gib, kids = tree_shape(s, s.args.tree_gib)
    kids.append((0, 1, "python3 /opt/helpers/prefetch_worker.py"))  # unrelated title, a child
    tree = s.start(SERVER % workers, kids=kids)
    held = s.used_gib()
    check(held >= 20, "the tree holds only %.1f GiB" % held)
    res = s.release({"patterns": [s.pat], "term_timeout": 5})
    s.facts["server_tree_run"] = res
    check(res["_rc"] == 0, "gpu_release failed: %s" % res.get("msg"))
    check(res["changed"] is True, "changed is not true")
    pids = [tree["pid"]] + list(tree["children"].values())
    check(not any(gpuview.alive(p) for p in pids), "a process of the tree is still alive")
    got = {p: k["reason"] for p, k in killed_by_pid(res).items()}
    check(got.get(tree["pid"]) == "pattern", "parent reason %s" % got.get(tree["pid"]))
    helper = tree["children"][s.title("python3 /opt/helpers/prefetch_worker.py")]
    check(got.get(helper) == "descendant", "unrelated child reason %s" % got.get(helper))
    check(set(got) == set(pids), "killed %s, tree %s" % (sorted(got), sorted(pids)))
    check(all(g["free"] for g in res["gpus"]), "a GPU is not free")
    check([g["index"] for g in res["gpus"]] == list(range(s.n)), "not every GPU verified")
    return {"held_gib": held, "workers": workers, "gib_each": gib, "ansible_wall_s": res["_wall"],
            "module_elapsed_s": res["elapsed"], "timings": res["timings"],
            "gone_after_max_s": max(k["gone_after"] for k in res["killed"]),
            "after_used_mib": [g["after"]["used_mib"] for g in res["gpus"]]}


def case_tree_direct(s):
    """The same tree released by the module_utils Releaser directly (no Ansible start-up)."""
    unused_parent, unused_workers, kids = tree_shape(s, s.args.tree_gib)
    s.start(SERVER % len(kids), kids=kids)
    held = s.used_gib()
    res = s.direct({"patterns": [s.pat], "term_timeout": 5})
    check(not res["failed"], "direct release failed: %s" % res.get("msg"))
    check(all(g["free"] for g in res["gpus"]), "a GPU is not free")
    return {"held_gib": held, "releaser_wall_s": res["_wall"], "module_elapsed_s": res["elapsed"],
            "timings": res["timings"], "gone_after_max_s": max(k["gone_after"] for k in res["killed"])}


def case_driver_release(s):
    """The driver's own release time: SIGKILL holders, poll NVML v2 used every 5 ms until idle."""
    facts = {}
    one = s.start("gfdriver-single", gpu=0, gib=s.args.tree_gib)
    proc = s.started[-1]
    t0 = time.monotonic()
    os.kill(one["pid"], signal.SIGKILL)
    proc.wait()
    reaped = time.monotonic() - t0
    freed = s.nv.wait_idle(s.idle, timeout=30)
    check(freed is not None, "memory never came back after SIGKILL")
    facts["single_%sgib_reaped_s" % s.args.tree_gib] = round(reaped, 4)
    facts["single_%sgib_idle_s" % s.args.tree_gib] = round(reaped + freed, 4)
    unused_parent, unused_workers, kids = tree_shape(s, s.args.tree_gib)
    tree = s.start(SERVER % len(kids), kids=kids)
    facts["tree_held_gib"] = s.used_gib()
    t0 = time.monotonic()
    for pid in tree["children"].values():
        os.kill(pid, signal.SIGKILL)
    freed = s.nv.wait_idle(s.idle, timeout=30)
    check(freed is not None, "tree memory never came back after SIGKILL")
    facts["tree_sigkill_to_idle_s"] = round(time.monotonic() - t0, 4)
    return facts


def case_orphans(s):
    """Workers whose server parent was SIGKILLed; an unrelated orphan is found by the device sweep."""
    kids = [(r % s.n, 4, "sglang::scheduler_TP%d" % r) for r in range(2)] + [(0, 2, "ray::IDLE")]
    tree = s.start(SERVER % 2, kids=kids)
    os.kill(tree["pid"], signal.SIGKILL)
    s.started[-1].wait()
    workers = tree["children"]
    parents = {t: str(procfs.ppid(p)) for t, p in workers.items()}
    res = s.release({"patterns": [s.pat]})
    check(res["_rc"] == 0, "gpu_release failed: %s" % res.get("msg"))
    got = {p: k["reason"] for p, k in killed_by_pid(res).items()}
    check(got.get(workers[s.title("sglang::scheduler_TP0")]) == "pattern", "TP0 reason %s" % got)
    check(got.get(workers[s.title("ray::IDLE")]) == "device", "unrelated orphan reason %s" % got)
    check(not any(gpuview.alive(p) for p in workers.values()), "an orphan survived")
    check(all(g["free"] for g in res["gpus"]), "a GPU is not free")
    return {"orphans_reparented_to": sorted(set(parents.values())), "reasons": sorted(got.values()),
            "module_elapsed_s": res["elapsed"]}


def case_sigterm_ignored(s):
    """A worker that ignores SIGTERM (SigIgn) gets SIGKILL at once, not after term_timeout."""
    w = s.start("sglang::scheduler_TP0", gpu=0, gib=4, ignore_term=True)
    res = s.release({"patterns": [s.pat], "term_timeout": 5})
    check(res["_rc"] == 0, "gpu_release failed: %s" % res.get("msg"))
    entry = killed_by_pid(res).get(w["pid"])
    check(entry and entry["signals"] == ["SIGKILL"], "signals %s" % (entry and entry["signals"]))
    check(entry.get("sigkill_at_once") == "SIGTERM ignored", "sigkill_at_once %s" % entry.get("sigkill_at_once"))
    check(entry["gone_after"] < 1.0, "gone after %s" % entry["gone_after"])
    check(not gpuview.alive(w["pid"]), "still alive")
    return {"signals": entry["signals"], "gone_after_s": entry["gone_after"], "module_elapsed_s": res["elapsed"]}


def case_sigterm_caught(s):
    """A worker that handles SIGTERM and lives on gets SIGKILL at term_timeout."""
    w = s.start("sglang::scheduler_TP0", gpu=0, gib=4, extra=["--catch-term"])
    res = s.release({"patterns": [s.pat], "term_timeout": 1})
    check(res["_rc"] == 0, "gpu_release failed: %s" % res.get("msg"))
    entry = killed_by_pid(res).get(w["pid"])
    check(entry and entry["signals"] == ["SIGTERM", "SIGKILL"], "signals %s" % (entry and entry["signals"]))
    check(entry["gone_after"] >= 1.0, "gone after %s" % entry["gone_after"])
    check(not gpuview.alive(w["pid"]), "still alive")
    return {"signals": entry["signals"], "gone_after_s": entry["gone_after"], "module_elapsed_s": res["elapsed"]}


def case_leader_exit(s):
    """A CUDA worker whose main thread exited while another thread holds the memory: signalled, waited, named.

    The worker is a child of the server parent (so the pattern reaches it as a descendant even where
    its own cmdline reads empty). protect is off for this release: the token guard matches the empty
    cmdline of such a leader; sweep is off, so only the token's own pattern tree is touched.
    """
    tree = s.start(SERVER % 1, kids=[(0, 4, "sglang::scheduler_TP0", "leader-exit")])
    child = tree["children"][s.title("sglang::scheduler_TP0")]
    t0 = time.monotonic()
    while gpuview.state(child) != "Z":
        check(time.monotonic() - t0 < 20, "the worker's main thread never exited")
        time.sleep(0.01)
    with open("/proc/%d/cmdline" % child, "rb") as handle:
        leader_cmdline = handle.read()
    facts = {"leader_state": gpuview.state(child), "leader_cmdline_bytes": len(leader_cmdline),
             "live_threads": len(gpuview.live_threads(child)),
             "leader_files": gpuview.device_files(child, s.devices),
             "used_before_mib": s.nv.used_all_mib()}
    tid = gpuview.live_threads(child)[0]
    with open("/proc/%d/task/%d/maps" % (child, tid)) as handle:
        facts["thread_maps_nvidia_lines"] = sum(1 for line in handle if "/nvidia" in line)
    check(gpuview.alive(child), "the worker's threads are gone")
    res = s.release({"patterns": [s.pat], "gpus": [0], "sweep": False, "term_timeout": 5, "timeout": 30},
                    protect=False)
    check(res["_rc"] == 0, "gpu_release failed: %s" % res.get("msg"))
    entry = killed_by_pid(res).get(child)
    check(entry is not None, "the worker was not signalled: %s" % short(res))
    check(entry["signals"] == ["SIGTERM"], "signals %s" % entry["signals"])
    check(s.title("sglang::scheduler_TP0") in entry["cmdline"], "named %r" % entry["cmdline"])
    check(not gpuview.alive(child), "still alive")
    check(all(g["free"] for g in res["gpus"]), "GPU 0 not free")
    facts.update(signals=entry["signals"], gone_after_s=entry["gone_after"], named=entry["cmdline"],
                 module_elapsed_s=res["elapsed"], timings=res.get("timings"))
    return facts


def case_zombie(s):
    """A CUDA child that exited but is not reaped: its files, NVML's view, and gpu_release's."""
    parent = s.start("gfzombie-parent", kids=[(0, 4, "gfzombie-child")])
    child = parent["children"][s.title("gfzombie-child")]
    facts = {"alive_files": gpuview.device_files(child, s.devices)}
    t0 = time.monotonic()
    os.kill(child, signal.SIGKILL)
    while gpuview.state(child) != "Z":
        check(time.monotonic() - t0 < 10, "child never became a zombie")
        time.sleep(0.001)
    facts["zombie_after_s"] = round(time.monotonic() - t0, 4)
    freed = s.nv.wait_idle(s.idle, timeout=30)
    facts["memory_idle_after_kill_s"] = None if freed is None else round(time.monotonic() - t0, 4)
    facts["zombie_state"] = gpuview.state(child)
    facts["zombie_files"] = gpuview.device_files(child, s.devices)
    facts["nvml_procs_gpu0"] = s.nv.procs(0)
    facts["v2_used_mib"] = s.nv.used_all_mib()
    check(freed is not None, "a zombie keeps GPU memory")
    check(not facts["zombie_files"]["fds"] and not facts["zombie_files"]["maps"], "zombie still shows device files")
    facts["nvml_lists_zombie"] = child in [p for p, unused in s.nv.procs(0)["ComputeRunningProcesses"]]
    res = s.release({})  # sweep only
    check(res["_rc"] == 0, "gpu_release failed: %s" % res.get("msg"))
    check(res["changed"] is False, "the zombie (or its parent) was signalled: %s" % res["killed"])
    facts["release_changed"] = res["changed"]
    return facts


def case_pid_namespace(s):
    """A CUDA process in its own PID namespace: NVML's PIDs outside and inside; the sweep frees it."""
    def wrap(cmd):  # sh stays PID 1 so the holder is an ordinary process (as under a container init)
        return ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-c",
                " ".join("'%s'" % a.replace("'", "'\\''") for a in cmd) + "; exit 0"]
    inner = s.start("gfns-worker", gpu=0, gib=4, wrap=wrap)
    unshare = s.started[-1].pid
    sh = gpuview.children(unshare)
    check(sh, "no namespace init under unshare")
    hosts = gpuview.children(sh[0])
    check(hosts, "no holder under the namespace's sh")
    host_pid = hosts[0]
    s.pids.add(host_pid)
    facts = {"holder_pid_inside": inner["pid"], "holder_pid_host": host_pid, "nspid": gpuview.nspid(host_pid)}
    outside = [p for p, unused in s.nv.procs(0)["ComputeRunningProcesses"]]
    facts["nvml_pids_outside"] = outside
    probe = subprocess.run(["nsenter", "-t", str(host_pid), "-p", "-m", "--", PY, os.path.join(HERE, "gpuview.py")],
                           capture_output=True, text=True, timeout=60, check=False)
    check(probe.returncode == 0, "probe in namespace failed: %s" % probe.stderr[-1500:])
    facts["nvml_pids_inside"] = [p for p, unused in json.loads(probe.stdout)["procs"]["0"]["ComputeRunningProcesses"]]
    res = s.release({"term_timeout": 2})
    check(res["_rc"] == 0, "gpu_release failed: %s" % res.get("msg"))
    got = killed_by_pid(res)
    check(host_pid in got and got[host_pid]["reason"] == "device", "namespace holder not swept: %s" % list(got))
    check(not gpuview.alive(host_pid), "namespace holder alive")
    check(all(g["free"] for g in res["gpus"]), "a GPU is not free")
    facts["signals"] = got[host_pid]["signals"]
    return facts


def case_namespace_init(s):
    """A CUDA holder that is PID 1 of its own PID namespace (no SIGTERM handler) gets SIGKILL at once.

    The kernel drops SIGTERM sent from outside to a namespace init without a handler: before,
    the release waited the whole term_timeout (5.1 s of a 5.5 s release).
    """
    def wrap(cmd):  # the holder itself is the namespace's PID 1
        # --mount-proc: CUDA reads /proc/self; without the namespace's own /proc it fails
        # (cudaGetDeviceCount error 304 on the H200).
        return ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"] + cmd
    inner = s.start("sglang::scheduler_TP0", gpu=0, gib=4, wrap=wrap)
    check(inner["pid"] == 1, "the holder is pid %s in its namespace, not 1" % inner["pid"])
    unshare = s.started[-1].pid
    hosts = gpuview.children(unshare)
    check(hosts, "no holder under unshare")
    host_pid = hosts[0]
    s.pids.add(host_pid)
    nspid = gpuview.nspid(host_pid)
    res = s.release({"patterns": [s.pat], "gpus": [0], "term_timeout": 5})
    check(res["_rc"] == 0, "gpu_release failed: %s" % res.get("msg"))
    entry = killed_by_pid(res).get(host_pid)
    check(entry is not None, "the namespace init was not signalled: %s" % short(res))
    check(entry["signals"] == ["SIGKILL"], "signals %s" % entry["signals"])
    check(entry.get("sigkill_at_once") == "PID 1 of its own PID namespace without a SIGTERM handler",
          "sigkill_at_once %s" % entry.get("sigkill_at_once"))
    check(res["elapsed"] < 3.0, "took %s s" % res["elapsed"])
    check(all(g["free"] for g in res["gpus"]), "GPU 0 not free")
    return {"nspid": nspid, "signals": entry["signals"], "gone_after_s": entry["gone_after"],
            "module_elapsed_s": res["elapsed"], "timings": res.get("timings")}


def case_daemon_title(s):
    """A job titled nvidia-persistenced that matches a pattern is released: a title never protects.

    A GPU daemon is protected by what it runs (its executable) and who runs it,
    not by a title anyone can set; a process whose command line matches a pattern is never
    protected by its comm or title alone.
    """
    impostor = s.start("nvidia-persistenced --user nvidia-persistenced", gpu=0, context=True)
    worker = s.start("sglang::scheduler_TP0", gpu=0, gib=4)
    res = s.release({"patterns": [s.pat], "timeout": 10})
    check(res["_rc"] == 0, "gpu_release failed: %s" % res.get("msg"))
    check(not gpuview.alive(impostor["pid"]), "the job titled like a daemon survived")
    check(not gpuview.alive(worker["pid"]), "the worker survived")
    prot = [h["pid"] for h in res["protected_holders"]]
    check(impostor["pid"] not in prot, "reported as protected: %s" % prot)
    check(all(g["free"] for g in res["gpus"]), "GPU 0 not free")
    killed = killed_by_pid(res)
    return {"impostor_reason": killed.get(impostor["pid"], {}).get("reason"),
            "worker_reason": killed.get(worker["pid"], {}).get("reason"), "module_elapsed_s": res["elapsed"]}


def case_nvml_monitor(s):
    """NVML users (an exporter-like poller, nvidia-smi) hold /dev/nvidiaN open but no memory: spared."""
    mon = s.start("gfnvml-monitor", extra=["--nvml-poll"])
    smi = None
    if shutil.which("nvidia-smi"):  # its command line has no token: the suite's protect covers it
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=memory.used", "--format=csv", "-lms", "200"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        s.started.append(smi)
    worker = s.start("sglang::scheduler_TP0", gpu=0, gib=2)
    time.sleep(0.5)
    facts = {"monitor_files": gpuview.device_files(mon["pid"], s.devices),
             "nvml_lists_monitor": mon["pid"] in [p for p, unused in s.nv.procs(0)["ComputeRunningProcesses"]]}
    if smi is not None:
        facts["nvidia_smi_files"] = gpuview.device_files(smi.pid, s.devices)
    res = s.release({"patterns": [s.pat]})
    got = {p: k["reason"] for p, k in killed_by_pid(res).items()}
    facts.update(rc=res["_rc"], killed=got, protected=[(h["pid"], h.get("protected"), h["cmdline"][:40])
                                                       for h in res.get("protected_holders", [])])
    check(res["_rc"] == 0, "gpu_release failed: %s" % res.get("msg"))
    check(not gpuview.alive(worker["pid"]), "the worker survived")
    check(gpuview.alive(mon["pid"]), "the NVML monitor (no CUDA context, no memory) was killed: reason %s"
          % got.get(mon["pid"]))
    if smi is not None:
        check(smi.poll() is None, "nvidia-smi was killed")
    return facts


def case_check_mode(s):
    """--check lists what would be killed and kills nothing."""
    w = s.start("sglang::scheduler_TP0", gpu=0, gib=4)
    stray = s.start("python3 stray.py", gpu=s.n - 1, gib=2)
    before = s.nv.used_all_mib()
    res = s.release({"patterns": [s.pat]}, check_mode=True)
    check(res["_rc"] == 0, "check mode failed: %s" % res.get("msg"))
    check(res["changed"] is True, "changed should be true")
    got = {p: k["reason"] for p, k in killed_by_pid(res).items()}
    check(got == {w["pid"]: "pattern", stray["pid"]: "device"}, "would kill %s" % got)
    check(gpuview.alive(w["pid"]) and gpuview.alive(stray["pid"]), "check mode killed something")
    check(s.nv.used_all_mib() == before, "memory changed in check mode")
    return {"would_kill": sorted(got.values())}


def case_clean_noop(s):
    """A clean GPU: changed false; the no-op cost (median of several runs)."""
    walls, elapsed, direct = [], [], []
    for unused in range(s.args.noop_runs):
        res = s.release({"patterns": [s.pat]})
        check(res["_rc"] == 0 and res["changed"] is False, "clean run: rc %s changed %s" % (res["_rc"], res.get("changed")))
        walls.append(res["_wall"])
        elapsed.append(res["elapsed"])
    for unused in range(s.args.noop_runs):
        res = s.direct({"patterns": [s.pat]})
        check(not res["failed"] and res["changed"] is False, "direct clean run changed")
        direct.append(res["_wall"])
    s.facts["noop_run"] = res
    return {"ansible_wall_median_s": statistics.median(walls), "module_elapsed_median_s": statistics.median(elapsed),
            "releaser_median_s": statistics.median(direct), "ansible_walls": walls, "module_elapsed": elapsed,
            "releaser": direct}


def case_health(s):
    """gpu_health on every GPU: no check fails on a healthy card, an unsupported call reads not_supported,
    the verdicts and raw values of each check, and the time of a full pass (median of three)."""
    runs = [s.module("gpu_health", {"expected_gpus": s.n}) for unused in range(3)]
    res = runs[-1]
    check(all(r["_rc"] == 0 for r in runs), "gpu_health failed: %s" % [r.get("msg") for r in runs])
    check(len(res["gpus"]) == s.n and res["gpu_count"] == s.n, "gpus %s of %d" % (len(res["gpus"]), s.n))
    failed = ["GPU %d %s: %s" % (g["index"], name, c["reason"]) for g in res["gpus"]
              for name, c in g["checks"].items() if c["verdict"] == "fail"]
    check(not failed, "a healthy card failed checks: %s" % failed)
    elapsed = sorted(r["elapsed_s"] for r in runs)
    check(elapsed[1] < 5.0, "a full pass took %s s" % elapsed)
    checks = {name: {"verdict": c["verdict"], "value": c.get("value"), "reason": c["reason"]}
              for name, c in res["gpus"][0]["checks"].items()}
    s.facts["health_run"] = res
    return {"verdict": res["verdict"], "reasons": res["reasons"], "elapsed_s": elapsed,
            "host_checks": {k: v["verdict"] for k, v in res["host_checks"].items()},
            "kernel_log": res["kernel_log"], "gpu0_checks": checks,
            "not_supported": sorted(k for k, v in checks.items() if v["verdict"] == "not_supported")}


def case_health_gate(s):
    """gpu_health's gate at fail_on=warn and fail: it refuses exactly when the verdict reaches it."""
    at_fail = s.module("gpu_health", {"fail_on": "fail", "fail_hint": "gfrun hint"})
    at_warn = s.module("gpu_health", {"fail_on": "warn", "fail_hint": "gfrun hint"})
    check((at_fail["_rc"] != 0) == (at_fail["verdict"] == "fail"),
          "fail_on=fail: rc %s for verdict %s" % (at_fail["_rc"], at_fail["verdict"]))
    refused = at_warn["_rc"] != 0
    check(refused == (at_warn["verdict"] in ("warn", "fail")), "fail_on=warn: rc %s for verdict %s"
          % (at_warn["_rc"], at_warn["verdict"]))
    check(not refused or "gfrun hint" in at_warn.get("msg", ""), "the refusal lacks the hint: %s" % at_warn.get("msg"))
    return {"verdict": at_warn["verdict"], "fail_on_warn_refused": refused, "msg": at_warn.get("msg")}


def _power_instant(pynvml, handle):
    """Instantaneous power (mW) through the field value, or None where the driver has none."""
    field = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", None)
    if field is None:
        return None
    try:
        value = pynvml.nvmlDeviceGetFieldValues(handle, [field])[0]
        return None if value.nvmlReturn != 0 else float(value.value.uiVal)
    except pynvml.NVMLError:
        return None


def _integral(points):
    """Trapezoid integral of [(t, watts)] in joules."""
    return sum((t1 - t0) * (w0 + w1) / 2.0 for (t0, w0), (t1, w1) in zip(points, points[1:]))


def _counter_period(pynvml, handle, seconds=2.0):
    """Seconds between changes of the energy counter, read as fast as NVML answers."""
    changes, last, reads = [], pynvml.nvmlDeviceGetTotalEnergyConsumption(handle), 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        value = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        reads += 1
        if value != last:
            changes.append(time.perf_counter())
            last = value
    gaps = [b - a for a, b in zip(changes, changes[1:])]
    return {"median_ms": round(statistics.median(gaps) * 1000, 1) if gaps else None,
            "min_ms": round(min(gaps) * 1000, 1) if gaps else None,
            "max_ms": round(max(gaps) * 1000, 1) if gaps else None, "changes": len(changes), "reads": reads}


def _now(pynvml, handle):
    """Power (W, average and instant), SM and memory clocks, reasons and utilisation now."""
    instant = _power_instant(pynvml, handle)
    return {"power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
            "power_instant_w": None if instant is None else instant / 1000.0,
            "sm_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "mem_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
            "reasons": hex(pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle)),
            "util": pynvml.nvmlDeviceGetUtilizationRates(handle).gpu,
            "temperature_c": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)}


SAMPLER_FIGURES = ("energy_j", "power_avg_w", "power_peak_w", "sm_clock_min_mhz", "sm_clock_median_mhz", "throttled",
                   "throttle_reasons")


def case_telemetry(s):
    """Energy on GPU 0: the counter's update period idle; a PyTorch load of known duration, the counter's
    delta against power sampled at 10 Hz and integrated (within 2 %), clocks and reasons idle and busy; the
    collection's sampler (_gpu/telemetry.py) over the same load: energy, clocks, throttled and its reasons."""
    import pynvml
    handle = s.nv.handles[0]
    period = _counter_period(pynvml, handle)
    idle = _now(pynvml, handle)
    window = subprocess.Popen([PY, os.path.join(HERE, "telemetry_window.py"), "0"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    s.started.append(window)
    hello = json.loads(window.stdout.readline() or "{}")
    check(hello.get("ready"), "the collection's sampler did not start: %s" % hello.get("error"))
    readings, proc, lines, t0 = [], None, [], time.perf_counter()  # readings: (perf_counter, _now())
    try:
        e0, t0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.perf_counter()
        proc = subprocess.Popen([PY, os.path.join(HERE, "burn.py"), "--title", s.title("burn"), "--seconds",
                                 str(s.args.burn_seconds)], stdout=subprocess.PIPE, text=True)
        s.started.append(proc)
        s.pids.add(proc.pid)
        quiet_until = None
        while quiet_until is None or time.perf_counter() < quiet_until:
            t = time.perf_counter()
            readings.append((t, _now(pynvml, handle)))
            if quiet_until is None and proc.poll() is not None:
                quiet_until = time.perf_counter() + 3.0  # the power reading settles back to idle
            time.sleep(max(0.0, 0.1 - (time.perf_counter() - t)))
        e1, t1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.perf_counter()
    finally:
        if proc is not None:
            lines = [json.loads(line) for line in proc.stdout.read().splitlines() if line.startswith("{")]
        began, ended = (lines[0]["start"], lines[1]["end"]) if len(lines) == 2 else (t0, t0)
        window.stdin.write("%r %r\n" % (began, ended))
        window.stdin.close()
        seen = json.loads(window.stdout.readline() or "{}")
    check(proc.returncode == 0 and len(lines) == 2, "burn.py ended %s: %s" % (proc.returncode, lines))
    counter_j = (e1 - e0) / 1000.0
    sampled_j = _integral([(t, r["power_w"]) for t, r in readings])
    instants = [(t, r["power_instant_w"]) for t, r in readings if r["power_instant_w"] is not None]
    instant_j = _integral(instants) if len(instants) == len(readings) else None
    busy = [r for t, r in readings if began + 1.0 <= t <= ended]
    figures = seen.get("figures") or {}
    agreement = abs(sampled_j - counter_j) / counter_j
    check(agreement <= 0.02, "power integrated %.1f J vs the counter's %.1f J: %.2f %% apart"
          % (sampled_j, counter_j, 100 * agreement))
    check(figures.get("energy_j"), "the sampler gave no energy: %s" % figures.get("telemetry"))
    return {"counter_period": period, "idle": idle, "window_s": round(t1 - t0, 2),
            "load_s": round(ended - began, 2), "counter_j": round(counter_j, 1), "power_10hz_j": round(sampled_j, 1),
            "power_instant_10hz_j": None if instant_j is None else round(instant_j, 1),
            "agreement_pct": round(100 * agreement, 2), "samples_10hz": len(readings),
            "busy": {"sm_mhz": sorted({r["sm_mhz"] for r in busy}), "reasons": sorted({r["reasons"] for r in busy}),
                     "util_min": min((r["util"] for r in busy), default=None),
                     "power_w_max": max((r["power_w"] for r in busy), default=None),
                     "temperature_c_max": max((r["temperature_c"] for r in busy), default=None)},
            "sampler": {k: figures.get(k) for k in SAMPLER_FIGURES},
            "sampler_default_sm_mhz": seen.get("default_sm_mhz"), "sampler_default_source": seen.get("default_sm_source"),
            "sampler_samples": seen.get("samples"), "sampler_error": seen.get("error"),
            "sampler_notes": (figures.get("telemetry") or {}).get("notes")}


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def case_role(s):
    """The sglang_server role launches the simulated server on real GPUs, benchmarks it, stops it.

    tests/gpu/role_case.yml through ansible-playbook on localhost: the simulator's TP
    schedulers hold mem_fraction_static x total of real CUDA memory (--sim-real-gpu; on the
    fake kit, fake GPU memory), server_wait (in the role), llm_benchmark at levels 1 and 4,
    then state=stopped, whose gpu_release (sweep only, selected GPUs) verifies them free.
    """
    fake = os.environ.get("GF_BACKEND") == "fake"
    work = tempfile.mkdtemp(prefix="gf-role-")
    try:
        model = os.path.join(work, "model")
        os.makedirs(model)
        with open(os.path.join(REPO, "sim/models/kimi-k2.5-int4/config.json")) as handle:
            config = json.load(handle)
        with open(os.path.join(model, "config.json"), "w") as handle:
            json.dump(config, handle)
        with open(os.path.join(model, "model.safetensors.index.json"), "w") as handle:
            json.dump({"metadata": {"total_size": 2 << 30}, "weight_map": {}}, handle)  # 2 GiB stand-in
        python = os.path.join(work, "sglang-python")
        with open(python, "w") as handle:  # the suite's python with the stand-in sglang package
            handle.write('#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}"\nexport PYTHONPATH\nexec "%s" "$@"\n'
                         % (os.path.join(REPO, "sim/pypath"), PY))
        os.chmod(python, 0o755)
        # The role runs `sglang serve` from beside sglang_server_python: the simulator's console script.
        entry = os.path.join(work, "sglang")
        with open(entry, "w") as handle:
            handle.write('#!/bin/sh\nexec "%s" "%s" "$@"\n' % (python, os.path.join(REPO, "sim/console/sglang")))
        os.chmod(entry, 0o755)
        result = os.path.join(work, "result.json")
        gpus = list(range(s.n))
        extra = {"gf_token": s.token, "gf_protect": [r"^(?!\s*sglang::(scheduler_TP\d+|detokenizer)\b)(?!.*%s)" % s.token],
                 "gf_python": python, "gf_model": model, "gf_tp": s.n, "gf_gpus": gpus, "gf_port": free_port(),
                 "gf_dir": work, "gf_fraction": s.args.role_fraction,
                 "gf_extra_args": ["--sim-profile", "fast"] + ([] if fake else ["--sim-real-gpu"]),
                 "gf_idle_max_mib": max(s.idle) + 1, "gf_result": result}
        with open(os.path.join(work, "vars.json"), "w") as handle:
            json.dump(extra, handle)
        with open(os.path.join(work, "hosts"), "w") as handle:
            handle.write("localhost ansible_connection=local ansible_python_interpreter=%s\n" % PY)
        playbook = os.path.join(os.path.dirname(s.ansible), "ansible-playbook")
        cmd = [playbook, "-i", os.path.join(work, "hosts"), "-e", "@" + os.path.join(work, "vars.json"),
               os.path.join(HERE, "role_case.yml")]
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_LOCALHOST_WARNING="False")
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            out, unused = proc.communicate(timeout=480)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, unused = proc.communicate()
            out += "\n(ansible-playbook killed after 480 s)"
        wall = time.monotonic() - t0
        s.facts["role_run"] = {"_stdout": out}
        for pid in _token_pids(s.token):  # the server's main process, should the play have left it
            s.pids.add(pid)
        try:
            with open(result) as handle:
                seen = json.load(handle)
        except (OSError, ValueError):
            raise CaseFailed("no result from the role play (rc %d):\n%s" % (proc.returncode, out[-4000:]))
        s.facts["role_run"].update(seen)
        recap = [line for line in out.splitlines() if line.startswith("localhost ") and "ok=" in line]
        facts = {"playbook_wall_s": round(wall, 2), "rc": proc.returncode, "recap": recap[-1:] and recap[-1].split(":", 1)[1].strip(),
                 "ready_seconds": _num(seen.get("ready_seconds")), "launch_to_ready_s": _num(seen.get("launch_to_ready_s")),
                 "phases": [(ph.get("name"), ph.get("at")) for ph in seen.get("phases") or []],
                 "running_used_mib": seen.get("running_used_mib"), "total_mib": seen.get("running_total_mib"),
                 "fraction": s.args.role_fraction, "holders_running": seen.get("running_holders"),
                 "health": seen.get("health_status"), "gpu_health_before_start": seen.get("gpu_health_verdict"),
                 "bench": [{k: lv.get(k) for k in ("concurrency", "completed", "failed", "output_tok_s", "duration_s")}
                           for lv in seen.get("bench_levels") or []],
                 "stop_wall_s": _num(seen.get("stop_wall_s")), "supervisor_stop": seen.get("supervisor_stop"),
                 "release": seen.get("release"), "after_used_mib": seen.get("after_used_mib"),
                 "after_holders": seen.get("after_holders"), "after_nvml_processes": seen.get("after_nvml_processes")}
        check(proc.returncode == 0, "the role play failed (rc %d): %s\n%s" % (proc.returncode, seen.get("failure"),
                                                                              "\n".join(out.splitlines()[-25:])))
        check(seen.get("health_status") == 200, "health %s" % seen.get("health_status"))
        check(seen.get("gpu_health_verdict") in ("pass", "warn"), "the launch's health gate judged %s"
              % seen.get("gpu_health_verdict"))
        check(all(u >= 0.95 * s.args.role_fraction * t for u, t in zip(seen["running_used_mib"], seen["running_total_mib"])),
              "GPU memory while running %s MiB, expected >= %.2f x total" % (seen["running_used_mib"], s.args.role_fraction))
        check(all(lv["completed"] > 0 and lv["failed"] == 0 and lv["output_tok_s"] > 0 for lv in seen["bench_levels"]),
              "benchmark levels %s" % facts["bench"])
        check(all(seen["release"]["free"]) and max(seen["after_used_mib"]) == 0, "GPUs not free after the stop")
        check(not seen["after_holders"] and not seen["after_nvml_processes"], "holders left: %s %s"
              % (seen["after_holders"], seen["after_nvml_processes"]))
        return facts
    finally:
        for pid in _token_pids(s.token):
            s.pids.add(pid)
        shutil.rmtree(work, ignore_errors=True)


def case_paused_tree(s):
    """A server tree stopped by job control (kill -STOP, as Ctrl-Z does): SIGCONT follows SIGTERM,
    so it is gone about as fast as a running one, not after term_timeout (10 s)."""
    kids = [(r % s.n, 2.0, "sglang::scheduler_TP%d" % r) for r in range(4)]
    tree = s.start(SERVER % len(kids), kids=kids, gib=1)
    pids = [tree["pid"]] + list(tree["children"].values())
    held = s.used_gib()
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while not all(procfs.state(p) == "T" for p in pids):
        check(time.monotonic() < deadline, "the tree did not stop: %s" % [procfs.state(p) for p in pids])
        time.sleep(0.01)
    res = s.release({"patterns": [s.pat], "term_timeout": 10})
    check(res["_rc"] == 0, "gpu_release failed: %s" % res.get("msg"))
    killed = killed_by_pid(res)
    check(set(killed) == set(pids), "killed %s, tree %s" % (sorted(killed), sorted(pids)))
    check(all(k["signals"] == ["SIGTERM", "SIGCONT"] for k in killed.values()),
          "signals %s" % [k["signals"] for k in killed.values()])
    check(res["elapsed"] < 3, "module elapsed %s s (term_timeout 10)" % res["elapsed"])
    check(all(g["free"] for g in res["gpus"]), "a GPU is not free")
    return {"held_gib": held, "module_elapsed_s": res["elapsed"], "timings": res["timings"],
            "gone_after_max_s": max(k["gone_after"] for k in res["killed"])}


def _detached(cmd):
    """Start the tree as a server started in the background is: its parent gone, under init."""
    return ["setsid", "-f"] + list(cmd)


def case_respawn_toll(s):
    """8 workers of --toll-gib together on GPU 0: the driver's own time after SIGKILL, then gpu_release
    on a detached tree (its ancestors up to init released: no watch) and on one under this suite
    (watched from each exit, beside the drain)."""
    gib = round(s.args.toll_gib / 8, 2)
    kids = [(0, gib, "sglang::scheduler_TP%d" % r) for r in range(8)]
    facts = {"workers": 8, "gib_each": gib}
    tree = s.start(SERVER % 8, kids=kids)
    facts["held_gib"] = s.used_gib()
    t0 = time.monotonic()
    for pid in [tree["pid"]] + list(tree["children"].values()):
        os.kill(pid, signal.SIGKILL)
    freed = s.nv.wait_idle(s.idle, timeout=60)
    check(freed is not None, "memory never came back after SIGKILL")
    facts["driver_sigkill_to_idle_s"] = driver = round(time.monotonic() - t0, 4)
    s.stop_case()
    for label, wrap in (("detached", _detached), ("under_suite", None)):
        tree = s.start(SERVER % 8, kids=kids, wrap=wrap)
        s.pids.add(tree["pid"])
        res = s.release({"patterns": [s.pat], "term_timeout": 5})
        check(res["_rc"] == 0, "gpu_release (%s) failed: %s" % (label, res.get("msg")))
        check(all(g["free"] for g in res["gpus"]), "a GPU is not free (%s)" % label)
        watch = res.get("respawn_watch") or {}
        facts[label] = {"module_elapsed_s": res["elapsed"], "timings": res["timings"],
                        "watched": len(watch.get("watched", [])), "skipped": len(watch.get("skipped", [])),
                        "rescans": watch.get("rescans"),
                        "watched_s_max": max([w["watched_s"] for w in watch.get("watched", [])] or [0])}
        s.stop_case()
    facts["detached_minus_driver_s"] = round(facts["detached"]["module_elapsed_s"] - driver, 3)
    check(facts["detached"]["skipped"] == 9, "detached tree: %s" % facts["detached"])
    check(facts["under_suite"]["watched"] >= 1, "tree under the suite not watched: %s" % facts["under_suite"])
    return facts


MPS_CONTROL = "nvidia-cuda-mps-control"


def case_mps(s):
    """An MPS daemon and a CUDA client through it: by default the release kills the client, spares the
    daemons and counts the server's own context as daemon overhead; with mps: quit it stops MPS through
    its pipe directory and verifies zero."""
    control = shutil.which(MPS_CONTROL)
    check(control, "%s not on PATH" % MPS_CONTROL)
    work = tempfile.mkdtemp(prefix="gf-mps-")
    env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=os.path.join(work, "pipe"),
               CUDA_MPS_LOG_DIRECTORY=os.path.join(work, "log"))
    os.makedirs(env["CUDA_MPS_PIPE_DIRECTORY"])
    os.makedirs(env["CUDA_MPS_LOG_DIRECTORY"])
    facts = s.facts["mps_case"] = {}  # kept in the JSON even when the case fails
    try:
        subprocess.run([control, "-d"], env=env, check=True, timeout=30)
        client = s.start("sglang::scheduler_TP0", gpu=0, gib=4, env=env)
        facts["nvml_procs_with_client"] = s.nv.procs(0)
        res = s.release({"patterns": [s.pat]})
        facts["overhead_run"] = {k: res.get(k) for k in ("_rc", "elapsed", "timings", "msg")}
        facts["nvml_procs_after"] = s.nv.procs(0)
        facts["v2_used_mib_after"] = round(s.nv.used_mib(0), 1)
        check(res["_rc"] == 0, "gpu_release on an MPS host failed: %s" % res.get("msg"))
        check(list(killed_by_pid(res)) == [client["pid"]], "killed %s" % list(killed_by_pid(res)))
        gpu0 = res["gpus"][0]
        facts["mps_server_context"] = gpu0.get("mps")
        facts["after_used_mib_with_daemon"] = gpu0["after"]["used_mib"]
        check(gpu0.get("mps") and gpu0["mps"]["counted"] == "as daemon overhead", "gpus[0].mps %s" % gpu0.get("mps"))
        s.start("sglang::scheduler_TP0", gpu=0, gib=4, env=env)
        res = s.release({"patterns": [s.pat], "mps": "quit"})
        facts["quit_run"] = {k: res.get(k) for k in ("_rc", "elapsed", "timings", "msg", "mps")}
        check(res["_rc"] == 0, "gpu_release mps=quit failed: %s" % res.get("msg"))
        check(res["gpus"][0]["after"]["used_mib"] <= 0, "GPU 0 after quit: %s" % res["gpus"][0]["after"])
        return facts
    finally:
        if os.path.exists(os.path.join(env["CUDA_MPS_PIPE_DIRECTORY"], "control")):
            subprocess.run([control], input="quit\n", env=env, text=True, timeout=30, check=False)
        shutil.rmtree(work, ignore_errors=True)


def _num(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def _token_pids(token):
    """PIDs whose command line carries the token (the role's server main process)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid() and token in gpuview.cmdline(int(name)):
            out.append(int(name))
    return out


TOPOLOGY = """
import json, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import reset
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.nvml import NvmlSession
n = int(sys.argv[2])
session = NvmlSession(20)
try:
    got = session.nvlink(list(range(n)))
finally:
    session.close()
links = {g["index"]: g for g in got.get("gpus", [])}
rules = {i: reset.peer_set(links, i) for i in links}
print(json.dumps({"gpus": got.get("gpus"), "errors": got.get("errors"),
                  "rules": {i: {"set": sorted(r[0]) if r[0] is not None else None, "rule": r[1]} for i, r in rules.items()}}))
"""


def case_nvlink_reset(s):
    """reset_stuck on a clean card: NVML's architecture and NVLink links read (nvlink_probe), the peer rule of
    each GPU computed (never run), and gpu_release with reset_stuck=true resets nothing. A guard nvidia-smi
    first on PATH refuses -r and logs every call, so not even a bug could reset a real GPU here."""
    guard = tempfile.mkdtemp(prefix="gf-guard-")
    calls = os.path.join(guard, "calls")
    real = shutil.which("nvidia-smi") or "false"
    with open(os.path.join(guard, "nvidia-smi"), "w") as handle:
        handle.write('#!/bin/sh\necho "$*" >> %s\nfor a in "$@"; do case "$a" in -r|--gpu-reset) '
                     'echo "suite guard: no GPU reset here" >&2; exit 1;; esac; done\nexec %s "$@"\n' % (calls, real))
    os.chmod(os.path.join(guard, "nvidia-smi"), 0o755)
    old_path = os.environ["PATH"]
    os.environ["PATH"] = guard + os.pathsep + old_path
    try:
        out = subprocess.run([PY, "-c", TOPOLOGY, os.path.join(REPO, "build", "collections"), str(s.n)],
                             capture_output=True, text=True, timeout=120, check=False)
        check(out.returncode == 0, "topology read failed: %s" % out.stderr[-2000:])
        topo = json.loads(out.stdout.splitlines()[-1])
        check(not topo["errors"], "NVML errors: %s" % topo["errors"])
        check(len(topo["gpus"]) == s.n, "read %d of %d GPUs" % (len(topo["gpus"]), s.n))
        for gpu in topo["gpus"]:
            check(gpu["arch"] is not None, "GPU %d: no architecture" % gpu["index"])
            check(gpu["links"] is None or all(link["remote"] in ("gpu", "switch", "npu", "unknown")
                                              for link in gpu["links"]), "GPU %d links %s" % (gpu["index"], gpu["links"]))
        runs = [s.release({"patterns": [s.pat], "reset_stuck": True}),
                s.release({"patterns": [s.pat], "reset_stuck": True}, check_mode=True)]
        for res in runs:
            check(res["_rc"] == 0 and res["changed"] is False, "clean card with reset_stuck: rc %s changed %s msg %s"
                  % (res["_rc"], res.get("changed"), res.get("msg")))
            check(not (res.get("reset") or {}).get("groups"), "a reset was planned on a clean card: %s" % res.get("reset"))
        resets = []
        if os.path.exists(calls):
            with open(calls) as handle:
                resets = [line for line in handle if "-r" in line.split()]
        check(not resets, "nvidia-smi -r was called: %s" % resets)
        return {"gpus": topo["gpus"], "rules": topo["rules"], "reset": [r.get("reset") for r in runs]}
    finally:
        os.environ["PATH"] = old_path
        shutil.rmtree(guard, ignore_errors=True)


def _group_watch():
    """_server/group_watch.py loaded by path: it is standard library only (and pynvml), as the detached
    watcher runs it, so no collection import path is needed."""
    import importlib.util
    path = os.path.join(REPO, "plugins", "module_utils", "_server", "group_watch.py")
    spec = importlib.util.spec_from_file_location("gf_group_watch", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def case_group_watch_verify(s):
    """The group watcher's GPU check (verify_gpus, its own pynvml read): a live holder on GPU 0 is not free
    (its PID listed, memory used); after SIGKILL the check turns free, and how long that took."""
    watch = _group_watch()
    one = s.start("gfwatch", gpu=0, gib=4)
    held = watch.verify_gpus([0], timeout=0.5)
    check(held["checked"] is True and held["free"] is False, "held GPU read as free: %s" % held)
    gpu = held["gpus"][0]
    check(gpu["index"] == 0 and gpu["used_mib"] >= 3 * 1024, "used MiB %s with 4 GiB held" % gpu["used_mib"])
    # NVML's PIDs are the host's: under a container runtime they may differ from ours, so a listed process is
    # required and whether it is the holder's PID is reported.
    check(gpu["processes"], "no process listed on GPU 0 while the holder %s held it" % one["pid"])
    by_uuid = watch.verify_gpus([gpu["uuid"]], timeout=0.2)
    check([g["index"] for g in by_uuid["gpus"]] == [0], "selection by UUID read %s" % by_uuid["gpus"])
    os.kill(one["pid"], signal.SIGKILL)
    s.started[-1].wait()
    freed = watch.verify_gpus([0], timeout=30)
    check(freed["free"] is True, "GPU 0 not free 30 s after SIGKILL: %s" % freed)
    every = watch.verify_gpus(None, timeout=5)
    check(len(every["gpus"]) == s.n, "every GPU: read %d of %d" % (len(every["gpus"]), s.n))
    return {"held": gpu, "held_pids_listed": one["pid"] in gpu["processes"], "free_after_kill_s": freed["seconds"],
            "every_gpu_free": every["free"]}


CASES = [("device_files", case_device_files), ("server_tree", case_server_tree),
         ("tree_direct", case_tree_direct), ("driver_release", case_driver_release),
         ("orphans", case_orphans), ("sigterm_ignored", case_sigterm_ignored),
         ("sigterm_caught", case_sigterm_caught), ("leader_exit", case_leader_exit), ("zombie", case_zombie),
         ("pid_namespace", case_pid_namespace), ("namespace_init", case_namespace_init),
         ("daemon_title", case_daemon_title),
         ("nvml_monitor", case_nvml_monitor),
         ("check_mode", case_check_mode), ("clean_noop", case_clean_noop), ("role", case_role),
         ("paused_tree", case_paused_tree), ("respawn_toll", case_respawn_toll), ("mps", case_mps),
         ("health", case_health), ("health_gate", case_health_gate), ("telemetry", case_telemetry),
         ("nvlink_reset", case_nvlink_reset), ("group_watch_verify", case_group_watch_verify)]


def versions():
    from importlib import metadata
    out = {}
    for dist in ("nvidia-ml-py", "torch", "psutil", "ansible-core", "setproctitle"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    out["python"] = sys.version.split()[0]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--json", help="write every case's result and facts here")
    ap.add_argument("--only", help="comma-separated case names")
    ap.add_argument("--tree-gib", type=float, default=24.0, help="GiB the timing tree holds in all")
    ap.add_argument("--noop-runs", type=int, default=5)
    ap.add_argument("--toll-gib", type=float, default=120.0, help="GiB the 8 workers of respawn_toll hold on GPU 0")
    ap.add_argument("--ansible", help="path of the ansible command")
    ap.add_argument("--burn-seconds", type=float, default=8.0, help="seconds of the telemetry case's PyTorch load")
    ap.add_argument("--role-fraction", type=float, default=0.2,
                    help="the role case's --mem-fraction-static (of each GPU's total)")
    args = ap.parse_args()
    s = Suite(args)
    print("gpus %d (%s), driver %s, idle v2 used MiB %s, token %s, %s, kernel %s" % (
        s.n, s.nv.name, s.nv.driver, s.idle, s.token, versions(), os.uname().release), flush=True)
    wanted = set(args.only.split(",")) if args.only else None
    for name, fn in CASES:
        if wanted is None or name in wanted:
            s.run_case(name, lambda fn=fn: fn(s))
    for key in ("server_tree_run", "noop_run", "role_run"):
        if key in s.facts:
            if key == "role_run":
                print("---- role_run: what the play saw ----")
                print(json.dumps({k: v for k, v in s.facts[key].items() if k != "_stdout"}, indent=1))
            else:
                print("---- %s: gpu_release result ----" % key)
                print(json.dumps(short(s.facts[key]), indent=1))
            if "_stdout" in s.facts[key]:
                print("---- %s: ansible output ----\n%s" % (key, s.facts[key]["_stdout"]))
    failed = [r["case"] for r in s.results if r["status"] != "PASS"]
    print("SUMMARY: %d passed, %d failed%s" % (len(s.results) - len(failed), len(failed),
                                               (": " + ", ".join(failed)) if failed else ""), flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"gpus": s.n, "name": s.nv.name, "driver": s.nv.driver, "versions": versions(),
                       "token": s.token,
                       "idle_v2_used_mib": s.idle, "results": s.results,
                       "raw": {k: {kk: vv for kk, vv in v.items() if kk != "_stdout"} for k, v in s.facts.items()}},
                      handle, indent=1, default=str)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
