"""/metrics: Prometheus text with SGLang's `sglang:` series (only with --enable-metrics)."""


def render(stats, model_name, draft_tokens):
    """draft_tokens: --speculative-num-draft-tokens, 0 without speculation."""
    speculative = draft_tokens > 0
    label = '{model_name="%s"}' % model_name.replace("\\", "\\\\").replace('"', '\\"')
    series = [
        ("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
         stats.prompt_tokens_total),
        ("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.",
         stats.generation_tokens_total),
        ("sglang:num_requests_total", "counter", "Number of requests processed.", stats.requests_total),
        ("sglang:num_running_reqs", "gauge", "The number of running requests.", stats.running),
        ("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", stats.queued),
        ("sglang:gen_throughput", "gauge", "The generation throughput (token/s).", stats.gen_throughput),
    ]
    if speculative:
        series += [
            ("sglang:spec_accept_length", "gauge", "The average acceptance length of speculative decoding.",
             stats.avg_accept_length()),
            ("sglang:spec_accept_rate", "gauge", "The average acceptance rate of speculative decoding.",
             stats.avg_accept_rate(draft_tokens)),
            ("sglang:spec_verify_ct_total", "counter", "Number of speculative verify steps.",
             stats.spec_verify_total),
        ]
    out = []
    for name, kind, help_, value in series:
        out.append("# HELP %s %s" % (name, help_))
        out.append("# TYPE %s %s" % (name, kind))
        out.append("%s%s %s" % (name, label, float(value)))
    return "\n".join(out) + "\n"
