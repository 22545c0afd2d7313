# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM, as the collection is tested against it (vLLM 0.33.0, v1 engine; source files named beside each fact).

tests/unit/plugins/module_utils/_server/test_log.py reads the log format strings from
the unpacked wheel; tests/sim/test_vllm_argv_corpus.py parses the command lines with the
simulator's copy of its flag set.
"""

from __future__ import annotations

import json
import re

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as _spec
from ansible_collections.gpufleet.serving.plugins.module_utils._engines.engine import (
    AcceptLength,
    Cause,
    Engine,
    InFlight,
    compile_rule,
)
from ansible_collections.gpufleet.serving.plugins.module_utils._engines.sglang import EAGLE_ARCHITECTURES
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput

# vLLM 0.33.0 with --speculative-config method eagle3 renames each drafter architecture X to
# Eagle3X unless X starts or ends with Eagle3 (vllm/transformers_utils/configs/eagle.py,
# EAGLEConfig) and loads that name from _SPECULATIVE_DECODING_MODELS
# (vllm/model_executor/models/registry.py): the names there that load an EAGLE-3 module
# (llama_eagle3, qwen3_eagle3, deepseek_eagle3).
EAGLE3_ARCHITECTURES = ("Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle3", "Eagle3MiniMaxM2ForCausalLM",
                        "Eagle3Qwen2_5vlForCausalLM", "Eagle3Qwen3vlForCausalLM", "Eagle3Qwen3ForCausalLM",
                        "Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM", "PEagleDraftModel",
                        "PeagleLlamaForCausalLM", "PeagleQwen3ForCausalLM")


def eagle3_name(arch: str) -> str:
    """The registry name vLLM 0.33.0's method eagle3 looks up for a drafter architecture."""
    return arch if arch.startswith("Eagle3") or arch.endswith("Eagle3") else "Eagle3" + arch


def check_architectures(archs: list) -> None:
    """Refuse a drafter that vLLM 0.33.0's method eagle3 cannot load (its rename, then its registry)."""
    if any(a in EAGLE3_ARCHITECTURES or eagle3_name(a) in EAGLE3_ARCHITECTURES for a in archs):
        return
    hint = ""
    if any(a in EAGLE_ARCHITECTURES for a in archs):
        hint = ("; it is an EAGLE-1/2 drafter: use an EAGLE-3 drafter for this target, or run this one with "
                "--speculative-config method eagle")
    raise InvalidInput("drafter architectures=%s is not an EAGLE-3 architecture vLLM 0.33.0 registers (method eagle3 "
                       "loads %s; expected one of %s)%s"
                       % (archs, [eagle3_name(a) for a in archs], ", ".join(EAGLE3_ARCHITECTURES), hint))


# The methods vLLM 0.33.0 accepts in --speculative-config's `method`: SpeculativeMethod in
# vllm/config/speculative.py (with EagleModelTypes, MTPModelTypes, NgramGPUTypes,
# DFlashModelTypes and DSparkModelTypes spelled out), compared as written (a pydantic
# Literal). The MTP model types other than `mtp` are deprecated there (rewritten to `mtp` with
# a warning) but still accepted. tests/unit/plugins/module_utils/_engines/test_vllm.py reads
# the list from the wheel.
SPECULATIVE_METHODS = (
    "ngram", "draft_model", "suffix", "custom_class", "eagle", "eagle3", "extract_hidden_states",
    "dflash", "ngram_gpu", "dspark", "mtp",
    "deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp",
    "glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp",
    "qwen4_exp_mtp", "qwen3_5_mtp", "longcat_flash_mtp", "bailing_hybrid_v3_mtp", "minimax_m3_mtp",
    "bailing_hybrid_mtp", "kimi_k3_mtp", "pangu_ultra_moe_mtp", "step3p5_mtp", "step5_mtp", "hy_v3_mtp",
    "hy_v4_mtp", "gemma4_mtp", "inkling_mtp", "glm5_next_mtp",
)


# Methods whose draft weights come from `model` (a separate drafter directory): vLLM fails with
# "num_speculative_tokens was provided but without speculative model" without one
# (SpeculativeConfig.__post_init__).
SPECULATIVE_METHODS_WITH_MODEL = ("eagle", "eagle3", "draft_model", "dflash")


def check_speculative_config(config: dict) -> None:
    """Refuse a --speculative-config that vLLM would refuse only at launch: a method that drafts with a
    separate model and names none, or num_speculative_tokens that is not a whole number of at least 1
    (null included: left out, vLLM takes it from the drafter's config)."""
    model = config.get("model")
    needs_model = config.get("method") in SPECULATIVE_METHODS_WITH_MODEL and (model is None or str(model) == "")
    tokens = config.get("num_speculative_tokens")
    bad_tokens = "num_speculative_tokens" in config and (
        isinstance(tokens, bool) or not re.match(r"^[0-9]+$", str(tokens)) or int(tokens) < 1)
    if needs_model or bad_tokens:
        raise InvalidInput("speculative_config %s: method %s needs `model` (the drafter's directory), and "
                           "num_speculative_tokens, when given, must be a whole number of at least 1 (leave the key "
                           "out, not null, for vLLM to take it from the drafter's config)."
                           % (json.dumps(config), config.get("method") or "(none)"))


