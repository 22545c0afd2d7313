# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_server/log.py: phases and causes from real SGLang and vLLM log lines (copied from public issue
threads); LogFollower on logs that logrotate moves under it (copytruncate, rename-and-reopen, late
creation); the rules against the format strings in the installed real sglang (and vLLM).

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
import shutil
import socket
import traceback

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import sglang as _sglang
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import patterns as _patterns
from ansible_collections.gpufleet.serving.plugins.module_utils._server import log
from ansible_collections.gpufleet.serving.plugins.module_utils._server.log import LogFollower
from tests.support import real_sources
from tests.support.real_sources import TESTED, package_dir, sources, vllm_sources

SGLANG_PHASES = [
    ("[2025-12-23 14:18:00] Init torch distributed begin.", "init"),
    ("[2025-12-23 14:18:01] Load weight begin. avail mem=46.81 GB", "loading_weights"),
    ("[2025-07-02 07:41:58 DP0 TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
     "avail mem=21.73 GB, mem usage=166.59 GB.", "weights_loaded"),
    ("[2025-11-30 12:50:10] KV Cache is allocated. #tokens: 2243474, K size: 59.91 GB, V size: 59.91 GB", "kv_cache"),
    ("[2026-07-01 15:19:55 TP10] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 387968, K size: 5.92 GB, "
     "V size: 5.92 GB", "kv_cache"),
    ("[2025-10-16 09:06:22 TP7] Capture cuda graph begin. This can take up to several minutes. avail mem=12.01 GB",
     "cuda_graph"),
    ("[2025-11-10 19:59:09 TP1] Capture cuda graph end. Time elapsed: 11.35 s. mem usage=1.04 GB. "
     "avail mem=11.22 GB.", "cuda_graph_done"),
    ("[2025-09-03 18:30:01] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)", "http_server"),
    ('[2025-09-03 18:30:02] INFO:     127.0.0.1:40312 - "GET /get_model_info HTTP/1.1" 200 OK', "warmup"),
    ('[2025-09-03 18:30:02] INFO:     127.0.0.1:40314 - "POST /generate HTTP/1.1" 200 OK', "warmup"),
    ("[2025-09-03 18:30:04] The server is fired up and ready to roll!", "ready"),
    # sglang 0.5.23 (the version the collection is tested against)
    ("[2026-12-03 05:00:01 TP0] Init parallel begin.", "init"),
    ("[2026-12-03 05:00:02 TP3] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 387968, KV size: 5.92 GB",
     "kv_cache"),
    ("[2026-12-03 05:00:03 TP0] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, "
     "avail mem=12.01 GB", "cuda_graph"),
    ("[2026-12-03 05:00:03 TP0] Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, "
     "avail mem=12.01 GB", "cuda_graph"),
    ("[2026-12-03 05:00:09 TP1] Capture target decode CUDA graph end. bs=[1, 2, 4, 8], elapsed=11.35 s, "
     "mem usage=1.04 GB, avail mem=11.22 GB.", "cuda_graph_done"),
    ("[2026-12-03 05:00:10 TP0] Capture draft decode CUDA graph end. elapsed=2.00 s, mem usage=0.20 GB, "
     "avail mem=11.02 GB.", "cuda_graph_done"),
    ('[2026-12-03 05:00:12] INFO:     127.0.0.1:40312 - "GET /model_info HTTP/1.1" 200 OK', "warmup"),
    # Kimi-K2.5 reads images: its warm-up is a chat request (http_server.py _execute_server_warmup)
    ('[2026-12-03 05:00:12] INFO:     127.0.0.1:40316 - "POST /v1/chat/completions HTTP/1.1" 200 OK', "warmup"),
    ('[2026-12-03 05:00:12] INFO:     127.0.0.1:40318 - "POST /encode HTTP/1.1" 200 OK', "warmup"),
    # a user's chat request is no warm-up once the server is ready; before, it cannot reach it
    ("[2026-12-03 05:00:02 TP0] Memory pool end. avail mem=12.05 GB", None),
    # uvicorn's startup line means only "HTTP is up" in an SGLang log
    ("[2025-09-03 18:30:01] INFO:     Application startup complete.", None),
    ("[2025-09-03 18:33:19 TP0] Decode batch. #running-req: 1, #token: 137, token usage: 0.00, cuda graph: True, "
     "gen throughput (token/s): 1.06, #queue-req: 0, ", None),
]

