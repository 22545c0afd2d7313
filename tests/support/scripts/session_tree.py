"""A tmux-like process: its title holds the launch command, its panes are sessions of their own.

usage: session_tree.py ROOT TITLE SERVER_TITLE SERVER_SPEC... -- GPU,MIB,TITLE
Pane A (setsid) runs server_tree.py with SERVER_TITLE and the server specs; pane B
(setsid) holds GPU with TITLE (another user's training job). Prints one JSON line
{"tmux": PID, "server": {...from server_tree}, "other": PID} and waits for a signal.
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
    split = argv.index("--")
    root, title, server_title, specs = argv[0], argv[1], argv[2], argv[3:split]
    gpu, mib, other_title = argv[split + 1].split(",", 2)
    setproctitle.setproctitle(title)
    pane_a = subprocess.Popen([sys.executable, os.path.join(HERE, "server_tree.py"), root, server_title] + specs,
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    pane_b = subprocess.Popen([sys.executable, SIMCTL, "gpu", "hold", root, "--gpu", gpu, "--mib", mib,
                               "--title", other_title], stdout=subprocess.PIPE, text=True, start_new_session=True)
    server = json.loads(pane_a.stdout.readline())
    other = int(pane_b.stdout.readline())
    print(json.dumps({"tmux": os.getpid(), "server": server, "other": other}), flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
