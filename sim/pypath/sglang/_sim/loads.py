"""GET /v1/loads: SGLang 0.5.23's load report, one entry per DP rank.

Shapes from srt/entrypoints/v1_loads.py get_loads (timestamp, version, accelerator,
num_accelerators, loads; `?format=prometheus` gives `sglang_<key>{dp_rank="N"}` gauges,
_format_loads_prometheus; `?dp_rank=N` filters, out of range gives []; `?include=` picks
sections, an unknown one is a 400) and srt/managers/load_snapshot.py LoadSnapshot.to_dict
(the core keys always; sections memory, disaggregation, queues, and speculative once a verify
step ran; srt/managers/scheduler_components/load_inquirer.py get_loads fills them).
Imitation: the simulator has one batch for all DP ranks; its running and waiting requests
are dealt out over the ranks (rank r gets the r-th share), so the sums are exact.
"""
import time
from datetime import datetime, timezone

from sglang import __version__

CORE_KEYS = ("timestamp", "dp_rank", "num_running_reqs", "num_waiting_reqs", "num_waiting_uncached_tokens",
             "num_used_tokens", "num_total_tokens", "num_active_tokens", "num_prealloc_ready_tokens",
             "max_total_num_tokens", "max_running_requests", "token_usage", "gen_throughput",
             "cache_hit_rate", "utilization", "total_prefill_uncached_tokens", "total_prefill_busy_us",
             "decode_moments")
VALID_SECTIONS = frozenset({"core", "memory", "spec", "lora", "disagg", "queues", "all"})
SECTION_NAMES = (("memory", "memory"), ("speculative", "spec"), ("lora", "lora"),
                 ("disaggregation", "disagg"), ("queues", "queues"))
PROM_PREFIXES = {"speculative": "spec", "disaggregation": "disagg"}


class BadInclude(ValueError):
    pass


def _share(total, rank, ranks):
    return total // ranks + (1 if rank < total % ranks else 0)


def snapshots(app):
    """One LoadSnapshot dict (all sections) per DP rank."""
    args, eng = app.args, app.engine
    running, waiting = eng.counts()
    dp = max(args.dp_size, 1)
    out = []
    for rank in range(dp):
        run, wait = _share(running, rank, dp), _share(waiting, rank, dp)
        used = int(eng.token_usage() * eng.max_total_tokens)
        load = {key: 0 for key in CORE_KEYS}
        load.update(timestamp=time.time(), dp_rank=rank, num_running_reqs=run, num_waiting_reqs=wait,
                    num_used_tokens=used, num_total_tokens=used, num_active_tokens=used,
                    max_total_num_tokens=eng.max_total_tokens, max_running_requests=args.max_running_requests,
                    token_usage=round(eng.token_usage(), 4), gen_throughput=round(eng.stats.gen_throughput, 2),
                    cache_hit_rate=0.0, utilization=0.0, decode_moments=None)
        load["memory"] = {"weight_gb": round(app.target.total_bytes / args.tp_size / 2 ** 30, 3),
                          "kv_cache_gb": 0.0, "graph_gb": 0.0, "token_capacity": eng.max_total_tokens}
        if app.speculative() and eng.stats.spec_verify_total:
            load["speculative"] = {"accept_length": eng.stats.avg_accept_length(),
                                   "accept_rate": eng.stats.avg_accept_rate(app.draft_tokens())}
        load["disaggregation"] = {"mode": "null", "prefill_bootstrap_queue_reqs": 0,
                                  "prefill_inflight_queue_reqs": 0, "decode_prealloc_queue_reqs": 0,
                                  "decode_transfer_queue_reqs": 0, "decode_retracted_queue_reqs": 0,
                                  "kv_transfer_speed_gb_s": 0.0, "kv_transfer_latency_ms": 0.0}
        load["queues"] = {"waiting": wait, "grammar": 0, "paused": 0, "retracted": 0, "prealloc_ready": 0}
        out.append(load)
    return out


def _select(load, include):
    """LoadSnapshot.to_dict(include): the core keys, plus the chosen sections present."""
    out = {key: load[key] for key in CORE_KEYS}
    if include is not None and "all" not in include:
        if not include <= VALID_SECTIONS:
            raise BadInclude("Invalid include sections: %s. Valid options: %s"
                             % (include - VALID_SECTIONS, sorted(VALID_SECTIONS)))
        if include == {"core"}:
            return out
    for field, name in SECTION_NAMES:
        if field in load and (include is None or "all" in include or name in include):
            out[field] = load[field]
    return out


def answer(app, query):
    """(status, content type, body: dict or str) for GET /v1/loads?QUERY (a parsed query dict)."""
    include = query.get("include")
    include_set = {s.strip() for s in include.split(",")} if include else None
    loads = snapshots(app)
    if query.get("dp_rank") is not None:
        rank = int(query["dp_rank"])
        loads = [load for load in loads if load["dp_rank"] == rank]
    try:
        chosen = [_select(load, include_set) for load in loads]
    except BadInclude as exc:
        return 400, "application/json", {"detail": str(exc)}
    if query.get("format") == "prometheus":
        return 200, "text/plain; version=0.0.4; charset=utf-8", _prometheus(chosen)
    return 200, "application/json", {
        "timestamp": datetime.now(timezone.utc).isoformat(), "version": __version__,
        "accelerator": None, "num_accelerators": app.args.tp_size, "loads": chosen}


def _prometheus(loads):
    samples = {}
    for load in loads:
        load = dict(load)
        rank = load.pop("dp_rank")
        for key, value in load.items():
            if isinstance(value, dict):
                prefix = PROM_PREFIXES.get(key, key)
                for sub, sub_value in value.items():
                    if isinstance(sub_value, (int, float)):
                        samples.setdefault("sglang_%s_%s" % (prefix, sub), []).append((rank, sub_value))
            elif isinstance(value, (int, float)):
                samples.setdefault("sglang_%s" % key, []).append((rank, value))
    lines = []
    for name, values in samples.items():
        lines.append("# TYPE %s gauge" % name)
        lines.extend('%s{dp_rank="%s"} %s' % (name, rank, value) for rank, value in values)
    return "\n".join(lines) + "\n"
