"""/metrics: Prometheus text with SGLang's `sglang:` series (only with --enable-metrics).

Names, help texts and labels as sglang/srt/observability/metrics_collector.py declares them:
the tokenizer's counters carry model_name and engine_type ("unified" outside PD
disaggregation), the token and request counters also is_streaming; the scheduler's gauges
carry model_name, engine_type, tp_rank, pp_rank, moe_ep_rank (TP rank 0's series only).
Written as prometheus_client's multiprocess registry writes them (_simcore.prom).
"""
from _simcore.prom import Exposition


def render(stats, model_name, draft_tokens, tp_size=1):
    """draft_tokens: --speculative-num-draft-tokens, 0 without speculation."""
    base = {"model_name": model_name, "engine_type": "unified"}
    out = Exposition()  # multiprocess mode: no _created series
    streams = [(dict(base, is_streaming=flag), row) for flag, row in sorted(stats.finished.items())]
    out.counter("sglang:prompt_tokens", "Number of prefill tokens processed.",
                [(labels, row[0]) for labels, row in streams])
    out.counter("sglang:generation_tokens", "Number of generation tokens processed.",
                [(labels, row[1]) for labels, row in streams])
    out.counter("sglang:num_requests", "Number of requests processed.",
                [(labels, row[2]) for labels, row in streams])
    # Only the scheduler of attention-TP rank 0 exports (srt/managers/scheduler.py: metrics_enabled
    # needs attn_tp_rank == 0 unless --enable-metrics-for-all-schedulers), so the gauges add up
    # to the server's own count. tp_size is kept for callers; every rank holds the same figure.
    ranks = [dict(base, tp_rank=0, pp_rank=0, moe_ep_rank=0)]
    out.gauge("sglang:num_running_reqs", "The number of running requests.",
              [(labels, stats.running) for labels in ranks])
    out.gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.",
              [(labels, stats.queued) for labels in ranks])
    out.gauge("sglang:gen_throughput", "The generation throughput (token/s).",
              [(labels, stats.gen_throughput) for labels in ranks])
    if draft_tokens > 0:
        out.gauge("sglang:spec_accept_length", "Mean acceptance length of speculative decoding "
                  "(accepted drafts + bonus token per forward).",
                  [(labels, stats.avg_accept_length()) for labels in ranks])
        out.gauge("sglang:spec_accept_rate", "Speculative acceptance rate (`accepted drafts / "
                  "proposed drafts` in batch).",
                  [(labels, stats.avg_accept_rate(draft_tokens)) for labels in ranks])
        out.counter("sglang:spec_verify_calls", "Number of speculative decoding verification calls.",
                    [(base, stats.spec_verify_calls_total)])
    return out.text()
