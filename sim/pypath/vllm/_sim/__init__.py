"""The vLLM 0.33.0 simulator: `vllm serve` with the real flag set, process titles, log lines,
HTTP routes and metric names (each emitter named beside it); timing and tokens are imitation
(the engine-neutral core's batch loop, sim/pypath/_simcore/engine.py)."""
