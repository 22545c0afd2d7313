"""Fixtures for the fake GPU kit's tests: a fake host root, holders that are always
stopped, and a pynvml probe run in a fresh process (LD_LIBRARY_PATH is read at start)."""
import json
import os
import selectors
import subprocess
import sys
import types

import pytest
from simlib import fakegpu

from tests.support import procfs
from tests.support.gpu import hold as simctl_hold
from tests.support.paths import SIMCTL
from tests.support.polling import poll
from tests.support.processes import OwnProcesses
from tests.support.timing import timed

PY = sys.executable

# Runs under the fake NVML: `snapshot` prints everything pynvml reports as JSON;
# `wait-idle GPU SECONDS` says "ready", waits for a line on stdin, then polls GPU's
# v2 used memory every 5 ms until it is 0 and prints the time that took;
# `sample GPU SECONDS` reads it back to back (for readers running at once).
PROBE = r'''
import json, sys, time
import pynvml as n

def err(e):
    return type(e).__name__

def gpu(i):
    out = {"index": i}
    try:
        h = n.nvmlDeviceGetHandleByIndex(i)
    except n.NVMLError as e:
        out["error"] = err(e)
        return out
    try:
        out.update(name=n.nvmlDeviceGetName(h), uuid=n.nvmlDeviceGetUUID(h),
                   nvml_index=n.nvmlDeviceGetIndex(h), bus=n.nvmlDeviceGetPciInfo(h).busId)
        m = n.nvmlDeviceGetMemoryInfo(h)
        out["v1"] = {"total": m.total, "free": m.free, "used": m.used}
        out["procs"] = [[p.pid, p.usedGpuMemory] for p in n.nvmlDeviceGetComputeRunningProcesses(h)]
        out["graphics"] = len(n.nvmlDeviceGetGraphicsRunningProcesses(h))
        out["by_uuid"] = n.nvmlDeviceGetIndex(n.nvmlDeviceGetHandleByUUID(out["uuid"]))
    except n.NVMLError as e:
        out["error"] = err(e)
        return out
    try:
        m = n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2)
        out["v2"] = {"total": m.total, "reserved": m.reserved, "free": m.free, "used": m.used}
    except n.NVMLError as e:
        out["v2_error"] = err(e)
    return out

n.nvmlInit()
if sys.argv[1] == "snapshot":
    print(json.dumps({"driver": n.nvmlSystemGetDriverVersion(),
                      "nvml": n.nvmlSystemGetNVMLVersion(),
                      "gpus": [gpu(i) for i in range(n.nvmlDeviceGetCount())]}))
elif sys.argv[1] == "wait-idle":
    h = n.nvmlDeviceGetHandleByIndex(int(sys.argv[2]))
    deadline = float(sys.argv[3])
    print("ready", flush=True)
    sys.stdin.readline()
    t0 = time.monotonic()
    polls = 0
    while time.monotonic() - t0 < deadline:
        polls += 1
        if n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2).used == 0:
            print(json.dumps({"elapsed": time.monotonic() - t0, "polls": polls}))
            break
        time.sleep(0.005)
    else:
        print(json.dumps({"elapsed": None, "polls": polls}))
elif sys.argv[1] == "sample":
    # sample GPU SECONDS: after "go", read v2 used back to back until it has read
    # 0 fifty times in a row (or SECONDS pass); print every reading
    h = n.nvmlDeviceGetHandleByIndex(int(sys.argv[2]))
    print("ready", flush=True)
    sys.stdin.readline()
    t0, seen, zeros = time.monotonic(), [], 0
    while zeros < 50 and time.monotonic() - t0 < float(sys.argv[3]):
        seen.append(n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2).used)
        zeros = zeros + 1 if seen[-1] == 0 else 0
    print(json.dumps(seen))
n.nvmlShutdown()
'''

MIB = 1024 * 1024


@pytest.fixture(scope="session")
def fakenvml_lib(tmp_path_factory):
    """The fake NVML, compiled once per session through the CLI."""
    out = tmp_path_factory.mktemp("fakenvml")
    subprocess.run([PY, SIMCTL, "gpu", "build", str(out)], check=True, capture_output=True)
    return str(out / fakegpu.LIB_NAME)


@pytest.fixture
def root(tmp_path, fakenvml_lib):
    """A default fake host: 8 GPUs of 97887 MiB, 615 MiB reserved."""
    return fakegpu.init(str(tmp_path / "host"), gpus=8, lib=fakenvml_lib)


def nvml_env(root, **extra):
    env = dict(os.environ)
    env.update(fakegpu.env(root))
    env.update(extra)
    return env


def probe_snapshot(root, timeout=30):
    cp = subprocess.run([PY, "-c", PROBE, "snapshot"], env=nvml_env(root),
                        capture_output=True, text=True, timeout=timeout, check=False)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


def probe_popen(root, *args, env=None):
    return subprocess.Popen([PY, "-c", PROBE] + list(args), env=env or nvml_env(root),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def read_line(stream, timeout):
    """One line from a pipe, or AssertionError after TIMEOUT seconds."""
    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    try:
        assert sel.select(timeout), "no line within %.1fs" % timeout
        return stream.readline()
    finally:
        sel.close()


proc_state = procfs.state  # 'R', 'S', 'Z', ... or None once the PID is gone


def wait_until(cond, timeout, step=0.005):
    """Poll COND until true; returns seconds taken, or fails at the deadline."""
    return timed(poll, cond, timeout, step)[1]


class Procs(OwnProcesses):
    """OwnProcesses (tests/support/processes.py) that can also start fake-GPU holders."""

    def hold(self, root, gpus, mib, *extra):
        """`simctl gpu hold --detach`; returns the holder's PID."""
        return simctl_hold(root, list(gpus), mib, None, self, None, extra=extra)

    def hold_foreground(self, root, gpus, mib, *extra):
        """`simctl gpu hold` as our child; returns the Popen once memory is held."""
        p = self.popen([PY, SIMCTL, "gpu", "hold", root, "--gpu",
                        ",".join(str(g) for g in gpus), "--mib", str(mib)] + list(extra),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert int(read_line(p.stdout, 60)) == p.pid
        return p


@pytest.fixture
def procs():
    p = Procs()
    yield p
    p.stop_all()


def gone(pid):
    """Gone as the driver sees it: exited, or a zombie (its files are closed)."""
    return proc_state(pid) in (None, "Z")


@pytest.fixture
def kit():
    """The helpers above, for tests (importing conftest by name is ambiguous)."""
    return types.SimpleNamespace(
        PROBE=PROBE, snapshot=probe_snapshot, popen=probe_popen, env=nvml_env,
        read_line=read_line, proc_state=proc_state, gone=gone, wait_until=wait_until)
