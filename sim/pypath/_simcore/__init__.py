"""The simulators' engine-neutral core: what every fake engine shares.

Each fake engine (sim/pypath/sglang/_sim, sim/pypath/vllm/_sim, and any a test adds) is a
thin layer that imports from here and never from another engine. Here: the batch loop and
its counters (engine), the throughput model (perf), prompt tokens and acceptance (text),
OpenAI request bodies (prompts), model directories and start-up phases (models), fake GPU
memory through NVML (gpus), spawned children, process titles and parent-death plumbing
(procs), torch's error wording (torcherrors), uvicorn's HTTP wire and SSE streams
(http_base), and Prometheus text exposition (prom). sim/README.md says what is real and
what is imitated.
"""
