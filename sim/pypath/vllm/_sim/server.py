"""`vllm serve MODEL ...`: the flow of a real vLLM 0.33.0 launch, simulated.

  parse args -> "vLLM server version" -> spawn EngineCore (which spawns one worker a TP rank)
  -> engine initialised ("init engine ... took") -> "Starting vLLM server on" -> uvicorn's
  "Application startup complete." (the engine is warm before uvicorn starts: ready then)
  -> serve until SIGTERM -> abort or drain per --shutdown-timeout (shutdown.py)
  -> stop EngineCore (and its workers) -> exit 0.
A failed start-up: the engine's traceback in the log, exit 1.
"""
import os
import signal
import sys
import threading
import time
import traceback
from multiprocessing.connection import wait

from _simcore import engine as tokens
from _simcore import gpus, models, perf, procs

from vllm import __version__
from vllm._sim import args as argsmod
from vllm._sim import engine_core, http_api, logs, multinode, shutdown


class App:
    """What the HTTP layer reads."""

    def __init__(self, args, target, engine, engine_proc):
        self.args = args
        self.target = target
        self.engine = engine
        self.engine_proc = engine_proc
        self.engine_dead = threading.Event()
        self.stopping = threading.Event()  # SIGTERM seen: EngineCore's exit is expected
        self.draining = threading.Event()  # SIGTERM seen: new requests are aborted (shutdown.py)
        self.created = None
        self.metrics_created = time.time()  # the counters' `_created` value (registered at start-up)

    def spec_tokens(self):
        return int((self.args.spec or {}).get("num_speculative_tokens") or 0) if self.args.spec else 0


def _config_text(args, target):
    # the head of str(VllmConfig) (vllm/config/vllm.py __str__), as core.py:140 prints it
    return ("model=%r, speculative_config=%s, tokenizer=%r, dtype=torch.bfloat16, max_seq_len=%d, "
            "tensor_parallel_size=%d, served_model_name=%s"
            % (args.model, args.spec, args.model, target.context_length, args.tp,
               args.served_names[0]))


def _conf(args, target, draft=None, tp=None):
    """What EngineCore and its workers start with; TP: the workers on this node."""
    tp = args.tp if tp is None else tp
    weights = (target.total_bytes + (draft.total_bytes if draft else 0)) / (1 << 20)
    return {"parent_pid": os.getpid(), "tp": tp, "gpu_ids": gpus.physical_ids(tp),
            "gpu_util": args.gpu_util, "model": args.model, "weights_mib": weights,
            "num_layers": target.num_layers, "max_model_len": args.max_model_len or target.context_length,
            "survivors": args.sim_survivors, "fail_warmup": args.sim_fail_warmup,
            "max_num_seqs": args.max_num_seqs, "config_text": _config_text(args, target),
            "phases": models.phase_seconds(args)}


def main(argv):
    args = argsmod.parse(argv)
    logs.setup("APIServer")  # vllm/entrypoints/launchers/api_server/entry.py run_server: decorate_logs
    # vllm/entrypoints/launchers/launcher.py setup_server: version, non-default args, then the
    # port is bound before the engine starts (listening only once uvicorn runs)
    logs.info("startup.py:38", "vLLM server version %s, serving model %s", __version__, args.model)
    logs.info("startup.py:96", "non-default args: %s", args.non_default)
    group = multinode.node(args)  # a server spanning hosts (None on one host)
    if group and group.headless:
        return group.run_headless(_conf(args, models.load(args.model)))
    server = http_api.Server((args.host or "", args.port), None)
    try:
        server.server_bind()
    except OSError:
        traceback.print_exc()  # create_server_socket: OSError: [Errno 98] Address already in use
        sys.stderr.flush()
        return 1
    target = models.load(args.model)
    draft = None
    if args.spec:
        draft = models.load(args.spec.get("model")) if args.spec.get("model") else None
    if group:
        group.rendezvous()  # before the engine starts: a missing node fails it here
    conf = _conf(args, target, draft, group.local_tp if group else args.tp)
    if not gpus.fake_root():
        logs.info("simulator", "FAKE_NVML_ROOT is not set: no GPU memory is held")  # the simulator's own
    proc, ours = procs.spawn(engine_core.run_engine_core, (conf,), "EngineCore")
    try:
        msg = ours.recv()
    except EOFError:
        msg = {"status": "error", "error": "EngineCore died during start-up"}
    if msg["status"] != "ready":
        proc.join(5)
        # vllm/v1/engine/utils.py:1474 wait_for_engine_startup
        sys.stderr.write("RuntimeError: Engine core initialization failed. See root cause above. "
                         "Failed core proc(s): {'EngineCore': %s}\n" % proc.exitcode)
        sys.stderr.flush()
        return 1
    k = App(args, target, None, proc).spec_tokens()
    model = perf.calibrate(args.sim_single_stream_tps, args.sim_peak_tps, args.sim_peak_concurrency,
                           k, k + 1)  # a verify pass scores k drafts + the bonus token
    eng = tokens.Engine(model, args.max_num_seqs, args.sim_accept_length, msg["kv_tokens"])
    eng.start()
    app = App(args, target, eng, proc)
    server.app = app
    return _serve(app, server, ours)


def _serve(app, server, conn):
    args = app.args
    server.server_activate()
    logs.info("entry.py:135", "Supported tasks: %s", ["generate"])
    host = args.host or "0.0.0.0"
    logs.info("entry.py:139", "Starting vLLM server on %s", "http://%s:%d" % (host, args.port))
    logs.uvicorn("Started server process [%d]" % os.getpid())
    logs.uvicorn("Waiting for application startup.")
    logs.uvicorn("Application startup complete.")

    def on_term(signum, frame):  # --shutdown-timeout: abort, or drain up to it (shutdown.py)
        shutdown.begin(app, lambda: _shutdown(server, conn, app.engine_proc))

    signal.signal(signal.SIGTERM, on_term)
    threading.Thread(target=_watch_engine, args=(app, server, conn), daemon=True).start()
    server.serve_forever(poll_interval=0.2)
    threading.Event().wait()  # _shutdown ends the process


def _watch_engine(app, server, conn):
    """/health turns 503 (health.py: EngineDeadError); then launcher.py's watchdog_loop, every
    VLLM_WATCHDOG_TIME_S, ends the server unless VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1 (envs.py)."""
    wait([app.engine_proc.sentinel])
    app.engine_dead.set()
    if app.stopping.is_set():
        return
    # vllm/v1/engine/exceptions.py EngineDeadError.ENGINE_DEAD_MESSAGE
    logs.error("core_client.py:949", "EngineCore encountered an issue. See stack trace (above) for the root cause.")
    if os.environ.get("VLLM_KEEP_ALIVE_ON_ENGINE_DEATH", "0") not in ("", "0"):
        return
    threading.Event().wait(app.args.sim_watchdog_seconds)
    app.stopping.set()
    _shutdown(server, conn, app.engine_proc)


def _shutdown(server, conn, engine_proc):
    logs.uvicorn("Shutting down")
    server.shutdown()
    server.server_close()
    logs.uvicorn("Waiting for application shutdown.")
    logs.uvicorn("Application shutdown complete.")
    try:
        conn.send("stop")
    except OSError:
        pass
    engine_proc.join(10)  # EngineCore stops its workers first
    os._exit(0)
