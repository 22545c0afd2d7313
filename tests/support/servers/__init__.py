"""The stand-in HTTP server (standin.py), loopback only, run as a program by the tests that need it.

One configurable OpenAI-compatible server: serving at once with a known token rate
(llm_benchmark, benchmark_report, bench/client_*.py), or after an SGLang start-up paced by
the test (--log: log phases, 503 then 200, crashes) for server_wait's tests.
sim/'s simulated SGLang and vLLM are the engine simulators, not this (standin.py's docstring
says what it does that they cannot).
"""
