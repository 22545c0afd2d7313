"""The stand-in HTTP server (standin.py), loopback only, run as a program by the tests that need it.

One configurable OpenAI-compatible server: serving at once with a known token rate
(llm_benchmark, benchmark_report, bench/client_*.py), or after a simulated SGLang/vLLM
start-up (--log: log phases, 503 then 200, crashes) for server_wait's tests.
sim/'s simulated SGLang is the engine simulator, not this.
"""
