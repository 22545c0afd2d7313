"""The vLLM 0.33.0 simulator: `vllm serve` with the real flag set, process titles, log lines,
HTTP routes and metric names (each emitter named beside it); timing and tokens are imitation
(the SGLang simulator's engine, sim/pypath/sglang/_sim/engine.py, is reused)."""
