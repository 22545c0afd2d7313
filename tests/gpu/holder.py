"""A process that holds real GPU memory under a chosen title, for the real-GPU suite.

    python3 holder.py --title 'sglang::scheduler_TP0 gfrun=TOKEN' --gpu 0 --gib 6
    python3 holder.py --title 'python3 -m sglang.launch_server ... gfrun=TOKEN' \
        --child '0,6,sglang::scheduler_TP0 gfrun=TOKEN' --child '0,6,...'

It titles itself with setproctitle (as SGLang's schedulers do), allocates --gib GiB
on GPU --gpu with PyTorch (CUDA_VISIBLE_DEVICES is set to that one GPU before torch
loads), starts its --child holders (never reaping them), prints one JSON line
{"pid": ..., "children": {title: pid}} once every holder is ready, and then sleeps
until killed. --gib 0 without --context never touches CUDA (a server parent).

--backend fake holds memory on the fake GPU kit instead (sim/; FAKE_NVML_ROOT
set), so the suite's own logic can be tried on a machine without a GPU.

--catch-term installs a SIGTERM handler that does nothing (the process lives on;
--ignore-term sets SIG_IGN instead, which gpu_release answers with SIGKILL at once).
--leader-exit ends the main thread (pthread_exit) once the ready line is out, while
another thread keeps the process and its GPU memory: /proc/PID shows a zombie leader
with an empty cmdline, maps and fd list.
"""
import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _sleep_forever():
    while True:
        time.sleep(3600)


def set_title(title):
    try:
        import setproctitle
    except ImportError:
        sys.stderr.write("holder: setproctitle is not installed; carry its wheel "
                         "(setproctitle==1.3.7) or pip install it\n")
        sys.exit(3)
    setproctitle.setproctitle(title)


def hold_torch(gpu, gib, context_only):
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    import torch
    torch.cuda.init()
    keep = []
    if gib > 0:
        nbytes = int(gib * (1 << 30))
        buf = torch.empty(nbytes, dtype=torch.uint8, device="cuda:0")
        buf.fill_(1)  # touch it: the memory is really in use
        keep.append(buf)
    else:
        keep.append(torch.zeros(1, device="cuda:0"))  # a context, ~nothing allocated
    torch.cuda.synchronize()
    return keep


def hold_fake(gpu, gib, context_only):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "sim"))
    from simlib import fakegpu
    return [fakegpu.hold(os.environ["FAKE_NVML_ROOT"], [gpu], int(gib * 1024))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--title", required=True)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--gib", type=float, default=0.0)
    ap.add_argument("--context", action="store_true", help="create a CUDA context even with --gib 0")
    ap.add_argument("--ignore-term", action="store_true")
    ap.add_argument("--catch-term", action="store_true")
    ap.add_argument("--leader-exit", action="store_true")
    ap.add_argument("--nvml-poll", action="store_true",
                    help="no CUDA: poll NVML every 0.5 s, like a monitoring exporter")
    ap.add_argument("--child", action="append", default=[],
                    help="GPU,GIB,TITLE[,ignore-term|,catch-term|,leader-exit] of a child holder to start")
    ap.add_argument("--backend", choices=("torch", "fake"), default=os.environ.get("GF_BACKEND", "torch"))
    args = ap.parse_args()

    set_title(args.title)
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    elif args.catch_term:
        signal.signal(signal.SIGTERM, lambda signum, frame: None)

    kids = []
    for spec in args.child:
        gpu, gib, rest = spec.split(",", 2)
        flags = []
        for flag in ("ignore-term", "catch-term", "leader-exit"):
            if rest.endswith("," + flag):
                rest = rest[: -len(flag) - 1]
                flags.append("--" + flag)
        cmd = [sys.executable, os.path.abspath(__file__), "--title", rest, "--gpu", gpu,
               "--gib", gib, "--backend", args.backend] + flags
        kids.append((rest, subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)))

    held = []
    if args.gib > 0 or args.context:
        held = (hold_torch if args.backend == "torch" else hold_fake)(args.gpu, args.gib, args.context)

    nvml = None
    if args.nvml_poll:
        import pynvml as nvml
        nvml.nvmlInit()

    children = {}
    for title, proc in kids:
        line = proc.stdout.readline()
        if not line:
            sys.stderr.write("holder: child %r died before it was ready\n" % title)
            sys.exit(4)
        children[title] = json.loads(line)["pid"]
    sys.stdout.write(json.dumps({"pid": os.getpid(), "children": children}) + "\n")
    sys.stdout.flush()
    # Children are never waited for: a killed child stays a zombie while we live.
    _keep = (held, kids)  # noqa: F841  keep the memory and the Popen objects alive
    if args.leader_exit:
        # Another thread keeps the process (and `held`) alive; the main thread ends.
        threading.Thread(target=_sleep_forever).start()
        ctypes.CDLL(None).pthread_exit(None)
    while True:
        if nvml is not None:
            for i in range(nvml.nvmlDeviceGetCount()):
                nvml.nvmlDeviceGetMemoryInfo(nvml.nvmlDeviceGetHandleByIndex(i))
            time.sleep(0.5)
        else:
            time.sleep(3600)


if __name__ == "__main__":
    main()
