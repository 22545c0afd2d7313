"""`python -m sglang.launch_server`: the flow of a real launch, simulated.

  parse args -> read configs -> spawn schedulers (TP ranks) + detokenizer -> wait for them
  -> bind uvicorn's port -> warm-up -> "The server is fired up and ready to roll!"
  -> serve until SIGTERM -> drain until no request is left (shutdown.py) -> end its tree -> exit.
Any failure: traceback in the log, the tree killed, a non-zero exit.
"""
import os
import signal
import sys
import threading
import traceback

from _simcore import engine as enginemod
from _simcore import gpus, models, perf

from sglang._sim import args as argsmod
from sglang._sim import http_api, logs, multinode, ports, serverargs, shutdown, warmup
from sglang._sim.app import App
from sglang._sim.batchlog import BatchLog
from sglang._sim.workers import Workers

DRAFT_OVERHEAD_MIB = 2048  # drafter KV cache and its CUDA graphs, per rank


def main(argv, entry="launch_server"):
    """ENTRY: `launch_server` (python -m sglang.launch_server) or `serve` (sglang serve)."""
    args = argsmod.parse(argv, entry)  # real SGLang's parser: its message and exit code
    log = logs.setup(args.log_level)
    if args.sim_hang_on_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # from the first moment, start-up included
    workers = None
    try:
        serverargs.resolve(args, log.warning)
        held_ports = ports.reserve(args, log)  # noqa: F841 - open for the server's lifetime
        log.info(serverargs.log_line(args))
        target = models.load(args.model_path)
        draft = models.load(args.speculative_draft_model_path) if args.speculative_algorithm else None
        node = multinode.start(args, log)  # a server spanning hosts: its rendezvous (None on one host)
        local = node.local_args if node else args
        gpu_ids = gpus.physical_ids(local.tp_size * local.dp_size)
        if not gpus.fake_root() and not args.sim_real_gpu:
            log.warning("FAKE_NVML_ROOT is not set: no GPU memory is held")
        workers = (node.workers if node else Workers)(local, _worker_conf(local, target, draft, gpu_ids), log)
        workers.start()
        info = workers.wait_ready()
        if node and node.rank > 0:
            return node.serve_health_until_schedulers_exit(workers)
        log.info("max_total_num_tokens=%d, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                 "max_running_requests=%d, context_len=%d, available_gpu_mem=%.2f GB",
                 info["max_total_num_tokens"], args.max_running_requests, target.context_length,
                 info["avail_gb"])
        engine = _engine(args, info["max_total_num_tokens"])
        app = App(args, target, draft, engine)
        return _serve(app, workers, log)
    except Exception:  # noqa: BLE001 - as SGLang: traceback, kill the tree, exit non-zero
        traceback.print_exc()
        sys.stderr.flush()
        if workers:
            workers.end()
        return 1


def _worker_conf(args, target, draft, gpu_ids):
    phases = models.phase_seconds(args)
    return {"parent_pid": os.getpid(), "tp_size": args.tp_size, "dp_size": args.dp_size, "gpu_ids": gpu_ids,
            "mem_fraction_static": args.mem_fraction_static, "target": target, "draft": draft,
            "phases": phases, "orphan_workers": args.sim_orphan_workers,
            "hang_on_term": args.sim_hang_on_term, "real_gpu": args.sim_real_gpu,
            "log_level": args.log_level, "cuda_graph_max_bs": args.cuda_graph_max_bs,
            "speculative": args.speculative_algorithm is not None,
            "num_draft_tokens": args.speculative_num_draft_tokens, "eagle_topk": args.speculative_eagle_topk,
            "gpu_total_mib": args.sim_gpu_total_mib, "draft_overhead_mib": DRAFT_OVERHEAD_MIB}


def _engine(args, max_total_tokens):
    steps = args.speculative_num_steps if args.speculative_algorithm else 0
    model = perf.calibrate(args.sim_single_stream_tps, args.sim_peak_tps, args.sim_peak_concurrency,
                           steps or 0, args.speculative_num_draft_tokens or 1)
    eng = enginemod.Engine(model, args.max_running_requests, args.sim_accept_length, max_total_tokens,
                           BatchLog())
    eng.start()
    return eng


def _serve(app, workers, log):
    args = app.args
    server = http_api.Server((args.host, args.port), app)
    logs.uvicorn("Started server process [%d]" % os.getpid())
    logs.uvicorn("Waiting for application startup.")
    logs.uvicorn("Application startup complete.")
    try:
        server.server_bind()
        server.server_activate()
    except OSError as exc:  # uvicorn's wording, e.g. [Errno 98] ... address already in use
        logs.uvicorn("[Errno %s] error while attempting to bind on address %r: %s"
                     % (exc.errno, (args.host, args.port), (exc.strerror or str(exc)).lower()), "ERROR")
        logs.uvicorn("Waiting for application shutdown.")
        logs.uvicorn("Application shutdown complete.")
        workers.end()
        return 1
    logs.uvicorn("Uvicorn running on http://%s:%d (Press CTRL+C to quit)" % (args.host, args.port))
    shutdown.install(app, workers, log)  # SIGTERM: drain with no deadline (shutdown.py)
    workers.watch(lambda: _child_died(workers, log))
    threading.Thread(target=_warm, args=(app, workers, log), name="warmup", daemon=True).start()
    server.serve_forever(poll_interval=0.2)
    threading.Event().wait()  # the SIGTERM watchdog ends the process


def _warm(app, workers, log):
    error = warmup.run(app.args, app.args.sim_warmup_seconds, app.args.sim_fail_warmup)
    if error:
        log.error("Initialization failed. warmup error: %s", error)
        workers.end()
        os._exit(1)
    app.ready.set()
    log.info("The server is fired up and ready to roll!")


def _child_died(workers, log):
    log.error("SIGQUIT received. signum=None, frame=None. It usually means one child failed.")
    workers.end()
    os._exit(1)
