"""/metrics: vLLM 0.33.0's Prometheus series (always on; open without the API key).

Names, help texts and labels from vllm/v1/metrics/loggers.py (PrometheusStatLogger: labels
model_name and engine, the engine index "0") and vllm/v1/spec_decode/metrics.py (the
spec_decode counters, only with a speculative config), written as prometheus_client's
default registry writes them (_simcore.prom: `_total` on the counter's TYPE line, a
`_created` gauge after each counter). vllm:request_success counts finished requests by
finished_reason (loggers.py: one series for each FinishReason, vllm/v1/engine/__init__.py
FINISH_REASON_STRINGS). Imitation: generation/prompt tokens grow when a request
finishes (real: every step); accepted tokens = verify-step tokens minus the bonus token, so
1 + accepted/drafts is the mean accept length (--sim-accept-length). The per-position
counter (vllm:spec_decode_num_accepted_tokens_per_pos) is not simulated.
"""
from _simcore.prom import Exposition

FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")  # FINISH_REASON_STRINGS


def render(app):
    stats = app.engine.stats
    base = {"model_name": app.args.served_names[0], "engine": "0"}
    out = Exposition(created=app.metrics_created)
    prompt = sum(row[0] for row in stats.finished.values())
    out.gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
              [(base, stats.running)])
    out.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", [(base, stats.queued)])
    out.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", [(base, prompt)])
    out.counter("vllm:generation_tokens", "Number of generation tokens processed.",
                [(base, stats.generation_tokens_total)])
    out.counter("vllm:request_success", "Count of successfully processed requests.",
                [(dict(base, finished_reason=r), stats.by_reason.get(r, 0)) for r in FINISH_REASONS])
    k = app.spec_tokens()
    if app.args.spec:
        drafts = stats.spec_verify_total
        out.counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", [(base, drafts)])
        out.counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", [(base, drafts * k)])
        out.counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
                    [(base, stats.spec_accepted_total - drafts)])
    return out.text()