def speculative_method(algorithm: str) -> str:
    """The composed config's `method`: the algorithm lowercased (EAGLE3 -> eagle3)."""
    return algorithm.lower()


def speculative_options(spec: dict) -> dict:
    """--speculative-config {"method": "eagle3", "model": DRAFTER, "num_speculative_tokens": STEPS}.

    vLLM's EAGLE proposes a chain (top-k 1) of num_speculative_tokens tokens, SGLang's steps;
    without it vLLM takes the drafter config's n_predict (vllm/config/speculative.py, 0.33.0)."""
    config = {"method": speculative_method(spec["algorithm"]), "model": spec["draft_model_path"]}
    if spec.get("num_steps") is not None:
        config["num_speculative_tokens"] = spec["num_steps"]
    return {"speculative_config": config}


def speculative_numbers(spec: dict) -> dict:
    """vLLM's chain is SGLang's top-k 1: draft tokens = steps + 1."""
    steps = spec.get("num_steps")
    if steps is None:
        return {"num_steps": None, "eagle_topk": spec.get("eagle_topk"), "num_draft_tokens": spec.get("num_draft_tokens")}
    return {"num_steps": steps, "eagle_topk": 1, "num_draft_tokens": steps + 1}


ENGINE = Engine(
    name="vllm",
    title="vLLM",
    server_role=True,
    # The pin in requirements-vllm.txt.
    tested_version="0.33.0",
    package="vllm",
    module="vllm",
    # `vllm serve MODEL ...` (vllm/entrypoints/cli/serve.py: the model is positional).
    console_script="vllm",
    default_port=8000,
    model_flag=None,
    # Its flags, one per server setting: the server spec table (_engines/settings.py) holds them.
    option_flags=_spec.option_flags("vllm"),
    # vLLM masks api_key in the arguments it logs (vllm/entrypoints/common/startup.py
    # _SENSITIVE_ARG_FIELDS), so no log redactor runs in front of it.
    log_redactor=False,
    speculative_options=speculative_options,
    speculative_numbers=speculative_numbers,
    check_drafter=check_architectures,
    speculative_methods=SPECULATIVE_METHODS,
    speculative_method=speculative_method,
    speculative_config_option="speculative_config",
    # vLLM 0.33.0: engine cores and workers retitle themselves VLLM::EngineCore,
    # VLLM::Worker_TP<r> and can outlive a killed API server (vllm issues 55510, 34643);
    # the entry points run as python -m vllm.entrypoints.* (the set reset.yml always used),
    # and the API server started by the console script keeps `.../bin/vllm serve MODEL` as
    # its command line (one API server gets no title: vllm/entrypoints/cli/serve.py).
    kill_patterns=(r"VLLM::", r"vllm\.entrypoints", r"vllm serve"),
    # set_process_title(name): f"{VLLM_PROCESS_NAME_PREFIX}::{name}", prefix "VLLM" (vllm/utils/system_utils.py).
    process_titles=("/venv/bin/python3 /venv/bin/vllm serve /models/m -tp 8",
                    "/usr/bin/python3 -m vllm.entrypoints.openai.api_server --model /models/m",
                    "VLLM::EngineCore", "VLLM::Worker_TP0", "VLLM::Worker_TP7"),
    phase_rules=(
        # vllm/v1/engine/core.py: "Initializing a V1 LLM engine (v%s) with config: %s"
        compile_rule("init", r"Initializing an? (?:V1 )?LLM engine"),
        # vllm/v1/worker/gpu_model_runner.py: "Starting to load model %s...", "Model loading took %s GiB ..."
        compile_rule("loading_weights", r"Starting to load model"),
        compile_rule("weights_loaded", r"Loading (?:model )?weights took|Model loading took"),
        # vllm/v1/core/kv_cache_utils.py: "%s KV cache size: %s tokens, ..." (%s: "GPU", ...)
        compile_rule("kv_cache", r"KV cache size: [\d,]+ tokens|# GPU blocks:|# cuda blocks:"),
        # vllm/v1/worker/gpu_model_runner.py: the tqdm bar's desc "Capturing CUDA graphs ({}, {})" (also
        # vllm/v1/worker/gpu/cudagraph_utils.py progress_bar_desc), then "Graph capturing finished in ..."
        compile_rule("cuda_graph", r"Capturing (?:CUDA graph|cudagraphs|the model for CUDA graphs)"),
        compile_rule("cuda_graph_done", r"Graph capturing finished"),
        compile_rule("engine_ready", r"init engine \(profile, create kv cache, warmup model\) took"),
        # vllm/entrypoints/launchers/api_server/entry.py: "Starting vLLM server on %s"
        # (before 0.33: "Starting vLLM API server 0 on ...")
        compile_rule("http_server", r"Starting vLLM (?:API )?server"),
        # vLLM's engine is warm before uvicorn starts: startup complete means /health answers.
        # vllm/entrypoints/launchers/launcher.py serve_http hands uvicorn the socket it bound
        # (server.serve(sockets=[sock])), and uvicorn then skips "Uvicorn running on"
        # (uvicorn/server.py: `if sockets is None: self._log_started_message(...)`); its lifespan
        # still logs "Application startup complete." (uvicorn/lifespan/on.py). The same line
        # appears in other engines' logs, where it only means the HTTP server is up.
        compile_rule("ready", r"Application startup complete", unsure="http_server"),
    ),
    log_marker=re.compile(r"vLLM|\((?:APIServer|EngineCore\w*|Worker\w*|VllmWorkerProcess) pid=\d+\)|vllm[./]"),
    # "INFO 05-06 20:59:57 [file.py:1] ..." omits the year; any fixed leap year keeps offsets
    # right (but across New Year).
    log_timestamp=(re.compile(r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d-\d\d \d\d:\d\d:\d\d)\b"),
                   "%Y-%m-%d %H:%M:%S", "2000-"),
    causes=(
        # vLLM 0.33.0: vllm/v1/core/kv_cache_planning.py "No available memory for the cache blocks.",
        # "... KV cache is needed, which is larger than the available KV cache memory ..."; vllm/v1/worker/
        # utils.py f"Free memory on device {dev} (x/y GiB) on startup is less than desired GPU memory
        # utilization (...)" / "... is less than the engine's budget ..." (memory another process, often an
        # old EngineCore, still holds); vllm/v1/worker/gpu_model_runner.py "CUDA out of memory occurred when
        # warming up sampler ...".
        Cause("oom", "", re.compile(
            r"No available memory for the cache blocks|larger than the available KV cache memory"
            r"|on startup is less than (?:desired GPU memory utilization|the engine's budget)"), 1),
        # vLLM binds its port before the engine starts (vllm/entrypoints/launchers/launcher.py
        # create_server_socket: sock.bind(addr), with SO_REUSEADDR) and dies with Python's
        # "OSError: [Errno 98] Address already in use".
        Cause("address_in_use", "address already in use (port taken: an old server may still hold it)", re.compile(
            r"address already in use|Errno 98\b|EADDRINUSE", re.IGNORECASE), 2),
        # vLLM 0.33.0's engine core (in its own process, VLLM::EngineCore) failed or died; the root cause
        # is logged above these lines, so every more specific cause comes first. vllm/v1/engine/core.py
        # "EngineCore failed to start." / "EngineCore encountered a fatal error."; vllm/v1/engine/utils.py
        # "Engine core initialization failed. See root cause above. Failed core proc(s): {...}";
        # vllm/v1/utils.py f"Engine core process {name} died unexpectedly."; vllm/v1/executor/
        # multiproc_executor.py "Worker proc %s died unexpectedly (exit code: %s), shutting down executor."
        Cause("engine_failed", "vLLM's engine core failed to start or died (its own error is logged above)",
              re.compile(r"Engine core initialization failed|EngineCore failed to start|EngineCore encountered a fatal error"
                         r"|Engine core process \S+ died unexpectedly|Worker proc \S+ died unexpectedly"), 4),
    ),
    model_info_paths=(),
    server_info_paths=(),
    server_info_keys=(),
    server_info_accept_length=None,
    metric_prefix="vllm:",
    generated_tokens="vllm:generation_tokens",
    # v1/metrics/loggers.py request_success, summed over finished_reason.
    finished_requests="vllm:request_success",
    # 1 + accepted / drafts. vllm/v1/spec_decode/metrics.py SpecDecodingProm (prometheus_client
    # Counters, so scraped with `_total`; labels model_name and engine). The per-position counter
    # vllm:spec_decode_num_accepted_tokens_per_pos_total shares the prefix but not the name.
    accept_length=AcceptLength(numerator=("vllm:spec_decode_num_accepted_tokens",),
                               denominator=("vllm:spec_decode_num_drafts",),
                               plus_one=True, meaning="1 + accepted/drafts"),
    # vLLM 0.33.0 reports acceptance in its spec_decode counters only.
    per_request_acceptance=None,
    # v1/metrics/loggers.py PrometheusStatLogger: gauges with labels model_name and engine (one
    # series per engine core, summed). /metrics is always on and needs no key. vLLM names no
    # request in flight anywhere a client can read.
    check_speculative_config=check_speculative_config,
    in_flight=InFlight(path="/metrics", running="vllm:num_requests_running", waiting="vllm:num_requests_waiting",
                       entries=None, request_ids=None),
)
