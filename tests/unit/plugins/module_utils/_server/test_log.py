# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Phases and causes from real SGLang and vLLM log lines (copied from public issue threads)."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._server import log

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


def test_startup_complete_without_flavor_is_only_http():
    assert log.match_phase("INFO:     Application startup complete.", None) == "http_server"


@pytest.mark.parametrize("line,flavor", [
    ("[2025-12-23 14:18:01] Load weight begin. avail mem=46.81 GB", "sglang"),
    ("[2026-06-08 07:20:53 TP0] Memory pool end. avail mem=12.05 GB", "sglang"),
    ("(EngineCore_DP0 pid=441) INFO 11-24 11:43:54 [gpu_model_runner.py:3341] Model loading took 2.0513 GiB", "vllm"),
    ("(APIServer pid=1391815) INFO 08-19 14:58:41 [api_server.py:1639] Supported_tasks: ['generate']", "vllm"),
    ("[2026-12-03 05:00:00] server_args={'model_path': '/models/kimi-k2.5', 'tp_size': 8}", "sglang"),
    ("[2026-12-03 05:00:01 TP0] Init parallel begin.", "sglang"),
    ("Loading safetensors checkpoint shards: 100% Completed | 9/9 [00:29<00:00,  3.28s/it]", None),
])
def test_detect_flavor(line, flavor):
    assert log.flavor_of_line(line) == flavor


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
    assert state.flavor == "sglang"
    assert state.phase == "cuda_graph"
    assert state.causes == {"oom": lines[4]}
    assert list(state.tail) == lines[2:]


def test_state_phase_is_latest_by_startup_order():
    state = log.LogState(flavor="sglang")
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
