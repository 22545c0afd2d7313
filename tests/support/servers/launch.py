# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Start standin.py serving at once, as a child of the test (stopped by its own PID)."""
import json
import os
import selectors
import subprocess
import sys
import urllib.request

STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin.py")


class StandIn:
    """standin.py (or another server script of this folder) in a child process; READY <port> on its stdout."""

    def __init__(self, *args, script=STANDIN):
        self.proc = subprocess.Popen([sys.executable, script, "--port", "0"] + list(args),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        ready = sel.select(timeout=10)
        sel.close()
        line = self.proc.stdout.readline().decode() if ready else ""
        if not line.startswith("READY "):
            self.stop()
            raise AssertionError("test server did not start: %r %r" % (line, self.proc.stderr.read()))
        self.port = int(line.split()[1])
        self.url = "http://127.0.0.1:%d" % self.port

    def stats(self, reset=False):
        with urllib.request.urlopen(self.url + "/stats" + ("?reset=1" if reset else ""), timeout=5) as r:
            return json.loads(r.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc.stdout.close()
        self.proc.stderr.close()
