"""Run gpu_release's logic (module_utils Releaser) without Ansible, for timing loops.

    python3 direct_release.py '{"patterns": [...], "protect": [...]}' [--check]

Prints one JSON line: the module's result plus `_wall` (seconds for Releaser.run(),
NVML start-up included). It must run as its own process: the Releaser protects its
own process tree, and the suite is the parent of every holder it starts.
GF_COLLECTIONS (a directory holding ansible_collections/) overrides build/collections.
"""
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.environ.get("GF_COLLECTIONS") or os.path.join(REPO, "build", "collections"))

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError  # noqa: E402
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.release import ReleaseOptions, Releaser  # noqa: E402

# gpu_release's documented defaults
DEFAULTS = dict(patterns=[], gpus="all", sweep=True, protect=[], term_timeout=10.0, timeout=60.0,
                max_used_mib=0.0, devices=None, verify=True, force_broad=False, sweep_users=[],
                nvml_timeout=20.0, v1_reserve_mib=1024.0)


def main():
    args = dict(DEFAULTS, **json.loads(sys.argv[1]))
    t0 = time.monotonic()
    try:
        result = Releaser(ReleaseOptions(**args), check_mode="--check" in sys.argv).run()
        result["failed"] = False
    except GpuFleetError as exc:
        result = dict(exc.details.get("result") or {}, failed=True, msg=exc.msg)
    result["_wall"] = round(time.monotonic() - t0, 4)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
