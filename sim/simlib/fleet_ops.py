"""Bring a simulated fleet up, report on it, take it down.

DIR/fleet.json is written before anything starts, so `down` can always find
what a crashed or partial `up` left behind.
"""
import concurrent.futures
import glob
import json
import os
import shutil
import socket
import subprocess
import time

from simlib import fleet_inventory, fleet_proc, layout
from simlib.fleet_host import Host, write_json

INIT_TIMEOUT = 10.0     # unshare forks its child within milliseconds
SSHD_TIMEOUT = 30.0     # sshd answers within a second; this is a 2-core worst case
DOWN_TIMEOUT = 30.0     # a SIGKILLed namespace empties in well under a second; 2-core CI under load


class FleetError(Exception):
    pass


class Fleet:
    def __init__(self, fleet_dir):
        self.dir = os.path.realpath(fleet_dir)
        self.meta_file = os.path.join(self.dir, "fleet.json")
        self.ssh_dir = os.path.join(self.dir, "ssh")
        self.private_key = os.path.join(self.ssh_dir, "id_ed25519")
        self.authorized_keys = os.path.join(self.ssh_dir, "authorized_keys")
        self.inventory = os.path.join(self.dir, "inventory.yml")

    def meta(self):
        try:
            with open(self.meta_file) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def hosts(self):
        """Hosts from fleet.json, or from whatever hN dirs exist."""
        meta = self.meta() or {}
        port = meta.get("port", 22)
        indexes = set(range(1, meta.get("hosts", 0) + 1))
        for path in glob.glob(os.path.join(self.dir, "hosts", "h*")):
            suffix = os.path.basename(path)[1:]
            if suffix.isdigit():
                indexes.add(int(suffix))
        return [Host(self.dir, i, port) for i in sorted(indexes)]


# ---- up ---------------------------------------------------------------------

def up(fleet_dir, count, gpus, port, extra_env, say=print, gpu_model=None, faults=()):
    """GPU_MODEL: {"name", "memory_mib"} of every fake GPU; FAULTS: fault dicts (check_faults)."""
    fleet = Fleet(fleet_dir)
    faults = check_faults(faults, count, gpus)
    if os.path.exists(fleet.meta_file) or os.path.exists(os.path.join(fleet.dir, "hosts")):
        raise FleetError("a fleet is already set up in %s: run `simctl fleet down %s` first"
                         % (fleet.dir, fleet_dir))
    hosts = [Host(fleet.dir, i, port) for i in range(1, count + 1)]
    for host in hosts:
        if host.sshd_answers(timeout=0.2) or _port_taken(host):
            raise FleetError("%s:%d is already in use (another fleet up? pick --port)"
                             % (host.address, port))
    created = not os.path.isdir(fleet.dir)
    os.makedirs(fleet.dir, exist_ok=True)
    write_json(fleet.meta_file, dict(settings(count, gpus, port, extra_env, gpu_model, faults),
                                     created_dir=created))
    started = time.monotonic()
    try:
        _start(fleet, hosts, gpus, extra_env, gpu_model, faults)
        for fault in faults:
            if fault["kind"] == "gpu_held":
                _hold_as_stranger(hosts[int(fault["host"][len("sim-h"):]) - 1], fault)
    except BaseException:
        down(fleet_dir, say=lambda *_: None)  # leave nothing half-up behind
        raise
    fleet_inventory.write(fleet.inventory, hosts, fleet.private_key)
    for host in hosts:
        state = host.load_state()
        say("%s  %s:%d  init pid %d  gpus %s" % (host.name, host.address, port,
                                                 state["init_pid"], host.gpu_root))
    say("fleet up: %d hosts in %.1fs; inventory %s" % (count, time.monotonic() - started,
                                                       fleet.inventory))


def settings(count, gpus, port, extra_env, gpu_model=None, faults=()):
    """What makes two fleets the same (fleet.json holds it, with created_dir)."""
    return {"hosts": count, "gpus": gpus, "port": port, "env": dict(extra_env),
            "gpu_model": dict(gpu_model or {}), "faults": list(faults), "kit": layout.SIM_DIR}


