"""The throughput model: how long one engine step takes for a batch of k requests.

Plain decode: step(k) = a + b*k, solved so that one stream gets single_stream_tps and
peak_concurrency streams together get peak_tps (seed: 63.6 and 2,370 tok/s at 128).
EAGLE-3: a step drafts `steps` times with the 1-layer drafter, then verifies
num_draft_tokens per request in one target pass charged like that many decode tokens;
each request then advances by its accepted length. So speculation pays at low k and
costs at high k, where the verify tokens crowd the batch.
"""
from dataclasses import dataclass

DRAFT_FIXED_S = 0.0006  # a 1-layer drafter forward under CUDA graphs
DRAFT_PER_REQ_S = 0.00001


@dataclass
class Model:
    a: float  # seconds a step costs whatever the batch
    b: float  # seconds a step costs per decode token in the batch
    spec_steps: int = 0
    draft_tokens: int = 1

    @property
    def speculative(self):
        return self.spec_steps > 0

    def step_seconds(self, k):
        if k <= 0:
            return 0.0
        if not self.speculative:
            return self.a + self.b * k
        draft = self.spec_steps * (DRAFT_FIXED_S + DRAFT_PER_REQ_S * k)
        return draft + self.a + self.b * k * self.draft_tokens


def calibrate(single_tps, peak_tps, peak_k, spec_steps=0, draft_tokens=1):
    t1 = 1.0 / single_tps
    tk = peak_k / peak_tps
    b = (tk - t1) / (peak_k - 1)
    a = t1 - b
    if a <= 0 or b <= 0:
        raise ValueError("calibration needs peak_tps/peak_k < single_tps < peak_tps")
    return Model(a=a, b=b, spec_steps=spec_steps, draft_tokens=draft_tokens if spec_steps else 1)
