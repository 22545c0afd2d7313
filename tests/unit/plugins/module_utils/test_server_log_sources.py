# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_server_log's rules against the format strings in the installed real sglang (and vLLM).

Each case names the real emitter (file under the package, and a piece of its message); the
test parses that file with `ast`, finds the call whose format string holds the piece, builds a
line from it (placeholders filled with sample values) and asserts the phase or cause rule
matches it. A release that rewords a line fails here, not on a host after a 20-minute load.

Where the packages are: $GPUFLEET_REAL_SGLANG / $GPUFLEET_REAL_VLLM (a directory holding
`sglang/` or `vllm/`, e.g. a `pip install --no-deps --target DIR sglang==0.5.23`), else the
distribution installed in this interpreter, else build/sglang-real (`make setup` installs the
pinned sglang there) or build/vllm-real (`make setup-vllm` unpacks the pinned vLLM wheel's .py
files there, and uvicorn's beside them; optional, so the vLLM cases skip without it). Sources
only: nothing of sglang or vllm is imported.
"""

from __future__ import annotations

import ast
import importlib.metadata
import logging
import os
import re
import socket
import traceback

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import sglang as _sglang
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import patterns as _patterns
from ansible_collections.gpufleet.serving.plugins.module_utils._server import log
from tests.support import real_sources
from tests.support.real_sources import TESTED, package_dir, sources, vllm_sources


def render(node, values):
    """The text a format-string node produces, placeholders filled from VALUES (default "1")."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(part.value)
            else:
                out.append(str(values.get(ast.unparse(part.value), "1")))
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = render(node.left, values), render(node.right, values)
        if left is not None and right is not None:
            return left + right
    return None


def emitted(path, anchor, values=None):
    """Lines built from each call in PATH whose first argument is a format string holding ANCHOR."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        text = render(node.args[0], values or {})
        if text is None or anchor not in text:
            continue
        # printf style (logger.info("... %s ...", arg)): fill with sample values
        lines.append(re.sub(r"%[-+ #0]*\d*(?:\.\d+)?[sdfr]", "1", text))
    assert lines, "no format string with %r in %s: the release changed this line" % (anchor, path)
    return lines


def string_constants(path, function, variable):
    """Every string assigned to VARIABLE inside FUNCTION in PATH."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (func,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function]
    out = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == variable for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                out.append(node.value.value)
    assert out, "%s has no %s assignment in %s" % (function, variable, path)
    return out


CAPTURE = {"capture_name": "target decode", "graph_backend[model_runner.device]": "CUDA graph"}
KV = {"cache_name": "KV Cache",
      "'VA upper bound' if self.post_capture_active else 'is allocated'": "is allocated"}

# (file under sglang/, anchor in its format string, placeholder values, phase)
SGLANG_PHASE_SOURCES = [
    ("srt/distributed/bootstrap.py", "Init parallel begin", None, "init"),
    ("srt/model_executor/model_runner.py", "Load weight begin", None, "loading_weights"),
    ("srt/model_executor/model_runner.py", "Load weight end", None, "weights_loaded"),
    ("srt/mem_cache/memory_pool.py", "dtype: ", KV, "kv_cache"),
    ("srt/model_executor/model_runner_components/cuda_graph_setup.py", "Capture target decode CUDA graph begin",
     CAPTURE, "cuda_graph"),
    ("srt/model_executor/model_runner_components/cuda_graph_setup.py", "Capture target decode CUDA graph end",
     CAPTURE, "cuda_graph_done"),
    ("srt/entrypoints/http_server.py", "The server is fired up and ready to roll", None, "ready"),
]


@pytest.mark.parametrize("relpath, anchor, values, phase", SGLANG_PHASE_SOURCES)
def test_sglang_phase_rule_matches_the_real_format_string(relpath, anchor, values, phase):
    root, _version = sources("sglang")
    for text in emitted(root / relpath, anchor, values):
        line = "[2026-12-03 05:00:00 TP0] " + text
        assert log.match_phase(line, "sglang") == phase, line


def test_sglang_placeholders_used_above_are_the_real_ones():
    """The values filled into the KV-cache and CUDA-graph lines come from the same files."""
    root, _version = sources("sglang")
    pool = (root / "srt/mem_cache/memory_pool.py").read_text()
    assert 'else "KV Cache"' in pool and "'is allocated'}. dtype: " in pool
    setup = (root / "srt/model_executor/model_runner_components/cuda_graph_setup.py").read_text()
    assert 'capture_name = f"{role} decode"' in setup and 'capture_name = f"{role} verify"' in setup
    assert '"cuda": "CUDA graph"' in setup
    line = "[2026-12-03 05:00:00 TP0] Capture target verify CUDA graph begin. backend=full"
    assert log.match_phase(line, "sglang") == "cuda_graph"


def test_sglang_warmup_requests_are_phases():
    """Every request the real warm-up sends, as uvicorn's access log shows it."""
    root, _version = sources("sglang")
    http_server = root / "srt/entrypoints/http_server.py"
    requests = ["POST " + name for name in string_constants(http_server, "_execute_server_warmup", "request_name")]
    assert "POST /v1/chat/completions" in requests and "POST /generate" in requests
    source = http_server.read_text()
    assert 'url + "/model_info"' in source
    for request in ["GET /model_info"] + requests:
        line = '[2026-12-03 05:00:00] INFO:     127.0.0.1:40312 - "%s HTTP/1.1" 200 OK' % request
        assert log.match_phase(line, "sglang") == "warmup", line


@pytest.mark.parametrize("relpath, anchor, cause", [
    ("srt/server_args.py", "Port is already in use", "ports_held"),
    ("srt/utils/network.py", "is not available in", "ports_held"),
    ("srt/entrypoints/http_server.py", "Initialization failed. warmup error", "warmup_error"),
])
def test_sglang_cause_rule_matches_the_real_format_string(relpath, anchor, cause):
    root, _version = sources("sglang")
    for text in emitted(root / relpath, anchor, {"port_name": "dist_init_port", "port": "30001",
                                                 "timeout_s": "30"}):
        assert log.match_cause(text) == cause, text


def test_sglang_port_check_renders_names_as_the_rule_expects():
    """f"{dist_init_port=}" prints `dist_init_port=30001`: the rule keys on that spelling."""
    root, _version = sources("sglang")
    assert "Port is already in use. {dist_init_port=}" in (root / "srt/server_args.py").read_text()
    dist_init_port = 30001
    assert log.match_cause(f"Port is already in use. {dist_init_port=} port_base=30002") == "ports_held"


def test_sglang_engine_marker_of_the_server_args_line():
    root, _version = sources("sglang")
    (text,) = set(emitted(root / "srt/entrypoints/engine.py", "server_args=",
                          {"_server_args_for_logging(server_args)": "{'model_path': '/m'}"}))
    assert log.engine_of_line("[2026-12-03 05:00:00] " + text) == "sglang"


def test_real_killall_patterns_are_the_default_kill_set():
    root, _version = sources("sglang")
    killall = (root / "cli/killall.py").read_text()
    (real,) = re.findall(r'r"(sglang::[^"]*)"', killall)
    assert tuple(real.split("|")) == _sglang.ENGINE.kill_patterns


def test_eagle3_classes_are_the_registered_ones():
    root, _version = sources("sglang")

    def entry_classes(pattern):
        names = set()
        for path in (root / "srt/models").glob(pattern):
            names.update(re.findall(r"^EntryClass = \[(\w+)\]", path.read_text(), re.M))
        return names

    assert entry_classes("*eagle3.py") == set(_sglang.EAGLE3_ARCHITECTURES)
    assert set(_sglang.EAGLE_ARCHITECTURES) <= entry_classes("*_eagle.py")


def test_installed_sglang_is_the_tested_version():
    _root, version = sources("sglang")
    assert version == TESTED["sglang"], "move the tested version (README, roles/sglang_server/vars) with the pin"


def literals(path, anchor, values=None):
    """Every string or f-string in PATH holding ANCHOR, wherever it is (a message assigned to a
    variable, an exception's argument, a tqdm desc), with `{}`, f-string and printf fields filled."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pieces = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    found = []
    for node in ast.walk(tree):
        if id(node) in pieces or not isinstance(node, (ast.Constant, ast.JoinedStr)):
            continue
        text = render(node, values or {})
        if text is not None and anchor in text:
            found.append(re.sub(r"%[-+ #0]*\d*(?:\.\d+)?[sdfr]", "1", text.replace("{}", "1")))
    assert found, "no string with %r in %s: the release changed this line" % (anchor, path)
    return found


# vLLM 0.33.0 prefixes every line of its own loggers (vllm/logger.py _FORMAT):
# "(<process name> pid=N) LEVEL MM-DD HH:MM:SS [file.py:N] message".
VLLM_PREFIX = "(EngineCore pid=1) INFO 12-03 05:00:00 [x.py:1] "

# (file under vllm/, anchor, phase)
VLLM_PHASE_SOURCES = [
    ("v1/engine/core.py", "Initializing a V1 LLM engine", "init"),
    ("v1/worker/gpu_model_runner.py", "Starting to load model", "loading_weights"),
    ("v1/worker/gpu_model_runner.py", "Model loading took", "weights_loaded"),
    ("v1/core/kv_cache_utils.py", "KV cache size: ", "kv_cache"),
    ("v1/worker/gpu_model_runner.py", "Graph capturing finished", "cuda_graph_done"),
    ("v1/engine/core.py", "init engine (profile, create kv cache, warmup model) took", "engine_ready"),
    ("entrypoints/launchers/api_server/entry.py", "Starting vLLM server on", "http_server"),
]


@pytest.mark.parametrize("relpath, anchor, phase", VLLM_PHASE_SOURCES)
def test_vllm_phase_rule_matches_the_real_format_string(relpath, anchor, phase):
    root = vllm_sources()
    for text in emitted(root / relpath, anchor):
        line = VLLM_PREFIX + text.replace("1 KV cache", "GPU KV cache")
        assert log.match_phase(line, "vllm") == phase, line


@pytest.mark.parametrize("relpath", ["v1/worker/gpu_model_runner.py", "v1/worker/gpu/cudagraph_utils.py"])
def test_vllm_cuda_graph_bar_is_the_cuda_graph_phase(relpath):
    """The capture shows as a tqdm bar whose desc (not a logger call) names it."""
    root = vllm_sources()
    for text in literals(root / relpath, "Capturing CUDA graphs"):
        line = "%s: 100%%|##########| 67/67 [00:05<00:00, 12.71it/s]" % text
        assert log.match_phase(line, "vllm") == "cuda_graph", line


def test_vllm_ready_is_uvicorns_startup_complete():
    """vLLM hands uvicorn its bound socket, so uvicorn never says "Uvicorn running on"; its
    lifespan's "Application startup complete." is the last line before /health answers."""
    root = vllm_sources()
    launcher = (root / "entrypoints/launchers/launcher.py").read_text()
    assert "server.serve(sockets=[sock] if sock else None)" in launcher
    uvicorn = root.parent / "uvicorn"
    if not uvicorn.is_dir():
        real_sources.missing("no uvicorn sources beside %s (make setup-vllm unpacks them)" % root)
    assert "if sockets is None:\n            self._log_started_message(listeners)" in (uvicorn / "server.py").read_text()
    (text,) = emitted(uvicorn / "lifespan/on.py", "Application startup complete")
    line = "INFO:     " + text  # uvicorn's default format: "%(levelprefix)s %(message)s"
    assert log.match_phase(line, "vllm") == "ready"
    assert log.match_phase(line, None) == "http_server"  # in an SGLang log it only means HTTP is up


def test_vllm_own_lines_tell_the_engine():
    root = vllm_sources()
    (text,) = literals(root / "entrypoints/common/startup.py", "vLLM server version")
    assert log.engine_of_line("(APIServer pid=1) INFO 12-03 05:00:00 [startup.py:1] " + text) == "vllm"
    (fmt,) = set(literals(root / "logger.py", "(%(vllm_process_name)s", {"envs.VLLM_LOGGING_PREFIX": ""}))
    for name in ("APIServer", "EngineCore_DP0", "Worker_TP3"):
        record = logging.LogRecord("vllm.x", logging.INFO, "x.py", 1, "hello", None, None)
        record.vllm_process_name, record.fileinfo = name, "x.py"
        line = logging.Formatter(fmt, "%m-%d %H:%M:%S").format(record)
        assert line.startswith("(%s pid=%d) INFO " % (name, os.getpid())), line
        assert log.engine_of_line(line) == "vllm", line
        assert log.parse_timestamp(line) is not None, line


# (file under vllm/, anchor in its format string, cause)
VLLM_CAUSE_SOURCES = [
    ("v1/core/kv_cache_planning.py", "No available memory for the cache blocks", "oom"),
    ("v1/core/kv_cache_planning.py", "larger than the available KV cache", "oom"),
    ("v1/worker/utils.py", "is less than desired GPU memory utilization", "oom"),
    ("v1/worker/utils.py", "is less than the engine's budget", "oom"),
    ("v1/worker/gpu_model_runner.py", "CUDA out of memory occurred when warming up sampler", "oom"),
    ("v1/engine/core.py", "EngineCore failed to start", "engine_failed"),
    ("v1/engine/core.py", "EngineCore encountered a fatal error", "engine_failed"),
    ("v1/engine/utils.py", "Engine core initialization failed", "engine_failed"),
    ("v1/utils.py", "died unexpectedly", "engine_failed"),
    ("v1/executor/multiproc_executor.py", "died unexpectedly (exit code", "engine_failed"),
]


@pytest.mark.parametrize("relpath, anchor, cause", VLLM_CAUSE_SOURCES)
def test_vllm_cause_rule_matches_the_real_format_string(relpath, anchor, cause):
    root = vllm_sources()
    values = {"engine_manager.failed_proc_name": "EngineCore_DP0", "init_snapshot.device_": "cuda:0"}
    for text in literals(root / relpath, anchor, values):
        assert log.match_cause(VLLM_PREFIX + text) == cause, text


def test_vllm_memory_advice_is_not_a_cause():
    """gpu_worker.py logs "Free memory on device (...) on startup. Desired GPU memory utilization is
    ..." as advice after a good start: not the start-up failure of worker/utils.py."""
    root = vllm_sources()
    for text in literals(root / "v1/worker/gpu_worker.py", "on startup. Desired GPU memory utilization is"):
        assert log.match_cause(VLLM_PREFIX + text) is None, text


def test_vllm_port_in_use_is_pythons_bind_error():
    """vLLM binds its port itself before the engine starts: the error is Python's own OSError."""
    root = vllm_sources()
    launcher = (root / "entrypoints/launchers/launcher.py").read_text()
    assert "sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)" in launcher and "sock.bind(addr)" in launcher
    with socket.socket() as first, socket.socket() as second:
        first.bind(("127.0.0.1", 0))
        first.listen()
        second.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with pytest.raises(OSError) as raised:
            second.bind(first.getsockname())
    line = "".join(traceback.format_exception_only(raised.value)).strip()
    assert line.startswith("OSError: [Errno 98]"), line
    assert log.match_cause("(APIServer pid=1) " + line) == "address_in_use"


def test_vllm_kill_patterns_match_the_real_titles():
    """set_process_title(name) titles a process f"{prefix}::{name}" with prefix VLLM_PROCESS_NAME_PREFIX,
    "VLLM" by default; the names come from the engine core, workers, API servers and coordinator."""
    root = vllm_sources()
    assert 'setproctitle.setproctitle(f"{prefix}::{name}")' in (root / "utils/system_utils.py").read_text()
    assert '"VLLM_PROCESS_NAME_PREFIX": lambda: os.getenv("VLLM_PROCESS_NAME_PREFIX", "VLLM")' in (
        root / "envs.py").read_text()
    regexes = _patterns.compile_patterns(_patterns.engine_patterns(["vllm"]))
    for name in ("EngineCore", "EngineCore_DP0", "Worker", "Worker_TP3", "APIServer_0", "DPCoordinator"):
        assert _patterns.matches_any(regexes, "VLLM::" + name)


def _not_found(name):
    raise importlib.metadata.PackageNotFoundError(name)


def test_vllm_sources_found_in_build_and_the_variable_overrides(monkeypatch, tmp_path):
    """build/vllm-real (make setup-vllm) is used when present; GPUFLEET_REAL_VLLM wins over it."""
    build = tmp_path / "repo" / "build" / "vllm-real"
    (build / "vllm").mkdir(parents=True)
    (build / "vllm-0.33.0.dist-info").mkdir()
    other = tmp_path / "other"
    (other / "vllm").mkdir(parents=True)
    (other / "vllm" / "_version.py").write_text("__version__ = version = '0.34.0'\n")
    monkeypatch.setattr(importlib.metadata, "distribution", _not_found)
    monkeypatch.setattr(real_sources, "REPO", tmp_path / "repo")
    monkeypatch.delenv("GPUFLEET_REAL_VLLM", raising=False)
    assert package_dir("vllm") == (build / "vllm", "0.33.0")
    monkeypatch.setenv("GPUFLEET_REAL_VLLM", str(other))
    assert package_dir("vllm") == (other / "vllm", "0.34.0")


def test_the_vllm_pin_is_the_tested_version():
    """vLLM cases skip on another version: a pin moved without TESTED would silently skip them all."""
    pins = (real_sources.REPO / "requirements-vllm.txt").read_text()
    assert re.search(r"^vllm==%s$" % re.escape(TESTED["vllm"]), pins, re.M), pins