VLLM_PHASES = [
    ("INFO 10-07 22:54:54 llm_engine.py:226] Initializing an LLM engine (v0.6.1.dev238+ge2c6e0a82) with config: "
     "model='meta-llama/Llama-3.2-3B-Instruct'", "init"),
    ("INFO 10-07 22:54:57 model_runner.py:1014] Starting to load model meta-llama/Llama-3.2-3B-Instruct...",
     "loading_weights"),
    ("(Worker_TP0 pid=34322) INFO 05-06 20:59:57 [default_loader.py:384] Loading weights took 24.84 seconds",
     "weights_loaded"),
    ("(VllmWorkerProcess pid=6923) INFO 07-17 23:41:16 model_runner.py:559] Loading model weights took 6.1138 GB",
     "weights_loaded"),
    ("(EngineCore pid=1265223) INFO 06-02 00:51:40 [model_runner.py:295] Model loading took 7.64 GiB and "
     "32.969258 seconds", "weights_loaded"),
    ("(EngineCore_DP0 pid=188893) INFO 10-21 09:11:57 [kv_cache_utils.py:1087] GPU KV cache size: 425,424 tokens",
     "kv_cache"),
    ("INFO 07-17 23:41:28 distributed_gpu_executor.py:56] # GPU blocks: 10039, # CPU blocks: 1310", "kv_cache"),
    ("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|####| 67/67 [00:04<00:00, 15.18it/s]",
     "cuda_graph"),
    ("INFO 07-17 23:41:30 model_runner.py:847] Capturing the model for CUDA graphs. This may lead to unexpected "
     "consequences if the model is not static.", "cuda_graph"),
    ("(EngineCore_DP0 pid=188893) INFO 10-21 09:12:04 [gpu_model_runner.py:3480] Graph capturing finished in "
     "7 secs, took 0.95 GiB", "cuda_graph_done"),
    ("(EngineCore_DP0 pid=188893) INFO 10-21 09:12:04 [core.py:210] init engine (profile, create kv cache, "
     "warmup model) took 25.99 seconds", "engine_ready"),
    ("(APIServer pid=188747) INFO 10-21 09:12:15 [api_server.py:1885] Starting vLLM API server 0 on "
     "http://0.0.0.0:8000", "http_server"),
    # vLLM 0.33.0: vllm/entrypoints/launchers/api_server/entry.py "Starting vLLM server on %s"
    ("(APIServer pid=188747) INFO 12-03 05:00:15 [entry.py:139] Starting vLLM server on http://127.0.0.1:8000",
     "http_server"),
    ("(EngineCore pid=188893) INFO 12-03 05:00:05 [kv_cache_utils.py:1147] GPU KV cache size: 1,234,432 tokens, "
     "Maximum concurrency for 131,072 tokens per request: 9.42x", "kv_cache"),
    ("(EngineCore pid=188893) INFO 12-03 05:00:01 [core.py:140] Initializing a V1 LLM engine (v0.33.0) with "
     "config: model='/models/glm-5'", "init"),
    ("(APIServer pid=188747) INFO:     Application startup complete.", "ready"),
    ("(EngineCore_DP0 pid=188893) INFO 10-21 09:11:56 [monitor.py:34] torch.compile takes 7.14 s in total", None),
]


@pytest.mark.parametrize("line,phase", SGLANG_PHASES)
def test_sglang_phase(line, phase):
    assert log.match_phase(line, "sglang") == phase


@pytest.mark.parametrize("line,phase", VLLM_PHASES)
def test_vllm_phase(line, phase):
    assert log.match_phase(line, "vllm") == phase


def test_startup_complete_without_an_engine_is_only_http():
    assert log.match_phase("INFO:     Application startup complete.", None) == "http_server"


@pytest.mark.parametrize("line,engine", [
    ("[2025-12-23 14:18:01] Load weight begin. avail mem=46.81 GB", "sglang"),
    ("[2026-06-08 07:20:53 TP0] Memory pool end. avail mem=12.05 GB", "sglang"),
    ("(EngineCore_DP0 pid=441) INFO 11-24 11:43:54 [gpu_model_runner.py:3341] Model loading took 2.0513 GiB", "vllm"),
    ("(APIServer pid=1391815) INFO 08-19 14:58:41 [api_server.py:1639] Supported_tasks: ['generate']", "vllm"),
    ("[2026-12-03 05:00:00] server_args={'model_path': '/models/kimi-k2.5', 'tp_size': 8}", "sglang"),
    ("[2026-12-03 05:00:01 TP0] Init parallel begin.", "sglang"),
    ("Loading safetensors checkpoint shards: 100% Completed | 9/9 [00:29<00:00,  3.28s/it]", None),
])
def test_engine_of_line(line, engine):
    assert log.engine_of_line(line) == engine


