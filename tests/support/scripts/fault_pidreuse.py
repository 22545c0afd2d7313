"""PID reuse between the scan and the signal, through Plan/Releaser (run INSIDE a private
PID namespace: it runs a pattern kill).

  fault_pidreuse.py ROOT [control]

Starts one child titled like an SGLang scheduler holding fake GPU 0, then runs the
Releaser of module_utils in-process with the process-table snapshot patched so that
the child's start time differs from its real one: to the Releaser the live process
is a newcomer that took over the PID of the process it scanned. Prints one JSON line:
the result, and whether the child is still alive. The child is SIGKILLed by PID at
the end. With `control` the snapshot is left as it is (the child must then go).
"""
import json
import os
import signal
import sys
import time

# A program: the collection on sys.path
import _bootstrap  # noqa: F401,E402  pylint: disable=unused-import
import setproctitle  # noqa: E402
from simlib import fakegpu  # noqa: E402

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import release as _release  # noqa: E402
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import table as _proctable  # noqa: E402  # noqa: E402
from tests.support import procfs  # noqa: E402


def main(root, control=False):
    rfd, wfd = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(rfd)
        setproctitle.setproctitle("sglang::scheduler_TP0")
        fakegpu.hold(root, [0], 0)
        os.write(wfd, b"ready\n")
        while True:
            signal.pause()
    os.close(wfd)
    assert os.read(rfd, 16) == b"ready\n"
    real = _proctable.cmdline_snapshot

    def reused_snapshot():
        table = real()
        if child in table and not control:
            table[child].create_time -= 5.0  # the scan saw an older process under this PID
        return table

    _release._proctable.cmdline_snapshot = reused_snapshot
    try:
        opts = _release.ReleaseOptions(patterns=["sglang::"], gpus="all", sweep=True, protect=[],
                                       term_timeout=0.2, timeout=5, max_used_mib=0, devices=None,
                                       verify=False, force_broad=False, sweep_users=[],
                                       nvml_timeout=10, v1_reserve_mib=1024)
        # The child is our own descendant, which the Releaser protects as "self":
        # plan as if we were PID 1's child with no children, to make it a target.
        real_protection = _release.Protection

        class NotOurs(real_protection):
            def __init__(self, table, own_pid, extra=()):
                super().__init__(table, own_pid, extra)
                self.own_tree = self.own_tree - {child}

        _release.Protection = NotOurs
        t0 = time.monotonic()
        result = _release.Releaser(opts).run()
        state = procfs.state(child)
        print(json.dumps({"child": child, "result": result, "child_state": state,
                          "seconds": round(time.monotonic() - t0, 3)}), flush=True)
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


if __name__ == "__main__":
    main(sys.argv[1], control=sys.argv[2:] == ["control"])
