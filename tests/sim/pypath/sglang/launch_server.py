"""Entry point: `python -m sglang.launch_server ...` (same command line as SGLang)."""
import os
import sys

if __name__ == "__main__":
    # The guard matters: spawned workers re-import the main module.
    from sglang._sim.server import main

    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: multiprocessing's exit hook would otherwise wait for (orphaned) workers.
    os._exit(code)
