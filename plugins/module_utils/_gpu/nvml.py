# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bounded NVML access.

NVML calls can hang in uninterruptible sleep on a sick GPU. A hung call in a
thread of the module would keep the module's stdout open and hang the play, so
NVML runs in a forked child that talks JSON lines over a pipe and has nothing
of ours open but that pipe. A call that outlives its deadline gets the child
SIGKILLed and raises NvmlTimeout; the module can still report and exit.
"""

from __future__ import annotations

import json
import os
import select
import signal
import time
from typing import Any, Callable

from ansible_collections.gpufleet.serving.plugins.module_utils._deps import check as check_libraries
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import health_probe, nvlink_probe

MIB = 1024 * 1024
# Driver reserve assumed when only NVML's v1 memory call exists (v1 `used`
# includes it). An H200 on driver 580 reserves 615 MiB; 1024 leaves margin.
DEFAULT_V1_RESERVE_MIB = 1024


class NvmlTimeout(GpuFleetError):
    pass


class NvmlError(GpuFleetError):
    pass


def check_library() -> None:
    """Raise MissingLibrary (the collection's one message) when nvidia-ml-py is not installed."""
    check_libraries("nvidia-ml-py")


# ---------------------------------------------------------------- child side

def _gpu_record(pynvml, index):
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    rec = {"index": index}
    rec["name"] = _text(pynvml.nvmlDeviceGetName(handle))
    rec["uuid"] = _text(pynvml.nvmlDeviceGetUUID(handle))
    try:
        rec["minor"] = int(pynvml.nvmlDeviceGetMinorNumber(handle))
    except pynvml.NVMLError:
        rec["minor"] = index  # /dev/nvidiaN follows the index where NVML cannot say
    try:
        mem = pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2)
        rec.update(memory_api="v2", total=mem.total, used=mem.used, reserved=mem.reserved)
    except pynvml.NVMLError:
        mem = pynvml.nvmlDeviceGetMemoryInfo(handle)
        rec.update(memory_api="v1", total=mem.total, used=mem.used, reserved=None)
    procs = []
    for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        try:
            for proc in getattr(pynvml, getter)(handle):
                procs.append({"pid": int(proc.pid), "used": proc.usedGpuMemory})
        except pynvml.NVMLError:
            pass
    rec["processes"] = procs
    return rec


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def child_start(req_fd: int, rep_fd: int, hello: Callable[[Any], tuple]) -> tuple | None:
    """A session child's start: its pipes opened, NVML initialised, HELLO(pynvml) -> (state, greeting) run and
    {"ok": true, **greeting} sent; (reader, reply, pynvml, state), or None once an init failure was replied."""
    reader = os.fdopen(req_fd, "r")
    writer = os.fdopen(rep_fd, "w")

    def reply(obj):
        writer.write(json.dumps(obj) + "\n")
        writer.flush()

    try:
        import pynvml
        pynvml.nvmlInit()
        state, greeting = hello(pynvml)
    except Exception as exc:  # report any init failure verbatim
        reply({"error": "init", "msg": str(exc), "kind": type(exc).__name__})
        return None
    reply(dict(greeting, ok=True))
    return reader, reply, pynvml, state


def _driver_and_count(pynvml):
    count = pynvml.nvmlDeviceGetCount()
    return count, {"driver": _text(pynvml.nvmlSystemGetDriverVersion()), "count": count}


def _serve(req_fd, rep_fd):
    """Child: init NVML once, then answer requests until the pipe closes."""
    started = child_start(req_fd, rep_fd, _driver_and_count)
    if started is None:
        return
    reader, reply, pynvml, count = started
    readers = {"snapshot": _gpu_record, "health": _health_record, "nvlink": nvlink_probe.read}
    for line in reader:
        req = json.loads(line)
        record = readers[req.get("op", "snapshot")]
        gpus, errors = [], {}
        for index in req.get("indices") or range(count):
            try:
                gpus.append(record(pynvml, index))
            except Exception as exc:  # one lost GPU must not hide the others
                errors[str(index)] = str(exc)
        reply({"gpus": gpus, "errors": errors})


def _health_record(pynvml, index):
    return health_probe.read(pynvml, index)


# --------------------------------------------------------------- parent side

