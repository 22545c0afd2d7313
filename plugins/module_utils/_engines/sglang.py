# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SGLang, as the collection is tested against it (sglang 0.5.23; source files named beside each fact).

tests/unit/plugins/module_utils/_server/test_log.py reads the log format strings and
the kill set from the installed wheel; tests/sim/test_argv_corpus.py parses the command
lines with its own parser.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as _spec
from ansible_collections.gpufleet.serving.plugins.module_utils._engines.engine import (
    AcceptLength,
    Cause,
    Engine,
    InFlight,
    compile_rule,
)
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput

# The EAGLE-3 draft classes sglang 0.5.23 registers (EntryClass in sglang/srt/models/):
# llama_eagle3.py and kimi_k25_eagle3.py. SGLang loads a drafter by its config's
# `architectures`, so any other name fails only after the target's long load.
EAGLE3_ARCHITECTURES = ("LlamaForCausalLMEagle3", "Eagle3DeepseekV2ForCausalLM")
# Its EAGLE-1/2 draft classes (llama_eagle.py, qwen2_eagle.py, mistral_eagle.py,
# mistral_large_3_eagle.py): drafters for --speculative-algorithm EAGLE, not EAGLE3.
EAGLE_ARCHITECTURES = ("LlamaForCausalLMEagle", "Qwen2ForCausalLMEagle", "MistralForCausalLMEagle",
                       "MistralLarge3ForCausalLMEagle")


def check_architectures(archs: list) -> None:
    """Refuse a drafter whose architectures SGLang does not load as an EAGLE-3 draft model."""
    if any(a in EAGLE3_ARCHITECTURES for a in archs):
        return
    expected = " or ".join(EAGLE3_ARCHITECTURES)
    older = [a for a in archs if a in EAGLE_ARCHITECTURES]
    if older:
        raise InvalidInput("drafter architectures=%s is an EAGLE-1/2 drafter, not an EAGLE-3 one: SGLang's "
                           "--speculative-algorithm EAGLE3 needs a drafter trained for EAGLE-3 (architectures %s); "
                           "use an EAGLE-3 drafter for this target, or run this one with "
                           "--speculative-algorithm EAGLE" % (archs, expected))
    raise InvalidInput("drafter architectures=%s is not an EAGLE-3 architecture SGLang registers "
                       "(expected %s)" % (archs, expected))


# The algorithms sglang 0.5.23 builds in: SpeculativeAlgorithm.from_string upper-cases the
# name and takes a member of the enum (sglang/srt/speculative/spec_info.py; NONE means none)
# or an alias in _RESERVED_ALIASES, NEXTN for EAGLE (sglang/srt/speculative/spec_registry.py).
# A name a plugin registers (SpeculativeAlgorithm.register) is not known here: pass it in
# speculative_args, which are not checked. tests/unit/plugins/module_utils/_engines/test_sglang.py
# reads the list from the wheel.
SPECULATIVE_ALGORITHMS = ("DFLASH", "UNO", "DSPARK", "EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE", "NGRAM",
                          "NEXTN")


def speculative_method(algorithm: str) -> str:
    """SGLang compares the algorithm upper-cased (eagle3 is EAGLE3)."""
    return algorithm.upper()


def speculative_options(spec: dict) -> dict:
    """--speculative-algorithm ALG --speculative-draft-model-path DRAFTER, and the three numbers
    when num_steps is set (null leaves SGLang's own choice of all three)."""
    args = ["--speculative-algorithm", spec["algorithm"], "--speculative-draft-model-path", spec["draft_model_path"]]
    if spec.get("num_steps") is not None:
        args += ["--speculative-num-steps", str(spec["num_steps"]),
                 "--speculative-eagle-topk", str(spec.get("eagle_topk")),
                 "--speculative-num-draft-tokens", str(spec.get("num_draft_tokens"))]
    return {"speculative_args": args}


def speculative_numbers(spec: dict) -> dict:
    return {"num_steps": spec.get("num_steps"), "eagle_topk": spec.get("eagle_topk"),
            "num_draft_tokens": spec.get("num_draft_tokens")}


