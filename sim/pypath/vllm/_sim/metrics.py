"""/metrics: vLLM 0.33.0's Prometheus series (always on; open without the API key).

Names, help texts and labels from vllm/v1/metrics/loggers.py (PrometheusStatLogger: labels
model_name and engine, the engine index "0") and vllm/v1/spec_decode/metrics.py (the
spec_decode counters, only with a speculative config). Counters carry `_total` as
prometheus_client writes them. Imitation: generation/prompt tokens grow when a request
finishes (real: every step); accepted tokens = verify-step tokens minus the bonus token, so
1 + accepted/drafts is the mean accept length (--sim-accept-length). The per-position
counter (vllm:spec_decode_num_accepted_tokens_per_pos) is not simulated.
"""


def _labels(**labels):
    return "{" + ",".join('%s="%s"' % (k, str(v).replace('"', '\\"')) for k, v in labels.items()) + "}"


def render(app):
    stats = app.engine.stats
    base = {"model_name": app.args.served_names[0], "engine": "0"}
    out = []

    def family(name, kind, help_, value):
        out.append("# HELP %s %s" % (name, help_))
        out.append("# TYPE %s %s" % (name, kind))
        suffix = "_total" if kind == "counter" else ""
        out.append("%s%s%s %s" % (name, suffix, _labels(**base), float(value)))

    prompt = sum(row[0] for row in stats.finished.values())
    family("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", stats.running)
    family("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", stats.queued)
    family("vllm:prompt_tokens", "counter", "Number of prefill tokens processed.", prompt)
    family("vllm:generation_tokens", "counter", "Number of generation tokens processed.",
           stats.generation_tokens_total)
    k = app.spec_tokens()
    if app.args.spec:
        drafts = stats.spec_verify_total
        family("vllm:spec_decode_num_drafts", "counter", "Number of spec decoding drafts.", drafts)
        family("vllm:spec_decode_num_draft_tokens", "counter", "Number of draft tokens.", drafts * k)
        family("vllm:spec_decode_num_accepted_tokens", "counter", "Number of accepted tokens.",
               stats.spec_accepted_total - drafts)
    return "\n".join(out) + "\n"
