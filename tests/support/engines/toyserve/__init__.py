"""toyserve: a fake LLM engine that exists only in the tests, a thin layer over the simulators'
engine-neutral core (sim/pypath/_simcore).

It shows what a third engine costs the simulator: a command line, a process tree, log lines,
routes and metric names of its own; tokens, timing, fake GPU memory, HTTP and Prometheus
exposition come from the core. It imitates no real engine, so nothing here cites one.

    PYTHONPATH=tests/support/engines:sim/pypath python -m toyserve serve MODEL --port N --host 127.0.0.1
    tests/support/engines/bin/toyserve serve MODEL --port N --host 127.0.0.1    (the same, as a console script)
    toyserve --version                                                          (prints `toyserve 0.1.0`)

MODEL: a directory with config.json (sim/models/...). The process tree: the server process
(it keeps its command line) and one worker a rank, titled `toyserve::worker_TP{n}`, each
holding its share of fake GPU memory when FAKE_NVML_ROOT names a fake GPU root. Log lines
(stderr, `YYYY-mm-dd HH:MM:SS toyserve LEVEL message`), in order:

    toyserve VERSION loading MODEL (tp=N)
    worker TP{n} holds X MiB on GPU G          (one a rank, only with fake GPUs)
    workers ready: N
    listening on http://HOST:PORT
    ready to serve                             (/health answers 200 from here on)

A failed start-up logs `start-up failed: CAUSE` and exits 1; SIGTERM logs `stopping`, ends the
workers and exits 0. Routes: GET /health (503 until ready), /version, /v1/models, /metrics;
POST /v1/completions and /v1/chat/completions (stream or not; stream_options include_usage
and continuous_usage_stats). Metrics: toyserve:generation_tokens_total,
toyserve:prompt_tokens_total, toyserve:requests_total (finished requests) and the gauge
toyserve:requests_running, labelled model_name.
"""

__version__ = "0.1.0"
