"""A stand-in for the sglang package, for simulated hosts without GPUs.

`python -m sglang.launch_server` (sim/bin/sglang-python) and `sglang serve`
(sim/bin/sglang) run the simulator, `sglang._sim`. It is found through PYTHONPATH.
Real SGLang's `sglang.srt` is reached through this package too: sim/realsglang.py
appends the real wheel's directory to `__path__` (only modules this package lacks).
"""

__version__ = "0.5.23"  # the pinned real version (requirements-sglang.txt); a test keeps them equal
