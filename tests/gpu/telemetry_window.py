"""The collection's telemetry sampler (_gpu/telemetry.py) in a process of its own, for the real-GPU suite.

    python3 telemetry_window.py 0        (GPU indices, comma-separated)

As in llm_benchmark's module, nothing in this process has started NVML before the sampler forks
its child (a child forked from a process that has NVML open is refused by the driver: "The
operating system has blocked the request", seen on the H200 on 2026-12-05). It starts the
sampler, prints {"ready": ...}, reads one line "START END" (time.perf_counter() seconds of the
measured window, CLOCK_MONOTONIC like the sampler's stamps), and prints the window's figures.
"""
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.environ.get("GF_COLLECTIONS") or os.path.join(REPO, "build", "collections"))

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import telemetry  # noqa: E402


def main():
    indices = [int(i) for i in sys.argv[1].split(",")]
    sampler, why = telemetry.start(indices)
    if sampler is None:
        print(json.dumps({"ready": False, "error": why}), flush=True)
        return 1
    print(json.dumps({"ready": sampler.begin(), "error": sampler.dead}), flush=True)
    began, ended = (float(x) for x in sys.stdin.readline().split())
    reply = sampler.end()
    sampler.close()
    figures = telemetry.window_figures(reply, indices, sampler.default_sm_mhz, began, ended, 1.0) if reply else {}
    print(json.dumps({"figures": figures, "default_sm_mhz": sampler.default_sm_mhz,
                      "default_sm_source": sampler.default_sm_source, "error": sampler.dead,
                      "samples": len(reply["samples"]) if reply else 0}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
