"""A stand-in for the sglang package, for simulated hosts without GPUs.

Only `python -m sglang.launch_server` is provided; the simulator lives in
`sglang._sim`. It is found through PYTHONPATH (tests/sim/bin/sglang-python).
"""

__version__ = "0.5.23+sim"
