"""Spawned children: one scheduler per TP rank (holds its GPU) and the detokenizer."""
import os
import threading
import time
import traceback

from sglang._sim import gpus, logs, models, procs, torcherrors

GIB_PER_MIB = 1.0 / 1024
KV_BYTES_PER_TOKEN_PER_LAYER = 576 * 2  # MLA: kv_lora_rank 512 + rope 64, bf16


def _common_start(title, conf):
    procs.set_title(title)
    if not conf["orphan_workers"]:
        procs.die_with_parent(conf["parent_pid"])
    procs.term_stance(conf["hang_on_term"])


def run_detokenizer(conf, conn):
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
    _common_start("sglang::scheduler_TP%d" % rank, conf)
    log = logs.setup(conf["log_level"], "TP%d" % rank)
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
    """The scheduler's start-up phases; returns (what keeps the GPU memory, info for rank 0)."""
    gpu = conf["gpu_ids"][rank]
    target, draft = conf["target"], conf["draft"]
    frac, tp = conf["mem_fraction_static"], conf["tp_size"]
    ph = conf["phases"]

    log.info("Init torch distributed begin.")
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
    log.info("Init torch distributed ends. elapsed=%.2f s, mem usage=0.00 GB", ph["init"])

    weights_mib = target.total_bytes / tp / (1 << 20)
    static_mib = frac * total
    log.info("Load weight begin. avail mem=%.2f GB", _gib(free))
    time.sleep(ph["load"])
    if total and weights_mib > free:
        raise torcherrors.OutOfMemoryError(torcherrors.oom_message(
            rank, _gib(weights_mib), _gib(total), _gib(free), _gib(total - free)))
    log.info("Load weight end. type=%s, dtype=torch.bfloat16, avail mem=%.2f GB, mem usage=%.2f GB.",
             target.architecture, _gib(free - weights_mib), _gib(weights_mib))

    kv_mib = static_mib - weights_mib
    if total and kv_mib <= 0:
        raise RuntimeError("Not enough memory. Please try to increase --mem-fraction-static.")
    time.sleep(ph["kv"])
    per_token = KV_BYTES_PER_TOKEN_PER_LAYER * max(target.num_layers, 1)
    tokens = int(kv_mib * (1 << 20) / per_token) if total else 1 << 20
    log.info("KV Cache is allocated. #tokens: %d, KV size: %.2f GB", tokens, _gib(kv_mib))
    log.info("Memory pool end. avail mem=%.2f GB", _gib(free - static_mib))

    need_mib = static_mib
    if draft is not None:
        draft_mib = draft.total_bytes / tp / (1 << 20) + conf["draft_overhead_mib"]
        log.info("Load weight begin. avail mem=%.2f GB", _gib(free - static_mib))
        if total and static_mib + draft_mib > free:
            raise torcherrors.OutOfMemoryError(torcherrors.oom_message(
                rank, _gib(draft_mib), _gib(total), _gib(free - static_mib), _gib(total - free)))
        need_mib += draft_mib
        log.info("Load weight end. type=%s, dtype=torch.bfloat16, avail mem=%.2f GB, mem usage=%.2f GB.",
                 draft.architecture, _gib(free - need_mib), _gib(draft_mib))
    keep = _hold(rank, gpu, need_mib, total, free, conf)

    bs = [b for b in (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256)
          if b <= conf["cuda_graph_max_bs"]]
    log.info("Capture cuda graph begin. This can take up to several minutes. avail mem=%.2f GB",
             _gib(free - need_mib))
    log.info("Capture cuda graph bs %s", bs)
    time.sleep(ph["graph"])
    if draft is not None:
        models.check_drafter(target, draft)
    log.info("Capture cuda graph end. Time elapsed: %.2f s. mem usage=0.00 GB. avail mem=%.2f GB.",
             ph["graph"], _gib(free - need_mib))
    return keep, {"max_total_num_tokens": tokens, "avail_gb": _gib(free - need_mib)}


def _hold(rank, gpu, need_mib, total, free, conf):
    if conf["real_gpu"]:
        return gpus.hold_real(rank, conf["mem_fraction_static"])
    try:
        return gpus.hold(gpu, need_mib)
    except gpus.out_of_memory_types() as exc:  # lost a race for the memory
        raise torcherrors.OutOfMemoryError(torcherrors.oom_message(
            rank, _gib(need_mib), _gib(total), _gib(free), _gib(total - free)) + " (%s)" % exc) from None
