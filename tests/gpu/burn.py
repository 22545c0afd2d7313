"""A GPU load of known duration for the real-GPU suite's telemetry case.

    python3 burn.py --title 'burn gfrun=TOKEN' --gpu 0 --seconds 8

It titles itself (setproctitle), waits until PyTorch has a context on --gpu
(CUDA_VISIBLE_DEVICES set to that one GPU before torch loads), prints one JSON line
{"pid": ..., "start": perf_counter} when the load begins, runs back-to-back bf16
matrix products for --seconds, synchronises, prints {"end": perf_counter} and exits.
perf_counter is CLOCK_MONOTONIC, the clock the telemetry sampler stamps its samples with.
"""
import argparse
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--title", required=True)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--size", type=int, default=8192)
    args = ap.parse_args()
    import setproctitle
    setproctitle.setproctitle(args.title)
    os.environ["CUDA_VISIBLE_DEVICES"] = str(args.gpu)
    import torch
    a = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    start = time.perf_counter()
    print(json.dumps({"pid": os.getpid(), "start": start}), flush=True)
    while time.perf_counter() - start < args.seconds:
        for unused in range(20):
            a = torch.matmul(a, b)
            a = a / a.abs().amax()  # keeps the values finite
        torch.cuda.synchronize()
    print(json.dumps({"end": time.perf_counter()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
