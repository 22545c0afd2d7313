"""Spawned children: one scheduler per TP rank (holds its GPU) and the detokenizer."""
import os
import threading
import time
import traceback

from _simcore import gpus, models, procs, torcherrors

from sglang._sim import logs

GIB_PER_MIB = 1.0 / 1024


def _common_start(title, conf):
    procs.set_title(title)
    if not conf["orphan_workers"]:
        procs.die_with_parent(conf["parent_pid"])
    procs.term_stance(conf["hang_on_term"])


def scheduler_prefix(rank, conf):
    """The scheduler's log prefix: " DP{d}" with --dp, " TP{t}" only when tp > 1
    (run_scheduler_process, sglang/srt/managers/scheduler.py)."""
    tp = conf["tp_size"]
    prefix = ""
    if conf.get("dp_size", 1) > 1:
        prefix += " DP%d" % (rank // tp)
    if tp > 1:
        prefix += " TP%d" % (rank % tp)
    return prefix


def scheduler_title(rank, conf):
    # setproctitle.setproctitle(f"sglang::scheduler{prefix.replace(' ', '_')}")
    # (sglang/srt/managers/scheduler.py): sglang::scheduler at TP1, sglang::scheduler_TP3 ...
    return "sglang::scheduler" + scheduler_prefix(rank, conf).replace(" ", "_")


def run_data_parallel_controller(conf, conn):
    # setproctitle("sglang::data_parallel_controller") (sglang/srt/managers/data_parallel_controller.py)
    _common_start("sglang::data_parallel_controller", conf)
    conn.send({"status": "ready"})
    procs.idle_until_released(conn, conf["orphan_workers"])


def run_tokenizer_worker(conf, conn):
    # With --tokenizer-worker-num N > 1, each HTTP worker's TokenizerWorker sets
    # setproctitle(f"sglang::tokenizer_worker:{os.getpid()}") (sglang/srt/managers/
    # multi_tokenizer_mixin.py). Imitation: the simulator serves HTTP from the main process;
    # these processes only carry the titles.
    _common_start("sglang::tokenizer_worker:%d" % os.getpid(), conf)
    conn.send({"status": "ready"})
    procs.idle_until_released(conn, conf["orphan_workers"])


def run_detokenizer(conf, conn):
    # setproctitle("sglang::detokenizer") (sglang/srt/managers/detokenizer_manager.py)
    _common_start("sglang::detokenizer", conf)
    logs.setup(conf["log_level"])
    conn.send({"status": "ready"})
    procs.idle_until_released(conn, conf["orphan_workers"])


class _Barrier:
    """torch.distributed init stand-in: the main process releases all ranks at once."""

    def __init__(self, conn):
        self.conn = conn

    def wait(self):
        self.conn.send({"status": "barrier"})
        if self.conn.recv() != "go":
            raise threading.BrokenBarrierError


def run_scheduler(rank, conf, conn):
    barrier = _Barrier(conn)
    _common_start(scheduler_title(rank, conf), conf)
    log = logs.setup(conf["log_level"], scheduler_prefix(rank, conf).strip())
    keep = None
    try:
        keep, info = _start(rank, conf, barrier, log)
        conn.send(dict(info, status="ready"))
    except BaseException as exc:  # noqa: B902 - every failure must reach the main process
        if isinstance(exc, threading.BrokenBarrierError):
            os._exit(1)  # a peer failed first and reports the cause
        log.error("Scheduler hit an exception: %s", traceback.format_exc().rstrip())
        conn.send({"status": "error", "rank": rank, "error": "%s: %s" % (type(exc).__name__, exc)})
        os._exit(1)
    procs.idle_until_released(conn, conf["orphan_workers"])
    del keep


def _gib(mib):
    return max(mib, 0) * GIB_PER_MIB  # no GPU size known (no fake root): numbers read 0


def _start(rank, conf, barrier, log):
    """The scheduler's start-up phases; returns (what keeps the GPU memory, info for rank 0).

    Each line is the real 0.5.23 format; the comment names its emitter (under sglang/srt/).
    """
    gpu = conf["gpu_ids"][rank - conf.get("tp_offset", 0)]  # a node of a group: its first TP rank is the offset
    target, draft = conf["target"], conf["draft"]
    frac, tp = conf["mem_fraction_static"], conf["tp_size"]
    ph = conf["phases"]
    first_tp_rank = rank % tp == 0  # log_info_on_rank0 (utils/common.py)

    log.info("Init parallel begin.")  # distributed/bootstrap.py init_parallel_runtime
    time.sleep(ph["init"])
    mem = gpus.memory_mib(gpu)
    total, free = mem if mem else (conf["gpu_total_mib"], conf["gpu_total_mib"])
    if mem and tp > 1:
        min_free = min(gpus.memory_mib(g)[1] for g in conf["gpu_ids"])
        if min_free < free * 0.9:
            raise ValueError("The memory capacity is unbalanced. Some GPUs may be occupied by other "
                             "processes. min_per_gpu_memory=%.2f, local_gpu_memory=%.2f, "
                             "local_gpu_memory * 0.9=%.2f" % (_gib(min_free), _gib(free), _gib(free) * 0.9))
    barrier.wait()  # like torch.distributed init: no rank holds memory before all have checked
    log.info("Init parallel ends. elapsed=%.2f s", ph["init"])  # distributed/bootstrap.py

    weights_mib = target.total_bytes / tp / (1 << 20)
    static_mib = frac * total
    # model_executor/model_runner.py ModelRunner.load_model
    log.info("Load weight begin. avail mem=%.2f GB", _gib(free))
    time.sleep(ph["load"])
    if total and weights_mib > free:
        raise torcherrors.OutOfMemoryError(torcherrors.oom_message(
            rank, _gib(weights_mib), _gib(total), _gib(free), _gib(total - free)))
    log.info("Load weight end. elapsed=%.2f s, type=%s, avail mem=%.2f GB, mem usage=%.2f GB.",
             ph["load"], target.architecture, _gib(free - weights_mib), _gib(weights_mib))

    kv_mib = static_mib - weights_mib
    if total and kv_mib <= 0:
        raise RuntimeError("Not enough memory. Please try to increase --mem-fraction-static.")
    time.sleep(ph["kv"])
    per_token = models.KV_BYTES_PER_TOKEN_PER_LAYER * max(target.num_layers, 1)
    tokens = int(kv_mib * (1 << 20) / per_token) if total else 1 << 20
    # mem_cache/memory_pool.py _finalize_allocation_log
    log.info("KV Cache is allocated. dtype: torch.bfloat16, #tokens: %d, KV size: %.2f GB",
             tokens, _gib(kv_mib))
    # mem_cache/kv_cache_configurator.py
    log.info("Memory pool end. avail mem=%.2f GB", _gib(free - static_mib))

    need_mib = static_mib
    if draft is not None:
        draft_mib = draft.total_bytes / tp / (1 << 20) + conf["draft_overhead_mib"]
        log.info("Load weight begin. avail mem=%.2f GB", _gib(free - static_mib))  # the draft's ModelRunner
        if total and static_mib + draft_mib > free:
            raise torcherrors.OutOfMemoryError(torcherrors.oom_message(
                rank, _gib(draft_mib), _gib(total), _gib(free - static_mib), _gib(total - free)))
        need_mib += draft_mib
        log.info("Load weight end. elapsed=%.2f s, type=%s, avail mem=%.2f GB, mem usage=%.2f GB.",
                 0.0, draft.architecture, _gib(free - need_mib), _gib(draft_mib))
    keep = _hold(rank, gpu, need_mib, total, free, conf)
    avail = _gib(free - need_mib)

    bs = [b for b in (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256)
          if b <= conf["cuda_graph_max_bs"]]
    target_s = ph["graph"] * (0.6 if draft is not None else 1.0)
    # model_executor/model_runner_components/cuda_graph_setup.py capture_decode_graph:
    # "verify" when speculative (num_tokens_per_req: the draft tokens), else "decode".
    name, per_req = ("target verify", conf["num_draft_tokens"]) if conf["speculative"] else ("target decode", 1)
    log.info("Capture %s CUDA graph begin. backend=full, num_tokens_per_req=%d, avail mem=%.2f GB",
             name, per_req, avail)
    time.sleep(target_s)
    log.info("Capture %s CUDA graph end. bs=%s, elapsed=%.2f s, mem usage=0.00 GB, avail mem=%.2f GB.",
             name, bs, target_s, avail)
    if draft is not None:
        models.check_drafter(target, draft)
        draft_s = (ph["graph"] - target_s) / 2
        for phase, per_req in (("decode", conf["eagle_topk"]), ("extend", conf["num_draft_tokens"])):
            # speculative/eagle_worker_v2.py, rank 0 only (log_info_on_rank0)
            if first_tp_rank:
                log.info("Capture draft %s CUDA graph begin. backend=full, num_tokens_per_req=%d, bs=%s, "
                         "avail mem=%.2f GB", phase, per_req, bs, avail)
            time.sleep(draft_s)
            if first_tp_rank:
                log.info("Capture draft %s CUDA graph end. elapsed=%.2f s, mem usage=0.00 GB, "
                         "avail mem=%.2f GB.", phase, draft_s, avail)
    return keep, {"max_total_num_tokens": tokens, "avail_gb": avail}


def _hold(rank, gpu, need_mib, total, free, conf):
    if conf["real_gpu"]:
        return gpus.hold_real(rank, conf["mem_fraction_static"])
    try:
        return gpus.hold(gpu, need_mib)
    except gpus.out_of_memory_types() as exc:  # lost a race for the memory
        raise torcherrors.OutOfMemoryError(torcherrors.oom_message(
            rank, _gib(need_mib), _gib(total), _gib(free), _gib(total - free)) + " (%s)" % exc) from None
