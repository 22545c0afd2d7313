# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs NvmlSession in a fresh process (the fake NVML needs LD_LIBRARY_PATH at start).

usage: nvml_probe.py JSON  with keys timeout, indices, hang_after_init (a fault path
to create between the session's start and the snapshot). Prints one JSON line.
"""
import json
import sys
import time

# A program: the collection on sys.path
import _bootstrap  # noqa: F401  pylint: disable=unused-import

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import nvml as _nvml  # noqa: E402
from tests.support.procfs import alive as helper_alive  # noqa: E402


def main():
    req = json.loads(sys.argv[1])
    out = {}
    t0 = time.monotonic()
    session = None
    try:
        session = _nvml.NvmlSession(req.get("timeout", 5))
        out.update(driver=session.driver, count=session.count, helper=session.pid)
        if req.get("hang_after_init"):
            open(req["hang_after_init"], "a").close()
        t0 = time.monotonic()
        out["gpus"] = session.snapshot(req.get("indices"))
        session.close()
        out["helper_alive_after_close"] = helper_alive(session.pid)
    except _nvml.GpuFleetError as exc:
        out["elapsed"] = time.monotonic() - t0
        out.update(error=type(exc).__name__, msg=exc.msg, gpu_errors=exc.details.get("gpu_errors"))
        if session is not None and not isinstance(exc, _nvml.NvmlTimeout):
            session.close()  # a read error leaves the helper serving: close it
        elif session is not None:
            # kill() does not wait (a helper stuck in D state may never die): poll a while
            deadline = time.monotonic() + 3.0
            while helper_alive(session.pid) and time.monotonic() < deadline:
                time.sleep(0.01)
            out["helper_alive_after_error"] = helper_alive(session.pid)
    out.setdefault("elapsed", time.monotonic() - t0)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
