"""Stand-in HTTP servers, loopback only, each run as a program by the tests that need it.

  bench_server.py  OpenAI-compatible streaming server with a known rate (llm_benchmark, bench/)
  wait_server.py   an SGLang/vLLM start-up (log phases, 503 then 200, crashes) for server_wait

tests/sim's simulated SGLang is the engine simulator, not one of these.
"""