def ensure(fleet_dir, count, gpus, port, extra_env, gpu_model=None, faults=(), check=False,
           say=print):
    """Make the fleet in FLEET_DIR this one: keep it when it is up with the same settings
    (and every host alive), else take down what is there and bring it up.

    Returns (changed, action): "kept", "started", "replaced" (or "would start",
    "would replace" with CHECK, which starts and stops nothing)."""
    faults = check_faults(faults, count, gpus)
    wanted = settings(count, gpus, port, extra_env, gpu_model, faults)
    fleet = Fleet(fleet_dir)
    meta = fleet.meta()
    present = meta is not None or bool(fleet.hosts())
    if present:
        same = meta is not None and {k: meta.get(k) for k in wanted} == wanted
        if same and all(r["alive"] and r["sshd"] for r in status(fleet_dir)) \
                and os.path.exists(fleet.inventory):
            return False, "kept"
        if check:
            return True, "would replace"
        down(fleet_dir, say=say)
        up(fleet_dir, count, gpus, port, extra_env, say=say, gpu_model=gpu_model, faults=faults)
        return True, "replaced"
    if check:
        return True, "would start"
    up(fleet_dir, count, gpus, port, extra_env, say=say, gpu_model=gpu_model, faults=faults)
    return True, "started"


def present(fleet_dir):
    """Whether anything of a fleet is in FLEET_DIR (what `down` would act on)."""
    fleet = Fleet(fleet_dir)
    return fleet.meta() is not None or bool(fleet.hosts()) or os.path.exists(fleet.ssh_dir)


def _port_taken(host):
    """Bind test: catches a listener that would not answer like sshd."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as sshd does
        try:
            s.bind((host.address, host.port))
        except OSError:
            return True
    return False


FAULT_KINDS = ("warmup_crash", "gpu_held")
STRANGER_TITLE = "stranger-gpu-job --gpu %d"  # what gpu_info shows for a gpu_held fault


def check_faults(faults, count, gpus):
    """The faults as dicts, or ValueError naming what is wrong with one.

    {"kind": "warmup_crash", "host": "sim-hN"}: servers on that host fail their warm-up and
    exit: SGLang's warm-up request ("Initialization failed. warmup error";
    SGLANG_SIM_FAIL_WARMUP=1 in its sessions), vLLM's sampler warm-up ("CUDA out of memory
    occurred when warming up sampler"; VLLM_SIM_FAIL_WARMUP=1). {"kind": "gpu_held", "host": "sim-hN", "gpu": G, "mib": M}: a process
    that is no server of ours holds M MiB on GPU G of that host from the start."""
    out = []
    hosts = {"sim-h%d" % i for i in range(1, count + 1)}
    for fault in faults:
        if not isinstance(fault, dict) or fault.get("kind") not in FAULT_KINDS:
            raise ValueError("fault %r: kind must be one of %s" % (fault, ", ".join(FAULT_KINDS)))
        if fault.get("host") not in hosts:
            raise ValueError("fault %r: host must be one of sim-h1..sim-h%d" % (fault, count))
        keys = {"kind", "host"} | ({"gpu", "mib"} if fault["kind"] == "gpu_held" else set())
        if set(fault) != keys:
            raise ValueError("fault %r: a %s fault has exactly the keys %s"
                             % (fault, fault["kind"], ", ".join(sorted(keys))))
        if fault["kind"] == "gpu_held":
            if not isinstance(fault["gpu"], int) or not 0 <= fault["gpu"] < gpus:
                raise ValueError("fault %r: gpu must be 0..%d" % (fault, gpus - 1))
            if not isinstance(fault["mib"], int) or fault["mib"] < 1:
                raise ValueError("fault %r: mib must be a positive integer" % (fault,))
        out.append(dict(fault))
    return out


def _host_env(host, extra_env, faults):
    env = dict(extra_env)
    if any(f["kind"] == "warmup_crash" and f["host"] == host.name for f in faults):
        env["SGLANG_SIM_FAIL_WARMUP"] = "1"
        env["VLLM_SIM_FAIL_WARMUP"] = "1"
    return env


def _hold_as_stranger(host, fault):
    """`simctl gpu hold --detach` inside the host's namespaces: a process of that host."""
    state = host.load_state()
    cmd = ["nsenter", "--target", str(state["init_pid"]), "--pid", "--mount", "--",
           layout.python(), layout.SIMCTL, "gpu", "hold", host.gpu_root,
           "--gpu", str(fault["gpu"]), "--mib", str(fault["mib"]), "--detach",
           "--title", STRANGER_TITLE % fault["gpu"]]
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          cwd="/", check=False)
    if proc.returncode != 0:
        raise FleetError("%s: the gpu_held fault could not hold %d MiB on GPU %d: %s"
                         % (host.name, fault["mib"], fault["gpu"], proc.stderr.strip()))


