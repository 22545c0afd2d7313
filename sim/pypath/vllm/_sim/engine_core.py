"""The EngineCore process and its workers, as vLLM 0.33.0 lays them out.

API server (the `vllm serve` process, logs as APIServer)
  -> EngineCore (title VLLM::EngineCore, vllm/v1/engine/core.py run_engine_core)
       -> TP > 1: one worker a rank (VLLM::Worker_TP{n}, vllm/v1/executor/multiproc_executor.py
          setup_proc_title_and_log_prefix), each holding its GPU's memory;
          TP 1: the UniProcExecutor runs the model inside EngineCore, which holds the memory.
Titles come from set_process_title (vllm/utils/system_utils.py: f"{prefix}::{name}", prefix
VLLM_PROCESS_NAME_PREFIX = "VLLM").

Normal mode: EngineCore dies with the API server and workers with EngineCore (the real ones
watch a death pipe; here PR_SET_PDEATHSIG). --sim-survivors leaves both behind with their
GPU memory when the API server is SIGKILLed, the trap of vllm issues 55510 and 34643.
"""
import os
import signal
import time
import traceback

from _simcore import gpus, models, procs, torcherrors

from vllm import __version__
from vllm._sim import logs

GIB = 1024.0  # MiB a GiB
# vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run re-raises an OOM of the sampler warm-up so
# (%d: num_reqs, min(max_num_seqs, max_num_batched_tokens)); tests/sim/test_vllm_sim.py reads the wheel's.
SAMPLER_WARMUP_OOM = ("CUDA out of memory occurred when warming up sampler with %d dummy requests. Please try "
                      "lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.")


def title(name):
    procs.set_title("VLLM::" + name)  # vllm/utils/system_utils.py set_process_title


def worker_name(rank, tp):
    # multiproc_executor.py setup_proc_title_and_log_prefix: "Worker" + f"_TP{tp_rank}" when tp > 1
    return "Worker_TP%d" % rank if tp > 1 else "Worker"


def _gib(mib):
    return round(max(mib, 0) / GIB, 2)  # vllm/utils/mem_utils.py format_gib


def _start(conf, survive):
    if not survive:
        procs.die_with_parent(conf["parent_pid"])
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def load_and_hold(rank, conf):
    """A model runner's start-up on one rank: check free memory, load, hold util x total.

    Returns (holder, info). Lines logged by the local first rank only (info_once, scope "local").
    """
    first = rank == 0
    gpu = conf["gpu_ids"][rank]
    ph = conf["phases"]
    mem = gpus.memory_mib(gpu)
    total, free = mem if mem else (0, 0)
    requested = conf["gpu_util"] * total
    if mem and free < requested:
        # vllm/v1/worker/utils.py request_memory
        raise ValueError(
            "Free memory on device cuda:%d (%s/%s GiB) on startup is less than desired GPU memory "
            "utilization (%s, %s GiB). Decrease GPU memory utilization or reduce GPU memory used by "
            "other processes." % (rank, _gib(free), _gib(total), conf["gpu_util"], _gib(requested)))
    if first:
        logs.info("gpu_model_runner.py:4979", "Starting to load model %s...", conf["model"])
    time.sleep(ph["load"])
    weights = conf["weights_mib"] / conf["tp"]
    if mem and weights + 1024 > requested:  # the weights do not fit in util x total
        raise torcherrors.OutOfMemoryError(torcherrors.oom_message(
            rank, _gib(weights), _gib(total), _gib(requested), _gib(total - free)))
    holder = gpus.hold(gpu, requested) if mem else None
    if first:
        logs.info("gpu_model_runner.py:5089", "Model loading took %s GiB memory and %.6f seconds",
                  _gib(weights), ph["load"])
    time.sleep(ph["kv"])
    kv = requested - weights - 1024  # activations and CUDA graphs take about 1 GiB
    if first:
        logs.info("gpu_worker.py:773", "Available KV cache memory: %s GiB", _gib(kv))
    tokens = int(max(kv, 0) * (1 << 20) / (models.KV_BYTES_PER_TOKEN_PER_LAYER * max(conf["num_layers"], 1)))
    return holder, {"kv_tokens": tokens if mem else 1 << 20}


def capture_graphs(rank, conf):
    ph = conf["phases"]
    if rank == 0:
        # gpu_model_runner.py:6592, tqdm's bar on the global first rank only
        logs.stderr_line("Capturing CUDA graphs (decode, FULL): 100%%|##########| 51/51 [00:%02d<00:00]"
                         % int(ph["graph"]))
    time.sleep(ph["graph"])
    if rank == 0:
        logs.info("gpu_model_runner.py:6517", "Graph capturing finished in %.0f secs, took %.2f GiB",
                  ph["graph"], 0.5)
    if rank == 0 and conf["fail_warmup"]:
        # gpu_worker.py compile_or_warm_up_model warms the sampler up after capture_model.
        raise RuntimeError(SAMPLER_WARMUP_OOM % conf["max_num_seqs"])