ENGINE = Engine(
    name="sglang",
    title="SGLang",
    server_role=True,
    # The pin in requirements-sglang.txt.
    tested_version="0.5.23",
    package="sglang",
    module="sglang",
    # `sglang serve`: the entry point sglang 0.5.23 recommends (sglang/launch_server.py warns
    # that `python -m sglang.launch_server` is only still supported).
    console_script="sglang",
    default_port=30000,
    model_flag="--model-path",
    # Its flags, one per server setting: the server spec table (_engines/settings.py) holds them.
    option_flags=_spec.option_flags("sglang"),
    # Real SGLang prints the key in its server_args= line (srt/entrypoints/engine.py).
    log_redactor=True,
    speculative_options=speculative_options,
    speculative_numbers=speculative_numbers,
    check_drafter=check_architectures,
    speculative_methods=SPECULATIVE_ALGORITHMS,
    speculative_method=speculative_method,
    speculative_config_option=None,
    # SGLang's own kill set (sglang 0.5.23: sglang/cli/killall.py, which also matches the
    # `sglang serve` entry point; older: scripts/killall_sglang.sh).
    kill_patterns=(r"sglang::", r"sglang\.launch_server", r"sglang\.bench",
                   r"sglang\.data_parallel", r"sglang\.srt", r"sgl_diffusion::", r"sglang serve"),
    # Schedulers retitle themselves with setproctitle: `_TP{n}` only when tp > 1, `_DP`/`_PP`/`_EP`
    # parts when used (srt/managers/scheduler.py).
    process_titles=("/venv/bin/python3 /venv/bin/sglang serve --model-path /models/m",
                    "python3 -m sglang.launch_server --model-path /models/m", "sglang::scheduler",
                    "sglang::scheduler_TP0", "sglang::scheduler_DP0_TP7", "sglang::detokenizer",
                    "sglang::data_parallel_controller"),
    phase_rules=(
        # sglang/srt/distributed/bootstrap.py: "Init parallel begin." (older: "Init torch distributed begin.")
        compile_rule("init", r"Init (?:parallel|torch distributed) begin"),
        # sglang/srt/model_executor/model_runner.py: f"Load weight begin. avail mem=..." / f"Load weight end. "
        compile_rule("loading_weights", r"Load weight begin"),
        compile_rule("weights_loaded", r"Load weight end"),
        # sglang/srt/mem_cache/memory_pool.py: f"{label} KV Cache is allocated. dtype: ..."
        compile_rule("kv_cache", r"KV Cache is allocated"),
        # sglang/srt/model_executor/model_runner_components/cuda_graph_setup.py:
        # f"Capture {target|draft} {decode|verify|prefill} CUDA graph begin." / "... end."
        # (older: "Capture cuda graph begin."); the first begin and the first end count.
        compile_rule("cuda_graph", r"Capture (?:[\w-]+ )*?(?:cuda|CUDA) graph begin"),
        compile_rule("cuda_graph_done", r"Capture (?:[\w-]+ )*?(?:cuda|CUDA) graph end"),
        # sglang/srt/entrypoints/http_server.py: logger.info("The server is fired up and ready to roll!")
        compile_rule("ready", r"The server is fired up and ready to roll"),
        # sglang/srt/entrypoints/http_server.py (_execute_server_warmup): GET /model_info (older:
        # /get_model_info), then POST /generate, /v1/chat/completions (a model that understands
        # images, e.g. Kimi-K2.5), /encode (an embedding model) or /v1/systemone (a Clef or
        # Kev checkpoint); uvicorn's access log shows them.
        compile_rule("warmup",
                     r'"(?:GET /(?:get_)?model_info|POST /(?:generate|encode|v1/chat/completions|v1/systemone)) HTTP'),
    ),
    log_marker=re.compile(r"Load weight begin|Init parallel begin|server_args=\{|ServerArgs\(|ready to roll"
                          r"|sglang[:./]|\[\d{4}-\d\d-\d\d [\d:]+ (?:DP\d+ )?TP\d+\]"),
    # "[2025-12-23 14:18:01 TP0] ..."
    log_timestamp=(re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)"), "%Y-%m-%d %H:%M:%S", ""),
    causes=(
        # SGLang checks its own ports before it starts (sglang/srt/server_args.py, PortArgs:
        # f"Port is already in use. {dist_init_port=} ..." after sglang/srt/utils/network.py
        # wait_port_available: f"{port_name} at {port} is not available in {timeout_s} seconds.").
        Cause("ports_held", "SGLang's ports are still held, most likely by the previous server on this port "
              "that has not exited yet: stop it and release its GPUs before relaunching "
              "(SGLang waits 30 s for them; SGLANG_WAIT_PORT_TIMEOUT sets that)", re.compile(
                  r"Port is already in use\. dist_init_port=|\w+_port at \d+ is not available in \d+ seconds"), 2),
        # sglang/srt/entrypoints/http_server.py: f"Initialization failed. warmup error: {last_traceback}"
        Cause("warmup_error", "warm-up request failed", re.compile(r"Initialization failed\. warmup error"), 4),
    ),
    model_info_paths=("/model_info", "/get_model_info"),
    # /get_server_info before 0.4.4.
    server_info_paths=("/server_info", "/get_server_info"),
    server_info_keys=("internal_states", "tp_size"),
    # /server_info internal_states[0].avg_spec_accept_length: the server's own recent average,
    # read when the metrics are off.
    server_info_accept_length="avg_spec_accept_length",
    metric_prefix="sglang:",
    # SGLang counts a request's tokens when it finishes (srt/observability/metrics_collector.py
    # observe_one_finished_request).
    generated_tokens="sglang:generation_tokens",
    # metrics_collector.py num_requests_total.
    finished_requests="sglang:num_requests",
    # Tokens per verify step, the same quantity as completion_tokens / meta_info.spec_verify_ct.
    # The counter is spec_verify_calls; spec_verify_ct is accepted as an alias (the name of the
    # per-request field, used by some builds and stand-ins).
    accept_length=AcceptLength(numerator=("sglang:generation_tokens",),
                               denominator=("sglang:spec_verify_calls", "sglang:spec_verify_ct"),
                               plus_one=False, meaning="tokens per verify step"),
    # srt/entrypoints/openai/protocol.py: CompletionRequest/ChatCompletionRequest
    # return_spec_tokens_details; the answer carries sglext.spec_tokens_details.
    per_request_acceptance={"return_spec_tokens_details": True},
    # srt/entrypoints/v1_loads.py get_loads: one entry per DP rank under "loads", from the
    # scheduler's own queues (srt/managers/scheduler_components/load_inquirer.py get_loads).
    # Always served, unlike the gauges sglang:num_running_reqs / sglang:num_queue_reqs, which
    # need --enable-metrics. It names no request; the drain log line does
    # (srt/managers/tokenizer_manager.py sigterm_watchdog), but only after SIGTERM.
    in_flight=InFlight(path="/v1/loads", running="num_running_reqs", waiting="num_waiting_reqs", entries="loads",
                       request_ids="in its SIGTERM drain's log lines only (\"Remaining requests "
                                   "remaining_rids=[...]\"), not over HTTP"),
)
