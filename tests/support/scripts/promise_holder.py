"""Fake-GPU holders for tests/integration/test_release_promises.py.

usage: promise_holder.py MODE ROOT GPU MIB [TITLE] [EXTRA ARGV...]

  plain        hold MIB on GPU, set the title (if given) and wait; prints its PID
  leader-exit  hold, start a thread that keeps running, print the PID, then end the
               main thread only (pthread_exit): /proc/PID shows a zombie leader with an
               empty cmdline while the thread group keeps the GPU memory
  parent       start a `leader-exit` child holding the GPU and wait; prints
               {"pid": ..., "child": ...}
  tree         hold MIB on GPU and start one `plain` child per GPU in EXTRA ARGV, each
               holding MIB there titled sglang::scheduler_TP<gpu>; prints
               {"pid": ..., "children": [...]}
  fork-on-term at SIGTERM fork a child with the same title that holds the GPU 1 s
               later (a respawn the sweep cannot see yet), then exit
With GF_SETUID=UID in the environment, `plain` drops to that user once it holds the memory.
The title comes from TITLE or, when TITLE is '-', from the environment variable GF_TITLE
(so that a wrapper's own command line does not carry it).
"""
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time

# A program: sim/ on sys.path
import _bootstrap  # noqa: F401,E402  pylint: disable=unused-import
from simlib import fakegpu  # noqa: E402


def _sleep_forever():
    while True:
        time.sleep(3600)


def set_title(title):
    if title:
        import setproctitle
        setproctitle.setproctitle(title)


def main():
    mode, root, gpu, mib = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    title = sys.argv[5] if len(sys.argv) > 5 else ""
    if title == "-":
        title = os.environ.get("GF_TITLE", "")
    if mode == "parent":
        set_title(title)
        child = subprocess.Popen([sys.executable, __file__, "leader-exit", root, str(gpu), str(mib),
                                  "sglang::scheduler_TP%d" % gpu],
                                 stdout=subprocess.PIPE, text=True)
        print(json.dumps({"pid": os.getpid(), "child": int(child.stdout.readline())}), flush=True)
        while True:
            signal.pause()
    if mode == "tree":
        set_title(title)
        fakegpu.hold(root, [gpu], mib)
        kids = [subprocess.Popen([sys.executable, __file__, "plain", root, other, str(mib),
                                  "sglang::scheduler_TP%s" % other], stdout=subprocess.PIPE, text=True)
                for other in sys.argv[6:]]
        print(json.dumps({"pid": os.getpid(), "children": [int(k.stdout.readline()) for k in kids]}), flush=True)
        _sleep_forever()
    if mode == "fork-on-term":
        def respawn(_signum, _frame):
            if os.fork() == 0:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                for inherited in list(fakegpu._LIVE):  # pylint: disable=protected-access
                    inherited.close()  # the parent's allocation goes with the parent
                time.sleep(1.0)
                fakegpu.hold(root, [gpu], mib)
                while True:
                    signal.pause()
            os._exit(0)
        signal.signal(signal.SIGTERM, respawn)
    set_title(title)
    fakegpu.hold(root, [gpu], mib)
    if mode == "leader-exit":
        threading.Thread(target=_sleep_forever).start()
        print(os.getpid(), flush=True)
        ctypes.CDLL(None).pthread_exit(None)
    if os.environ.get("GF_SETUID"):
        os.setgid(int(os.environ["GF_SETUID"]))
        os.setuid(int(os.environ["GF_SETUID"]))
    print(os.getpid(), flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