CAUSE_LINES = [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a total capacity of "
     "95.59 GiB of which 1.12 GiB is free.", "oom"),
    ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", "oom"),
    ("ERROR 11-18 18:07:28 engine.py:366] ValueError: No available memory for the cache blocks. Try increasing "
     "`gpu_memory_utilization` when initializing the engine.", "oom"),
    ("RuntimeError: CUDA error: out of memory", "oom"),
    ("ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use",
     "address_in_use"),
    ("OSError: [Errno 98] Address already in use", "address_in_use"),
    ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
     "port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use", "address_in_use"),
    ("launch_server.py: error: argument --tp-size/--tensor-parallel-size: invalid int value: 'eight'",
     "bad_argument"),
    ("vllm serve: error: unrecognized arguments: --tp-szie 8", "bad_argument"),
    ("[2026-09-14 23:19:59] Initialization failed. warmup error: Traceback (most recent call last):",
     "warmup_error"),
    # sglang 0.5.23's own port check on a relaunch while the old server holds its ports
    # (srt/server_args.py PortArgs, srt/utils/network.py wait_port_available)
    ("[2026-12-03 05:01:40] Port is already in use. dist_init_port=30001 port_base=30002 detokenizer_port=30003 "
     "nccl_port=30004 scheduler_input_port=30005", "ports_held"),
    ("ValueError: dist_init_port at 30001 is not available in 30 seconds. dist_init_port is used by a process "
     "already. process.name()='python3' process.cmdline()=['python3'] process.status()='sleeping' pid=4242",
     "ports_held"),
    ("sglang serve: error: unrecognized arguments: --cuda-graph-max-bs 8", "bad_argument"),
    # vLLM's advice line in a healthy start-up is no OOM
    ("INFO 07-17 23:41:30 model_runner.py:851] CUDA graphs can take additional 1~3 GiB memory per GPU. If you are "
     "running out of memory, consider decreasing `gpu_memory_utilization` or enforcing eager mode.", None),
    ("RuntimeError: Error in fetch_model_info", None),
]


@pytest.mark.parametrize("line,kind", CAUSE_LINES)
def test_match_cause(line, kind):
    assert log.match_cause(line) == kind


@pytest.mark.parametrize("causes,exit_code,kind,message", [
    ({}, 3, "exited", "exited with code 3"),
    ({}, -9, "exited", "killed by signal 9"),
    ({}, None, "exited", "exited (exit code unknown)"),
    ({}, 2, "bad_argument", "bad command-line argument (exit code 2)"),
    ({"warmup_error": "w", "oom": "o"}, -9, "oom", "out of GPU memory"),
    ({"warmup_error": "w", "address_in_use": "a"}, 1, "address_in_use", None),
    ({"warmup_error": "w"}, -9, "warmup_error", "warm-up request failed"),
    ({"ports_held": "p", "address_in_use": "a"}, 1, "ports_held", None),
    # vLLM: the engine core's root cause (logged first) names the failure, not its epilogue
    ({"engine_failed": "e", "oom": "o"}, 1, "oom", "out of GPU memory"),
    ({"engine_failed": "e", "address_in_use": "a"}, 1, "address_in_use", None),
    ({"engine_failed": "e"}, 1, "engine_failed", "vLLM's engine core failed to start or died (its own error is logged above)"),
])
def test_diagnose_precedence(causes, exit_code, kind, message):
    cause = log.diagnose(causes, exit_code)
    assert cause["kind"] == kind
    assert cause["exit_code"] == exit_code
    if message:
        assert cause["message"] == message
    assert cause["line"] == causes.get(kind)


@pytest.mark.parametrize("line,expected", [
    ("[2025-12-23 14:18:01 TP0] Load weight begin.", (2025, 12, 23, 14, 18, 1)),
    ("(EngineCore pid=1) INFO 06-02 00:51:39 [default_loader.py:397] Loading", (2000, 6, 2, 0, 51, 39)),
    ("Loading safetensors checkpoint shards:  25% Completed", None),
])
def test_parse_timestamp(line, expected):
    stamp = log.parse_timestamp(line)
    assert (stamp.timetuple()[:6] if stamp else None) == expected


def test_clean_line_keeps_last_tqdm_frame():
    raw = "Capturing batches:  10%|#  | 1/10\rCapturing batches: 100%|###| 10/10\r\n"
    assert log.clean_line(raw) == "Capturing batches: 100%|###| 10/10"
    assert len(log.clean_line("x" * 5000)) == log.MAX_LINE


