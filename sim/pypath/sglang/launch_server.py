"""Entry point: `python -m sglang.launch_server ...` (same command line as SGLang)."""
import os
import sys
import warnings

if __name__ == "__main__":
    # As real 0.5.23 (sglang/launch_server.py): the old entry point works but warns first.
    warnings.warn(
        "'python -m sglang.launch_server' is still supported, but "
        "'sglang serve' is the recommended entrypoint.\n"
        "  Example: sglang serve --model-path <model> [options]",
        UserWarning,
        stacklevel=1,
    )
    # The guard matters: spawned workers re-import the main module.
    from sglang._sim.server import main

    code = main(sys.argv[1:], entry="launch_server")
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: multiprocessing's exit hook would otherwise wait for (orphaned) workers.
    os._exit(code)
