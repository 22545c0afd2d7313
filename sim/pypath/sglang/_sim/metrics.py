"""/metrics: Prometheus text with SGLang's `sglang:` series (only with --enable-metrics).

Names, help texts and labels as sglang/srt/observability/metrics_collector.py declares them:
the tokenizer's counters carry model_name and engine_type ("unified" outside PD
disaggregation), the token and request counters also is_streaming; the scheduler's gauges
carry model_name, engine_type, tp_rank, pp_rank, moe_ep_rank (one series per TP rank).
"""


def _esc(value):
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels):
    return "{" + ",".join('%s="%s"' % (k, _esc(v)) for k, v in labels.items()) + "}"


def render(stats, model_name, draft_tokens, tp_size=1):
    """draft_tokens: --speculative-num-draft-tokens, 0 without speculation."""
    base = {"model_name": model_name, "engine_type": "unified"}
    out = []

    def family(name, kind, help_, samples):
        out.append("# HELP %s %s" % (name, help_))
        out.append("# TYPE %s %s" % (name, kind))
        for labels, value in samples:
            out.append("%s%s %s" % (name, _labels(**labels), float(value)))

    streams = [(dict(base, is_streaming=flag), row) for flag, row in sorted(stats.finished.items())]
    family("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
           [(labels, row[0]) for labels, row in streams])
    family("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.",
           [(labels, row[1]) for labels, row in streams])
    family("sglang:num_requests_total", "counter", "Number of requests processed.",
           [(labels, row[2]) for labels, row in streams])
    ranks = [dict(base, tp_rank=rank, pp_rank=0, moe_ep_rank=0) for rank in range(tp_size)]
    family("sglang:num_running_reqs", "gauge", "The number of running requests.",
           [(labels, stats.running) for labels in ranks])
    family("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.",
           [(labels, stats.queued) for labels in ranks])
    family("sglang:gen_throughput", "gauge", "The generation throughput (token/s).",
           [(labels, stats.gen_throughput) for labels in ranks])
    if draft_tokens > 0:
        family("sglang:spec_accept_length", "gauge", "Mean acceptance length of speculative decoding "
               "(accepted drafts + bonus token per forward).",
               [(labels, stats.avg_accept_length()) for labels in ranks])
        family("sglang:spec_accept_rate", "gauge", "Speculative acceptance rate (`accepted drafts / "
               "proposed drafts` in batch).",
               [(labels, stats.avg_accept_rate(draft_tokens)) for labels in ranks])
        family("sglang:spec_verify_calls_total", "counter",
               "Number of speculative decoding verification calls.",
               [(base, stats.spec_verify_calls_total)])
    return "\n".join(out) + "\n"
