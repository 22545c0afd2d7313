# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers for test_server_wait.py: start the fake server, run the real module, read events."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import time

from tests.support import paths
from tests.support.polling import poll

REPO = pathlib.Path(paths.REPO)
PY = pathlib.Path(paths.PYTHON)
ANSIBLE = pathlib.Path(paths.VENV_BIN) / "ansible"
SERVER = pathlib.Path(paths.SERVERS) / "standin.py"  # with --log: a start-up first
SIM_PYTHON = pathlib.Path(paths.SIM_PYTHON)
SIM_VLLM = pathlib.Path(paths.SIM) / "bin" / "vllm"  # the simulated `vllm` console script
SIM_MODEL = pathlib.Path(paths.SIM_MODELS) / "kimi-k2.5-int4"
_RESULT = re.compile(r"^localhost \| (SUCCESS|FAILED!|CHANGED) => ", re.MULTILINE)


class FakeServer:
    """One tests/support/servers/standin.py process (a start-up: --log) and its files under a test's tmp dir."""

    def __init__(self, procs, tmp, name="srv", **opts):
        self.dir = pathlib.Path(tmp) / name
        self.dir.mkdir()
        self.log = self.dir / "server.log"
        self.events = self.dir / "events.jsonl"
        self.port_file = self.dir / "port"
        self.pidfile = self.dir / "server.pid"
        self.hold_file = self.dir / "go"
        argv = [str(PY), str(SERVER), "--log", str(self.log), "--events", str(self.events),
                "--port-file", str(self.port_file), "--pidfile", str(self.pidfile), "--hold", str(self.hold_file)]
        for key, value in opts.items():
            flag = "--" + key.replace("_", "-")
            if value is True:
                argv.append(flag)
            elif value is not None:
                argv += [flag, str(value)]
        with open(self.log, "ab") as out:  # stdout/stderr into the log, as a launch does
            self.proc = procs.popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.port = opts.get("port")

    @property
    def pid(self):
        return self.proc.pid

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def wait_port(self):
        text = poll(lambda: self.port_file.exists() and self.port_file.read_text().strip(), 10, 0.01,
                    "the fake server's port file")
        self.port = int(text)
        return self.port

    def release(self):
        self.hold_file.write_text("go\n")

    def read_events(self):
        if not self.events.exists():
            return []
        return [json.loads(line) for line in self.events.read_text().splitlines() if line.strip()]

    def event(self, name):
        found = [e for e in self.read_events() if e["event"] == name]
        return found[0] if found else None


def module_argv(args, check=False):
    argv = [str(ANSIBLE), "localhost", "-m", "gpufleet.serving.server_wait", "-a", json.dumps(args),
            "-e", "ansible_python_interpreter=%s" % PY]
    if check:
        argv.append("--check")
    return argv


def module_env():
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_DEPRECATION_WARNINGS="0")
    env.pop("ANSIBLE_STDOUT_CALLBACK", None)  # ad-hoc's minimal callback: "localhost | SUCCESS => {...}"
    return env


def parse_result(stdout):
    found = _RESULT.search(stdout)
    if not found:
        raise AssertionError("no module result in ansible output:\n" + stdout)
    return json.loads(stdout[found.end():].strip())


class ModuleRun:
    """The real module through `ansible localhost -m gpufleet.serving.server_wait`, in the background."""

    def __init__(self, procs, args, check=False):
        self.proc = procs.popen(module_argv(args, check), cwd=str(REPO), env=module_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.stdout = self.stderr = None
        self.ended_at = None

    def finish(self, timeout=120):
        self.stdout, self.stderr = self.proc.communicate(timeout=timeout)
        self.ended_at = time.time()
        self.result = parse_result(self.stdout)
        return self.proc.returncode, self.result


def progress_time(progress_file, marker):
    """Wall-clock time (epoch) of the progress line holding `marker` (lines start HH:MM:SS.mmm)."""
    for line in pathlib.Path(progress_file).read_text().splitlines():
        if marker in line:
            clock = time.strptime(line.split()[0].split(".")[0], "%H:%M:%S")
            millis = int(line.split()[0].split(".")[1])
            today = time.localtime()
            stamp = time.mktime(today[:3] + clock[3:6] + today[6:])
            # a line written just before midnight, read just after
            return stamp + millis / 1000.0 - (86400 if stamp > time.time() + 60 else 0)
    return None


def progress_has(progress_file, marker):
    path = pathlib.Path(progress_file)
    return path.exists() and marker in path.read_text()


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


__all__ = ["FakeServer", "ModuleRun", "median", "progress_has",
           "progress_time"]
