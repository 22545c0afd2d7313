# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Start-up phases and failure causes read from an inference server's log.

No Ansible imports: the rules are plain regular expressions over log lines (each engine's
in its _engines/ file, beside the source it was built from; the shared ones here), so unit
tests can feed them real lines copied from public logs.
"""

from __future__ import annotations

import collections
import datetime
import os
import re
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._engines.engine import Cause, PhaseRule

# Phases in start-up order. Both servers load weights, size the KV cache and
# capture CUDA graphs before the HTTP server listens (connection refused until then).
PHASES = (
    "init",
    "loading_weights",
    "weights_loaded",
    "kv_cache",
    "cuda_graph",
    "cuda_graph_done",
    "engine_ready",
    "http_server",
    "warmup",
    "ready",
)

# Rules every engine's log shares (the engines' own rules, with the source of each, are in
# _engines/: Engine.phase_rules and Engine.causes).
_SHARED_PHASE_RULES = (
    # uvicorn, used by every engine
    PhaseRule("http_server", re.compile(r"Uvicorn running on")),
)
_SHARED_CAUSES = (
    Cause("oom", "out of GPU memory", re.compile(
        r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|Not enough memory"), 1),
    Cause("bad_argument", "bad command-line argument", re.compile(
        r"^[\w./-]+(?: [\w./-]+)?: error: "), 3),  # argparse: "prog: error: msg" ("ENGINE serve: error: ...")
)


def _phase_rules() -> tuple:
    """(engine name or None for all, PhaseRule): each engine's rules in registry order, then the shared
    ones. First matching rule wins."""
    own = [(engine.name, rule) for engine in _registry.engines() for rule in engine.phase_rules]
    return tuple(own + [(None, rule) for rule in _SHARED_PHASE_RULES])


def _causes() -> tuple:
    """(kind, text, patterns) by rank (then shared before the engines', in registry order); an engine's
    cause of a kind already listed adds its pattern to that kind."""
    listed = sorted(_SHARED_CAUSES + tuple(c for e in _registry.engines() for c in e.causes), key=lambda c: c.rank)
    merged = collections.OrderedDict()
    for cause in listed:
        text, patterns = merged.get(cause.kind, (cause.text, []))
        merged[cause.kind] = (text or cause.text, patterns + [cause.pattern])
    return tuple((kind, text, tuple(patterns)) for kind, (text, patterns) in merged.items())


_PHASE_RULES = _phase_rules()
# Failure causes, most specific first: an OOM often ends in a later warm-up error.
CAUSES = _causes()
_CAUSE_TEXT = dict((kind, text) for kind, text, unused in CAUSES)

MAX_LINE = 400  # a returned line is cut here (tqdm bars can be very long)


def clean_line(raw: str) -> str:
    """Last carriage-return segment (what a terminal shows), stripped and cut."""
    text = raw.rstrip("\r\n").split("\r")[-1].rstrip()
    if not text:
        text = raw.strip()
    return text[:MAX_LINE]


def engine_of_line(line: str) -> str | None:
    """The engine whose marker the line carries (registry order), or None."""
    for engine in _registry.engines():
        if engine.log_marker.search(line):
            return engine.name
    return None


def match_phase(line: str, engine: str | None = None) -> str | None:
    """Phase a line announces, or None. engine None accepts every engine's rules."""
    for rule_engine, rule in _PHASE_RULES:
        if rule_engine and engine and rule_engine != engine:
            continue
        if rule.pattern.search(line):
            return rule.unsure if rule.unsure and engine is None else rule.phase
    return None


def match_cause(line: str) -> str | None:
    for kind, _text, patterns in CAUSES:
        if any(p.search(line) for p in patterns):
            return kind
    return None


def parse_timestamp(line: str) -> Any:
    """datetime of a log line's own timestamp (the first engine format that matches), or None."""
    for engine in _registry.engines():
        pattern, fmt, prefix = engine.log_timestamp
        found = pattern.search(line)
        if found:
            return datetime.datetime.strptime(prefix + found.group(1), fmt)
    return None


def diagnose(causes: dict, exit_code: int | None = None) -> dict:
    """One cause from the first log line of each kind seen and the exit code.

    causes: dict kind -> line. Returns {kind, message, line, exit_code}.
    """
    for kind, text, unused in CAUSES:
        if kind in causes:
            return {"kind": kind, "message": text, "line": causes[kind], "exit_code": exit_code}
    if exit_code == 2:
        # argparse exits with 2; the message may have gone to a stream not in the log.
        return {"kind": "bad_argument", "message": _CAUSE_TEXT["bad_argument"] + " (exit code 2)",
                "line": None, "exit_code": exit_code}
    if exit_code is None:
        message = "exited (exit code unknown)"
    elif exit_code < 0:
        message = "killed by signal %d" % -exit_code
    else:
        message = "exited with code %d" % exit_code
    return {"kind": "exited", "message": message, "line": None, "exit_code": exit_code}


class LogState:
    """What the log said so far: the engine, first line of each phase and cause, last lines."""

    def __init__(self, engine: str | None = None, tail_lines: int = 30) -> None:
        self.engine = engine
        self.phases = []  # dicts: name, at, line, log_offset
        self.causes = {}
        self.tail = collections.deque(maxlen=max(tail_lines, 1))
        self._seen = set()
        self._first_ts = None

    @property
    def phase(self) -> str | None:
        """Latest phase by start-up order (lines of TP ranks interleave)."""
        if not self.phases:
            return None
        return max(self.phases, key=lambda p: PHASES.index(p["name"]))["name"]

    def feed(self, raw: str, at: float) -> dict | None:
        """Take one log line seen `at` seconds after the wait began; return a new phase dict or None."""
        line = clean_line(raw)
        if not line:
            return None
        self.tail.append(line)
        stamp = parse_timestamp(line)
        if stamp is not None and self._first_ts is None:
            self._first_ts = stamp
        if self.engine is None:
            self.engine = engine_of_line(line)
        cause = match_cause(line)
        if cause and cause not in self.causes:
            self.causes[cause] = line
        name = match_phase(line, self.engine)
        if not name or name in self._seen:
            return None
        self._seen.add(name)
        offset = None
        if stamp is not None:
            offset = (stamp - self._first_ts).total_seconds()
        entry = {"name": name, "at": round(at, 3), "line": line, "log_offset": offset}
        self.phases.append(entry)
        return entry


class LogFollower:
    """Reads a growing log file from where it left off, as `tail -F` follows one.

    - Rename-and-reopen rotation (logrotate's default, a relaunch's LOG.1): the path names
      another inode; the old file is read to its end first, then the new one from its start.
    - Truncation in place (logrotate's copytruncate): the file is shorter than the read
      position, or the bytes just before that position are no longer the ones read there
      (the server wrote more than before since the truncation); it is read from the start
      again, so the lines written after the truncation (the cause of a death) are all seen.
      A writer without O_APPEND leaves a hole of NUL bytes before its next line; they are dropped.
    - A log not created yet gives no lines until it appears.
    """

    _CHECK = 64  # bytes kept from just before the read position, to recognise the same content

    def __init__(self, path: str) -> None:
        self.path = path
        self._handle = None
        self._pos = 0
        self._partial = b""
        self._seen = b""

    def _read_rest(self):
        data = self._handle.read()
        self._pos += len(data)
        self._seen = (self._seen + data[-self._CHECK:])[-self._CHECK:]
        return data

    def _rewritten(self):
        """True when the file was truncated under us (smaller, or other bytes before our position)."""
        fd = self._handle.fileno()
        if os.fstat(fd).st_size < self._pos:
            return True
        return bool(self._seen) and os.pread(fd, len(self._seen), self._pos - len(self._seen)) != self._seen

    def _restart(self, handle):
        self._handle, self._pos, self._partial, self._seen = handle, 0, b"", b""

    def read_lines(self, final: bool = False) -> list:
        """New complete lines (str). final=True also returns a last unterminated line."""
        data = b""
        try:
            on_path = os.stat(self.path)
        except OSError:
            on_path = None
        if self._handle is not None and on_path is not None:
            held = os.fstat(self._handle.fileno())
            if (held.st_dev, held.st_ino) != (on_path.st_dev, on_path.st_ino):
                # Rotated by rename: the old file's last lines first; its writer has moved on,
                # so an unterminated last line is complete.
                data = self._partial + self._read_rest()
                if data and not data.endswith(b"\n"):
                    data += b"\n"
                self._handle.close()
                self._restart(None)
        if self._handle is None:
            try:
                self._restart(open(self.path, "rb"))
            except OSError:
                return self._lines(data, final)
        elif self._rewritten():
            self._handle.seek(0)
            self._restart(self._handle)
        data += self._partial + self._read_rest()
        self._partial = b""
        return self._lines(data, final)

    def _lines(self, data, final):
        parts = data.split(b"\n")
        self._partial = parts.pop()
        if final and self._partial:
            parts.append(self._partial)
            self._partial = b""
        return [p.replace(b"\0", b"").decode("utf-8", "replace") for p in parts]

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
