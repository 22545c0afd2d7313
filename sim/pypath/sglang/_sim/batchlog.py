"""SGLang's per-batch log lines, written for the neutral engine (_simcore.engine's batch_log).

Emitter: sglang/srt/managers/scheduler_components/metrics_reporter.py (the "Prefill batch"
and "Decode batch" messages, the latter every --decode-log-interval steps, with "accept len"
and "accept rate" when speculative).
"""
from sglang._sim import logs


class BatchLog:
    def prefill(self, new_seqs, new_tokens, usage, running, queued):
        logs.get().info("Prefill batch. #new-seq: %d, #new-token: %d, #cached-token: 0, token usage: "
                        "%.2f, #running-req: %d, #queue-req: %d", new_seqs, new_tokens, usage, running, queued)

    def decode(self, running, tokens, usage, accept, throughput, queued):
        """accept: (mean accept length, accept rate) of the window, or None without speculation."""
        msg = "Decode batch. #running-req: %d, #token: %d, token usage: %.2f, " % (running, tokens, usage)
        if accept is not None:
            msg += "accept len: %.2f, accept rate: %.2f, " % accept
        msg += "cuda graph: True, gen throughput (token/s): %.2f, #queue-req: %d" % (throughput, queued)
        logs.get().info(msg)