def run_worker(rank, conf, conn):
    """One TP rank (multiproc_executor.py WorkerProc): load, hold memory, capture, then idle."""
    title(worker_name(rank, conf["tp"]))
    _start(conf | {"parent_pid": conf["engine_pid"]}, conf["survivors"])
    logs.setup(worker_name(rank, conf["tp"]))
    try:
        keep, info = load_and_hold(rank, conf)
        conn.send(dict(info, status="loaded"))
        if conn.recv() != "capture":
            os._exit(1)
        capture_graphs(rank, conf)
        conn.send({"status": "ready"})
    except BaseException as exc:  # noqa: B902 - every failure reaches EngineCore
        logs.error("multiproc_executor.py:1057", "WorkerProc failed to start.\n%s", traceback.format_exc().rstrip())
        conn.send({"status": "error", "error": "%s: %s" % (type(exc).__name__, exc)})
        os._exit(1)
    procs.idle_until_released(conn, conf["survivors"])
    del keep


def run_engine_core(conf, conn):
    """vllm/v1/engine/core.py EngineCoreProc.run_engine_core, simulated."""
    title("EngineCore")  # core.py:1482 (EngineCore_DP{n} with data parallel)
    _start(conf, conf["survivors"])
    logs.setup("EngineCore")
    started = time.monotonic()
    workers = []
    try:
        logs.info("core.py:140", "Initializing a V1 LLM engine (v%s) with config: %s", __version__,
                  conf["config_text"])
        time.sleep(conf["phases"]["init"])
        keep = None
        if conf["tp"] == 1:  # UniProcExecutor: the model runs in this process
            keep, info = load_and_hold(0, conf)
        else:
            wconf = dict(conf, engine_pid=os.getpid())
            for rank in range(conf["tp"]):
                workers.append(procs.spawn(run_worker, (rank, wconf), "VllmWorker-%d" % rank))
            infos = [_expect(c, "loaded") for _p, c in workers]
            info = infos[0]
        # vllm/v1/core/kv_cache_utils.py:1148, logged by EngineCore once the workers report memory
        logs.info("kv_cache_utils.py:1148", "%s KV cache size: %s tokens, Maximum concurrency for %s tokens "
                  "per request: %.2fx", "GPU", f"{info['kv_tokens']:,}", f"{conf['max_model_len']:,}",
                  info["kv_tokens"] / max(conf["max_model_len"], 1))
        if conf["tp"] == 1:
            capture_graphs(0, conf)
        else:
            for _p, c in workers:
                c.send("capture")
            for _p, c in workers:
                _expect(c, "ready")
        logs.info("core.py:413", "init engine (profile, create kv cache, warmup model) took %.2f s",
                  time.monotonic() - started)
        conn.send({"status": "ready", "kv_tokens": info["kv_tokens"]})
    except BaseException as exc:  # noqa: B902
        logs.error("core.py:1584", "EngineCore failed to start.\n%s", traceback.format_exc().rstrip())
        for proc, _c in workers:
            proc.kill()
        try:
            conn.send({"status": "error", "error": "%s: %s" % (type(exc).__name__, exc)})
        except OSError:
            pass
        os._exit(1)
    _serve(conn, workers, conf["survivors"])
    del keep


def _expect(conn, status):
    try:
        msg = conn.recv()
    except EOFError:
        raise RuntimeError("Worker failed with error 'died during start-up', please check the stack trace "
                           "above for the root cause") from None
    if msg.get("status") != status:
        raise RuntimeError("Worker failed with error '%s', please check the stack trace above for the "
                           "root cause" % msg.get("error"))
    return msg


def _serve(conn, workers, survivors):
    """Idle until the API server says stop (stop the workers too) or goes away."""
    from multiprocessing.connection import wait
    sentinels = [p.sentinel for p, _c in workers]
    while True:
        ready = wait([conn] + sentinels)
        dead = [p for p, _c in workers if p.sentinel in ready]
        if dead:  # a worker died: the engine is dead
            logs.error("multiproc_executor.py:381", "Worker proc %s died unexpectedly (exit code: %s), "
                       "shutting down executor.", dead[0].name, dead[0].exitcode)
            for proc, _c in workers:
                proc.kill()
            os._exit(1)
        try:
            if conn.recv() == "stop":
                break
        except (EOFError, OSError):
            if survivors:  # the trap: API server gone, engine and workers keep the GPUs
                while True:
                    signal.pause()
            break
    stop_workers(workers)
    os._exit(0)


def stop_workers(workers):
    """Tell each worker to stop, wait for it, kill one that does not."""
    for proc, c in workers:
        try:
            c.send("stop")
        except OSError:
            pass
        proc.join(5)
        if proc.is_alive():
            proc.kill()
