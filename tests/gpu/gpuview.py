"""What NVML and /proc say about GPUs and processes, for the real-GPU suite.

Run as a script it prints, as JSON, NVML's process lists of every GPU (the
suite runs it inside a PID namespace with nsenter to see which PIDs NVML
reports there).
"""
import json
import os
import sys
import time

if __name__ == "__main__":  # run alone (the suite's probe inside a PID namespace): no suite put the root on sys.path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from tests.support import procfs  # noqa: E402  (suite.py puts the repository root on sys.path)

MIB = 1024 * 1024

try:
    import pynvml
except ImportError:  # pragma: no cover - the suite says so and stops
    pynvml = None


class Nvml:
    def __init__(self):
        pynvml.nvmlInit()
        self.count = pynvml.nvmlDeviceGetCount()
        self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(self.count)]
        self.driver = _text(pynvml.nvmlSystemGetDriverVersion())
        self.name = _text(pynvml.nvmlDeviceGetName(self.handles[0])) if self.count else None
        self.minors = [int(pynvml.nvmlDeviceGetMinorNumber(h)) for h in self.handles]

    def v2(self, i):
        m = pynvml.nvmlDeviceGetMemoryInfo(self.handles[i], version=pynvml.nvmlMemory_v2)
        return {"total": m.total, "reserved": m.reserved, "used": m.used, "free": m.free}

    def v1(self, i):
        m = pynvml.nvmlDeviceGetMemoryInfo(self.handles[i])
        return {"total": m.total, "used": m.used, "free": m.free}

    def used_mib(self, i):
        return self.v2(i)["used"] / MIB

    def used_all_mib(self):
        return [self.used_mib(i) for i in range(self.count)]

    def procs(self, i):
        """NVML's process lists for GPU i, per API version: [[pid, used bytes or None], ...]."""
        out = {}
        h = self.handles[i]
        for name in ("nvmlDeviceGetComputeRunningProcesses",      # v3 in nvidia-ml-py 13
                     "nvmlDeviceGetComputeRunningProcesses_v2",
                     "nvmlDeviceGetGraphicsRunningProcesses"):
            fn = getattr(pynvml, name, None)
            if fn is None:
                continue
            try:
                out[name.replace("nvmlDeviceGet", "")] = [[int(p.pid), p.usedGpuMemory] for p in fn(h)]
            except pynvml.NVMLError as exc:
                out[name.replace("nvmlDeviceGet", "")] = "error: %s" % exc
        return out

    def wait_idle(self, idle_mib, timeout, interval=0.005):
        """Poll every GPU's v2 used until all are at most idle_mib; seconds taken or None."""
        t0 = time.monotonic()
        while True:
            if all(u <= m for u, m in zip(self.used_all_mib(), idle_mib)):
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                return None
            time.sleep(interval)


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


state = procfs.state  # process state letter (R, S, Z, ...) or None when the PID is gone


def live_threads(pid):
    """TIDs of `pid`'s threads that have not exited (a zombie leader may have some)."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return []
    out = []
    for tid in tids:
        if procfs.state(tid, "/proc/%d/task" % pid) not in (None, "Z", "X"):
            out.append(int(tid))
    return sorted(out)


def alive(pid):
    """Runs: not gone, and not a zombie, unless its main thread exited while others run on."""
    st = state(pid)
    return st is not None and (st != "Z" or bool(live_threads(pid)))


def cmdline(pid):
    """The command line; read through a live thread when the leader exited (its own reads empty)."""
    for path in ["/proc/%d/cmdline" % pid] + ["/proc/%d/task/%d/cmdline" % (pid, t) for t in live_threads(pid)]:
        try:
            with open(path, "rb") as handle:
                text = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            continue
        if text:
            return text
    return ""


def nspid(pid):
    """NSpid line of /proc/PID/status: the PID in each namespace, outermost first."""
    try:
        with open("/proc/%d/status" % pid) as handle:
            for line in handle:
                if line.startswith("NSpid:"):
                    return [int(x) for x in line.split()[1:]]
    except OSError:
        pass
    return []


def device_files(pid, devices="/dev"):
    """{'fds': [...], 'maps': [...]}: NVIDIA device paths open (fd) or mapped, sorted."""
    prefix = os.path.realpath(devices).rstrip("/") + "/nvidia"
    fds, maps, err = set(), set(), []
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if target.startswith(prefix):
                fds.add(target)
    except OSError as exc:
        err.append("fd: %s" % exc.strerror)
    try:
        with open("/proc/%d/maps" % pid) as handle:
            for line in handle:
                at = line.find(prefix)
                if at >= 0:
                    maps.add(line[at:].strip().replace(" (deleted)", ""))
    except OSError as exc:
        err.append("maps: %s" % exc.strerror)
    out = {"fds": sorted(fds), "maps": sorted(maps)}
    if err:
        out["errors"] = err
    return out


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as handle:
            return [int(x) for x in handle.read().split()]
    except OSError:
        return []


if __name__ == "__main__":
    nv = Nvml()
    print(json.dumps({"self_pid": os.getpid(),
                      "procs": {i: nv.procs(i) for i in range(nv.count)}}))
    sys.stdout.flush()
