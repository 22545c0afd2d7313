"""A stand-in for the vllm package, for simulated hosts without GPUs.

`vllm serve MODEL ...` (sim/bin/vllm) and `python -m vllm.entrypoints.cli.main serve
MODEL ...` (the real console script's module, vllm/entrypoints/cli/main.py) run the
simulator, `vllm._sim`. It is found through PYTHONPATH (sim/pypath).
"""

__version__ = "0.33.0"  # the vLLM version whose sources the simulator imitates