def _start(fleet, hosts, gpus, extra_env, gpu_model=None, faults=()):
    os.makedirs(fleet.ssh_dir, mode=0o700)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "simctl-fleet",
                    "-f", fleet.private_key], check=True, stdin=subprocess.DEVNULL)
    shutil.copyfile(fleet.private_key + ".pub", fleet.authorized_keys)
    os.makedirs(os.path.join(fleet.dir, "hosts"), exist_ok=True)
    # Key generation and fake-GPU set-up are subprocesses: run hosts side by side.
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, len(hosts))) as pool:
        jobs = [pool.submit(h.prepare, gpus, _host_env(h, extra_env, faults),
                            fleet.authorized_keys, gpu_model) for h in hosts]
        for job in jobs:
            job.result()
    procs = {}
    for host in hosts:
        proc = host.launch()
        procs[host.name] = proc
        # Written at once so `down` can end this unshare even if we fail below.
        write_json(host.state_file, {"unshare_pid": proc.pid,
                                     "unshare_start": fleet_proc.start_time(proc.pid)})
    for host in hosts:
        proc = procs[host.name]
        child = fleet_proc.wait_until(lambda: fleet_proc.children_of(proc.pid), INIT_TIMEOUT)  # noqa: B023
        if not child:
            raise FleetError("%s: unshare made no namespace (exit %s)\n%s"
                             % (host.name, proc.poll(), host.console_tail()))
        host.record(proc.pid, child[0])
    pending = list(hosts)

    def all_answer():
        for host in list(pending):
            if procs[host.name].poll() is not None:
                raise FleetError("%s exited (status %s) before sshd answered:\n%s"
                                 % (host.name, procs[host.name].returncode,
                                    host.console_tail()))
            if host.sshd_answers():
                pending.remove(host)
        return not pending

    if not fleet_proc.wait_until(all_answer, SSHD_TIMEOUT, interval=0.05):
        raise FleetError("sshd did not answer within %ds on: %s" % (
            SSHD_TIMEOUT, ", ".join("%s (%s)" % (h.name, h.console_tail(3).strip())
                                    for h in pending)))


# ---- status -----------------------------------------------------------------

def status(fleet_dir):
    fleet = Fleet(fleet_dir)
    if fleet.meta() is None and not fleet.hosts():
        raise FleetError("no fleet in %s" % fleet.dir)
    rows = []
    for host in fleet.hosts():
        state = host.load_state() or {}
        pid, start = state.get("init_pid"), state.get("init_start")
        alive = bool(pid) and fleet_proc.is_alive(pid, start)
        # Count before probing sshd: the probe's connection adds an sshd child.
        count = len(fleet_proc.pids_in_ns(state["pid_ns"])) if alive else 0
        rows.append({
            "name": host.name, "address": host.address, "port": host.port,
            "init_pid": pid, "alive": alive,
            "sshd": alive and host.sshd_answers(),
            "processes": count,
            "gpu_root": host.gpu_root,
        })
    return rows


# ---- down -------------------------------------------------------------------

