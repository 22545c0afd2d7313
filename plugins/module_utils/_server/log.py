# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Start-up phases and failure causes read from an SGLang or vLLM server log.

No Ansible imports: the rules are plain regular expressions over log lines,
so unit tests can feed them real lines copied from public logs.
"""

from __future__ import annotations

import collections
import datetime
import os
import re
from typing import Any

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

# (flavor or None for both, phase, pattern). First matching rule wins.
# The SGLang and vLLM patterns are built from the format strings of the versions the
# collection is tested against (sglang 0.5.23, vLLM 0.33.0; source files named beside each
# rule); tests/unit/plugins/module_utils/test_server_log_sources.py reads those format
# strings from the installed wheels. Older spellings are kept as alternatives.
_PHASE_RULES = (
    # sglang/srt/distributed/bootstrap.py: "Init parallel begin." (older: "Init torch distributed begin.")
    ("sglang", "init", re.compile(r"Init (?:parallel|torch distributed) begin")),
    # sglang/srt/model_executor/model_runner.py: f"Load weight begin. avail mem=..." / f"Load weight end. "
    ("sglang", "loading_weights", re.compile(r"Load weight begin")),
    ("sglang", "weights_loaded", re.compile(r"Load weight end")),
    # sglang/srt/mem_cache/memory_pool.py: f"{label} KV Cache is allocated. dtype: ..."
    ("sglang", "kv_cache", re.compile(r"KV Cache is allocated")),
    # sglang/srt/model_executor/model_runner_components/cuda_graph_setup.py:
    # f"Capture {target|draft} {decode|verify|prefill} CUDA graph begin." / "... end."
    # (older: "Capture cuda graph begin."); the first begin and the first end count.
    ("sglang", "cuda_graph", re.compile(r"Capture (?:[\w-]+ )*?(?:cuda|CUDA) graph begin")),
    ("sglang", "cuda_graph_done", re.compile(r"Capture (?:[\w-]+ )*?(?:cuda|CUDA) graph end")),
    # sglang/srt/entrypoints/http_server.py: logger.info("The server is fired up and ready to roll!")
    ("sglang", "ready", re.compile(r"The server is fired up and ready to roll")),
    # vLLM 0.33.0 (v1 engine; v0 spellings kept)
    # vllm/v1/engine/core.py: "Initializing a V1 LLM engine (v%s) with config: %s"
    ("vllm", "init", re.compile(r"Initializing an? (?:V1 )?LLM engine")),
    # vllm/v1/worker/gpu_model_runner.py: "Starting to load model %s...", "Model loading took %s GiB ..."
    ("vllm", "loading_weights", re.compile(r"Starting to load model")),
    ("vllm", "weights_loaded", re.compile(r"Loading (?:model )?weights took|Model loading took")),
    # vllm/v1/core/kv_cache_utils.py: "%s KV cache size: %s tokens, ..." (%s: "GPU", ...)
    ("vllm", "kv_cache", re.compile(r"KV cache size: [\d,]+ tokens|# GPU blocks:|# cuda blocks:")),
    # vllm/v1/worker/gpu_model_runner.py: the tqdm bar's desc "Capturing CUDA graphs ({}, {})" (also
    # vllm/v1/worker/gpu/cudagraph_utils.py progress_bar_desc), then "Graph capturing finished in ..."
    ("vllm", "cuda_graph", re.compile(r"Capturing (?:CUDA graph|cudagraphs|the model for CUDA graphs)")),
    ("vllm", "cuda_graph_done", re.compile(r"Graph capturing finished")),
    ("vllm", "engine_ready", re.compile(r"init engine \(profile, create kv cache, warmup model\) took")),
    # vllm/entrypoints/launchers/api_server/entry.py: "Starting vLLM server on %s"
    # (before 0.33: "Starting vLLM API server 0 on ...")
    ("vllm", "http_server", re.compile(r"Starting vLLM (?:API )?server")),
    # vLLM's engine is warm before uvicorn starts: startup complete means /health answers.
    # vllm/entrypoints/launchers/launcher.py serve_http hands uvicorn the socket it bound
    # (server.serve(sockets=[sock])), and uvicorn then skips "Uvicorn running on"
    # (uvicorn/server.py: `if sockets is None: self._log_started_message(...)`); its lifespan
    # still logs "Application startup complete." (uvicorn/lifespan/on.py).
    ("vllm", "ready", re.compile(r"Application startup complete")),
    # uvicorn, used by both
    (None, "http_server", re.compile(r"Uvicorn running on")),
    # sglang/srt/entrypoints/http_server.py (_execute_server_warmup): GET /model_info (older:
    # /get_model_info), then POST /generate, /v1/chat/completions (a model that understands
    # images, e.g. Kimi-K2.5), /encode (an embedding model) or /v1/systemone (a Clef or
    # Kev checkpoint); uvicorn's access log shows them.
    ("sglang", "warmup", re.compile(
        r'"(?:GET /(?:get_)?model_info|POST /(?:generate|encode|v1/chat/completions|v1/systemone)) HTTP')),
)

# Strong markers that tell which server wrote the log (first one seen decides).
_FLAVOR_MARKERS = (
    ("sglang", re.compile(r"Load weight begin|Init parallel begin|server_args=\{|ServerArgs\(|ready to roll"
                          r"|sglang[:./]|\[\d{4}-\d\d-\d\d [\d:]+ (?:DP\d+ )?TP\d+\]")),
    ("vllm", re.compile(r"vLLM|\((?:APIServer|EngineCore\w*|Worker\w*|VllmWorkerProcess) pid=\d+\)|vllm[./]")),
)

# Failure causes, most specific first: an OOM often ends in a later warm-up error.
CAUSES = (
    # vLLM 0.33.0: vllm/v1/core/kv_cache_planning.py "No available memory for the cache blocks.",
    # "... KV cache is needed, which is larger than the available KV cache memory ..."; vllm/v1/worker/
    # utils.py f"Free memory on device {dev} (x/y GiB) on startup is less than desired GPU memory
    # utilization (...)" / "... is less than the engine's budget ..." (memory another process, often an
    # old EngineCore, still holds); vllm/v1/worker/gpu_model_runner.py "CUDA out of memory occurred when
    # warming up sampler ...".
    ("oom", "out of GPU memory", re.compile(
        r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|Not enough memory"
        r"|No available memory for the cache blocks|larger than the available KV cache memory"
        r"|on startup is less than (?:desired GPU memory utilization|the engine's budget)")),
    # SGLang checks its own ports before it starts (sglang/srt/server_args.py, PortArgs:
    # f"Port is already in use. {dist_init_port=} ..." after sglang/srt/utils/network.py
    # wait_port_available: f"{port_name} at {port} is not available in {timeout_s} seconds.").
    ("ports_held", "SGLang's ports are still held, most likely by the previous server on this port "
     "that has not exited yet: stop it and release its GPUs before relaunching "
     "(SGLang waits 30 s for them; SGLANG_WAIT_PORT_TIMEOUT sets that)", re.compile(
         r"Port is already in use\. dist_init_port=|\w+_port at \d+ is not available in \d+ seconds")),
    # vLLM binds its port before the engine starts (vllm/entrypoints/launchers/launcher.py
    # create_server_socket: sock.bind(addr), with SO_REUSEADDR) and dies with Python's
    # "OSError: [Errno 98] Address already in use".
    ("address_in_use", "address already in use (port taken: an old server may still hold it)", re.compile(
        r"address already in use|Errno 98\b|EADDRINUSE", re.IGNORECASE)),
    ("bad_argument", "bad command-line argument", re.compile(
        r"^[\w./-]+(?: [\w./-]+)?: error: ")),  # argparse: "prog: error: msg" ("sglang serve: error: ...")
    # sglang/srt/entrypoints/http_server.py: f"Initialization failed. warmup error: {last_traceback}"
    ("warmup_error", "warm-up request failed", re.compile(r"Initialization failed\. warmup error")),
    # vLLM 0.33.0's engine core (in its own process, VLLM::EngineCore) failed or died; the root cause
    # is logged above these lines, so every more specific cause comes first. vllm/v1/engine/core.py
    # "EngineCore failed to start." / "EngineCore encountered a fatal error."; vllm/v1/engine/utils.py
    # "Engine core initialization failed. See root cause above. Failed core proc(s): {...}";
    # vllm/v1/utils.py f"Engine core process {name} died unexpectedly."; vllm/v1/executor/
    # multiproc_executor.py "Worker proc %s died unexpectedly (exit code: %s), shutting down executor."
    ("engine_failed", "vLLM's engine core failed to start or died (its own error is logged above)", re.compile(
        r"Engine core initialization failed|EngineCore failed to start|EngineCore encountered a fatal error"
        r"|Engine core process \S+ died unexpectedly|Worker proc \S+ died unexpectedly")),
)
_CAUSE_TEXT = dict((kind, text) for kind, text, unused in CAUSES)

# SGLang: "[2025-12-23 14:18:01 TP0] ..."; vLLM: "INFO 05-06 20:59:57 [file.py:1] ..."
_TS_SGLANG = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
_TS_VLLM = re.compile(r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d-\d\d \d\d:\d\d:\d\d)\b")

MAX_LINE = 400  # a returned line is cut here (tqdm bars can be very long)


def clean_line(raw: str) -> str:
    """Last carriage-return segment (what a terminal shows), stripped and cut."""
    text = raw.rstrip("\r\n").split("\r")[-1].rstrip()
    if not text:
        text = raw.strip()
    return text[:MAX_LINE]


def flavor_of_line(line: str) -> str | None:
    for flavor, pattern in _FLAVOR_MARKERS:
        if pattern.search(line):
            return flavor
    return None


def match_phase(line: str, flavor: str | None = None) -> str | None:
    """Phase a line announces, or None. flavor None accepts both servers' rules."""
    for rule_flavor, phase, pattern in _PHASE_RULES:
        if rule_flavor and flavor and rule_flavor != flavor:
            continue
        if pattern.search(line):
            # uvicorn's "Application startup complete" also appears in SGLang logs,
            # where it only means the HTTP server is up.
            if phase == "ready" and rule_flavor == "vllm" and flavor is None:
                return "http_server"
            return phase
    return None


def match_cause(line: str) -> str | None:
    for kind, _text, pattern in CAUSES:
        if pattern.search(line):
            return kind
    return None


def parse_timestamp(line: str) -> Any:
    """datetime of a log line's own timestamp, or None."""
    found = _TS_SGLANG.search(line)
    if found:
        return datetime.datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S")
    found = _TS_VLLM.search(line)
    if found:
        # vLLM omits the year; any fixed leap year keeps offsets right (but across New Year).
        return datetime.datetime.strptime("2000-" + found.group(1), "%Y-%m-%d %H:%M:%S")
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
    """What the log said so far: flavor, first line of each phase and cause, last lines."""

    def __init__(self, flavor: str | None = None, tail_lines: int = 30) -> None:
        self.flavor = flavor
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
        if self.flavor is None:
            self.flavor = flavor_of_line(line)
        cause = match_cause(line)
        if cause and cause not in self.causes:
            self.causes[cause] = line
        name = match_phase(line, self.flavor)
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