def test_state_records_first_of_each_phase_with_offsets():
    state = log.LogState(tail_lines=3)
    lines = [
        "[2025-10-16 09:06:00 TP0] Load weight begin. avail mem=80 GB",
        "[2025-10-16 09:06:00 TP1] Load weight begin. avail mem=80 GB",
        "[2025-10-16 09:06:20 TP1] Load weight end. type=X",
        "[2025-10-16 09:06:22 TP0] Capture cuda graph begin. This can take up to several minutes.",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    ]
    for i, line in enumerate(lines):
        state.feed(line + "\n", at=float(i))
    assert [p["name"] for p in state.phases] == ["loading_weights", "weights_loaded", "cuda_graph"]
    assert [p["log_offset"] for p in state.phases] == [0.0, 20.0, 22.0]
    assert [p["at"] for p in state.phases] == [0.0, 2.0, 3.0]
    assert state.engine == "sglang"
    assert state.phase == "cuda_graph"
    assert state.causes == {"oom": lines[4]}
    assert list(state.tail) == lines[2:]


def test_state_phase_is_latest_by_startup_order():
    state = log.LogState(engine="sglang")
    state.feed("[2025-10-16 09:06:22 TP0] Capture cuda graph begin.", 1.0)
    state.feed("[2025-10-16 09:06:22 TP1] Load weight end. type=X", 1.0)  # a slower rank
    assert state.phase == "cuda_graph"


def test_follower_reads_increments_partial_lines_and_truncation(tmp_path):
    path = tmp_path / "server.log"
    follower = log.LogFollower(str(path))
    assert follower.read_lines() == []  # not created yet
    path.write_bytes(b"one\ntw")
    assert follower.read_lines() == ["one"]
    with path.open("ab") as handle:
        handle.write(b"o\nthree")
    assert follower.read_lines() == ["two"]
    assert follower.read_lines(final=True) == ["three"]
    path.write_bytes(b"new\n")  # a relaunch truncated the log
    assert follower.read_lines() == ["new"]


def test_ports_held_message_says_what_to_do():
    cause = log.diagnose({"ports_held": "dist_init_port at 30001 is not available in 30 seconds."}, 1)
    assert cause["kind"] == "ports_held"
    assert "previous server" in cause["message"] and "release its GPUs" in cause["message"]


START = "".join("[2026-05-01 12:00:0%d] start-up line %d of the server\n" % (i, i) for i in range(4))
CRASH = ["Traceback (most recent call last):",
         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
         "95.59 GiB of which 1.12 GiB is free.",
         "[2026-05-01 12:00:09] Received sigquit from a child process. It usually means the child failed."]


def test_copytruncate_then_more_than_before_is_read_from_the_start(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(START)
    follow = LogFollower(str(log))
    assert len(follow.read_lines()) == 4
    shutil.copy(str(log), str(log) + ".1")  # logrotate copytruncate: copy, then truncate in place
    os.truncate(str(log), 0)
    with open(str(log), "a") as writer:  # the server's O_APPEND writes land at the new end
        writer.write("\n".join(CRASH) + "\n")
    assert os.path.getsize(str(log)) > len(START)  # the size alone does not show the truncation
    assert follow.read_lines() == CRASH


def test_copytruncate_under_a_writer_without_append_skips_the_hole(tmp_path):
    log = tmp_path / "server.log"
    writer = open(str(log), "w")  # `> log`: the writer keeps its own offset
    writer.write(START)
    writer.flush()
    follow = LogFollower(str(log))
    assert len(follow.read_lines()) == 4
    os.truncate(str(log), 0)
    writer.write("\n".join(CRASH) + "\n")  # lands at the old offset: a hole of NUL bytes before it
    writer.close()
    assert follow.read_lines() == CRASH


def test_rename_rotation_keeps_the_old_files_unread_lines(tmp_path):
    log = tmp_path / "server.log"
    with open(str(log), "a") as writer:
        writer.write(START)
        writer.flush()
        follow = LogFollower(str(log))
        assert len(follow.read_lines()) == 4
        writer.write("last line before the rotation\n")
        writer.flush()
        os.rename(str(log), str(log) + ".1")
    log.write_text("\n".join(CRASH) + "\n")
    assert follow.read_lines() == ["last line before the rotation"] + CRASH


def test_shrunk_and_late_created_logs(tmp_path):
    log = tmp_path / "server.log"
    follow = LogFollower(str(log))
    assert follow.read_lines() == []
    log.write_text(START)
    assert len(follow.read_lines()) == 4
    log.write_text("relaunch\n")
    assert follow.read_lines() == ["relaunch"]


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
