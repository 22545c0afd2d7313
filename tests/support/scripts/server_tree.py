"""A server-like process tree on fake GPUs, for gpu_release tests.

The parent takes a server's command line as its title and starts one holder
per worker (children, as SGLang's schedulers are), then prints one JSON line
{"parent": PID, "workers": {title: PID}} once every worker holds its memory,
and waits for a signal.

usage: server_tree.py ROOT TITLE WORKER_SPEC... ; WORKER_SPEC is GPU,MIB,TITLE
"""
import json
import os
import signal
import subprocess
import sys

# A program: tests.support on sys.path
import _bootstrap  # noqa: F401  pylint: disable=unused-import
import setproctitle

from tests.support.paths import SIMCTL

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    root, title, specs = argv[0], argv[1], argv[2:]
    setproctitle.setproctitle(title)
    children = []
    for spec in specs:
        gpu, mib, wtitle = spec.split(",", 2)
        cmd = [sys.executable, SIMCTL, "gpu", "hold", root, "--gpu", gpu, "--mib", mib, "--title", wtitle]
        children.append((wtitle, subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)))
    workers = {}
    for wtitle, child in children:
        line = child.stdout.readline().strip()
        if not line:
            sys.stderr.write("worker %s failed to start\n" % wtitle)
            return 1
        workers[wtitle] = int(line)
    print(json.dumps({"parent": os.getpid(), "workers": workers}), flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