def _leftovers(waits):
    """What still runs, for the error: host, PID, state and command line of each."""
    out = []
    for host, state, ns in waits:
        pids = list(fleet_proc.pids_in_ns(ns)) if ns else []
        pids += [state[k + "_pid"] for k in ("init", "unshare")
                 if state.get(k + "_pid") and fleet_proc.is_alive(state[k + "_pid"], state.get(k + "_start"))]
        for pid in pids[:10]:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
                st = fleet_proc._stat_fields(pid)[0].decode()  # pylint: disable=protected-access
            except (OSError, ValueError):
                continue
            out.append("%s pid %d (%s) %s" % (host.name, pid, st, cmd[:120]))
    return "; ".join(out) or "none found on a second look"


def down(fleet_dir, say=print):
    fleet = Fleet(fleet_dir)
    hosts = fleet.hosts()
    meta = fleet.meta()
    if meta is None and not hosts and not os.path.exists(fleet.ssh_dir):
        say("fleet down: nothing in %s" % fleet.dir)
        return
    waits, pins = [], []
    try:
        for host in hosts:
            state = host.load_state() or {}
            pin = _pin_namespace(state)
            if pin is not None:
                pins.append(pin)
            ns = os.readlink("/proc/self/fd/%d" % pin) if pin is not None else None
            # SIGKILL of the namespace's init makes the kernel kill all of the namespace;
            # unshare then reaps init and exits. Only a host whose init was never recorded
            # needs unshare killed (--kill-child takes its child with it).
            if not fleet_proc.kill_if_same(state.get("init_pid"), state.get("init_start")):
                fleet_proc.kill_if_same(state.get("unshare_pid"), state.get("unshare_start"))
            waits.append((host, state, ns))

        def all_gone():
            for _host, state, ns in waits:
                if ns and fleet_proc.pids_in_ns(ns):
                    return False
                for key in ("init", "unshare"):
                    pid = state.get(key + "_pid")
                    if pid and fleet_proc.is_alive(pid, state.get(key + "_start")):
                        return False
            return True

        if not fleet_proc.wait_until(all_gone, DOWN_TIMEOUT):
            raise FleetError("processes of the fleet in %s still run after %ds; files kept: %s"
                             % (fleet.dir, DOWN_TIMEOUT, _leftovers(waits)))
    finally:
        for pin in pins:
            os.close(pin)
    _refuse_if_mounted(fleet.dir)
    if os.path.isdir(os.path.join(fleet.dir, "hosts")):
        shutil.rmtree(os.path.join(fleet.dir, "hosts"))
    shutil.rmtree(fleet.ssh_dir, ignore_errors=True)
    for path in (fleet.inventory, fleet.meta_file):
        if os.path.exists(path):
            os.remove(path)
    if meta and meta.get("created_dir"):
        try:
            os.rmdir(fleet.dir)
        except OSError:
            pass  # someone put their own files there: keep them
    say("fleet down: %d hosts stopped, %s cleaned" % (len(hosts), fleet.dir))


def _pin_namespace(state):
    """An open descriptor on a host's PID namespace while its init is the recorded process.

    A dead namespace's inode number is reused by the next one created, often another
    fleet's host or a test's namespace: matching on the number recorded at `up` would
    count strangers as this host's. The open descriptor keeps the namespace, and so its
    number, from being freed while down waits. None when init is gone already (the kernel
    killed the namespace with it; the recorded number then means nothing).
    """
    pid, start = state.get("init_pid"), state.get("init_start")
    if not pid or not fleet_proc.is_alive(pid, start):
        return None
    try:
        fd = os.open("/proc/%d/ns/pid" % pid, os.O_RDONLY)
    except OSError:
        return None
    if not fleet_proc.is_alive(pid, start):  # init exited between the check and the open
        os.close(fd)
        return None
    return fd


def _refuse_if_mounted(path):
    """Never rmtree through a mount: a leaked bind mount could point at real data."""
    prefix = path.rstrip("/") + "/"
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].replace("\\040", " ")
            if point == path or point.startswith(prefix):
                raise FleetError("%s is mounted inside the fleet dir; not removing files"
                                 % point)