class NvmlSession:
    """One NVML child for the module's lifetime; every call has a deadline."""

    def __init__(self, timeout: Any) -> None:
        check_library()
        self.timeout = float(timeout)
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            self._become_child(req_r, rep_w, keep=(req_r, rep_w))
            try:
                self._start_child(req_r, rep_w)
            finally:
                os._exit(0)
        os.close(req_r)
        os.close(rep_w)
        self.pid = pid
        self._req = os.fdopen(req_w, "w")
        self._rep_fd = rep_r
        self._buf = b""
        hello = self._read("initialising NVML")
        if hello.get("error"):
            self.close()
            raise NvmlError(_init_message(hello))
        self._hello(hello)

    def _start_child(self, req_r: int, rep_w: int) -> None:  # pragma: no cover - runs in the child
        """What the child does: answer snapshot and health requests (a subclass serves its own)."""
        _serve(req_r, rep_w)

    def _hello(self, hello: dict) -> None:
        """Keep what the child's first line told."""
        self.driver = hello["driver"]
        self.count = hello["count"]

    @staticmethod
    def _become_child(req_r, rep_w, keep):  # pragma: no cover - child only
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        # Drop every other inherited fd, the module's stdout pipe above all.
        for fd in _open_fds():
            if fd > 2 and fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    def _read(self, what):
        deadline = time.monotonic() + self.timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            ready = select.select([self._rep_fd], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                self.kill()
                raise NvmlTimeout(
                    "NVML did not answer within %.1f s while %s: the driver or a GPU may be hung "
                    "(check dmesg for Xid errors and 'nvidia-smi'); nothing more was done" % (self.timeout, what))
            chunk = os.read(self._rep_fd, 65536)
            if not chunk:
                self.kill()
                raise NvmlError("the NVML helper process died while %s" % what)
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def snapshot(self, indices: Any = None) -> Any:
        """Per-GPU records; raises NvmlError naming any GPU NVML could not read."""
        try:
            self._req.write(json.dumps({"indices": list(indices) if indices is not None else None}) + "\n")
            self._req.flush()
        except OSError:  # EPIPE: the helper is gone; say so instead of a BrokenPipeError traceback
            self.kill()
            raise NvmlError("the NVML helper process died before reading GPU memory and processes")
        rep = self._read("reading GPU memory and processes")
        if rep["errors"]:
            raise NvmlError("NVML could not read %s" % "; ".join(
                "GPU %s: %s" % kv for kv in sorted(rep["errors"].items())), gpu_errors=rep["errors"])
        return rep["gpus"]

    def health(self, index: int) -> dict:
        """The health readings of one GPU (health_probe.read), within this session's deadline.

        Returns {"gpus": [record]} or {"errors": {"index": message}}; a hung call raises NvmlTimeout.
        """
        return self._request("health", [index], "reading the health of GPU %d" % index)

    def nvlink(self, indices: list) -> dict:
        """Architecture and NVLink links of GPUs `indices` (nvlink_probe.read): {"gpus": [...], "errors": {...}}."""
        return self._request("nvlink", indices, "reading the NVLink links of GPUs %s" % ", ".join(str(i) for i in indices))

    def _request(self, op: str, indices: list, what: str) -> dict:
        try:
            self._req.write(json.dumps({"op": op, "indices": list(indices)}) + "\n")
            self._req.flush()
        except OSError:
            self.kill()
            raise NvmlError("the NVML helper process died before %s" % what)
        return self._read(what)

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        self._reap(block=False)

    def close(self) -> None:
        try:
            self._req.close()
        except OSError:
            pass
        os.close(self._rep_fd)
        # The child exits on EOF; reap it without risking a hang on a stuck one.
        deadline = time.monotonic() + 1.0
        while not self._reap(block=False):
            if time.monotonic() > deadline:
                self.kill()
                return
            time.sleep(0.005)

    def _reap(self, block):
        try:
            pid, unused = os.waitpid(self.pid, 0 if block else os.WNOHANG)
            return pid == self.pid
        except ChildProcessError:
            return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _open_fds():
    try:
        return [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 256))


def _init_message(hello):
    msg = hello.get("msg", "")
    if "Library Not Found" in msg or "LIBRARY_NOT_FOUND" in msg:
        return ("NVML library libnvidia-ml.so.1 was not found: install the NVIDIA driver "
                "(its user-space libraries) on this host, or check LD_LIBRARY_PATH")
    if "Driver Not Loaded" in msg:
        return "the NVIDIA kernel driver is not loaded on this host (nvidia-smi fails too?): %s" % msg
    return "NVML failed to initialise: %s" % msg


def to_mib(value: int | None) -> float | None:
    return None if value is None else round(value / float(MIB), 1)


def gpu_memory_mib(rec: dict, v1_reserve_mib: Any = DEFAULT_V1_RESERVE_MIB) -> tuple:
    """(used, reserved, total) in MiB; `used` excludes the driver reserve.

    v2: NVML reports the reserve apart. v1: `used` includes it, so an assumed
    reserve is taken off (never below zero); documented in gpu_release.
    """
    total = to_mib(rec["total"])
    if rec["memory_api"] == "v2":
        return to_mib(rec["used"]), to_mib(rec["reserved"]), total
    return max(0.0, to_mib(rec["used"]) - v1_reserve_mib), None, total
