# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_experiment/unmodelled.py: the settings a simulated fleet does not model, noted per variant."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import unmodelled as um

MODELS = {"sglang": ["--model-path", "--tp-size", "--mem-fraction-static", "--trust-remote-code"],
          "vllm": ["--model", "--tensor-parallel-size", "--gpu-memory-utilization"]}


def test_given_flags_are_the_settings_and_the_extra_args_flags():
    server = {"model_path": "/m", "tp_size": 8, "ready_timeout": 60, "gpus": [0],
              "extra_args": ["--trust-remote-code", "--ep-size", "8", "--chunked-prefill-size=4096"]}
    assert um.given_flags(server) == ["--tp-size", "--trust-remote-code", "--ep-size", "--chunked-prefill-size"]


def test_given_flags_are_spelled_as_the_engine_spells_them():
    server = {"model_path": "/m", "tp_size": 8, "max_num_seqs": 64, "api_key": "k", "extra_args": ["-O3"]}
    assert um.given_flags(server, "vllm") == ["--tensor-parallel-size", "--max-num-seqs"]
    flags = um.given_flags({"tp_size": 8, "cuda_graph_max_bs": 16}, "sglang")
    assert flags == ["--tp-size", "--cuda-graph-max-bs-decode"]


def test_a_note_per_variant_with_settings_the_simulator_does_not_read():
    experiment = {"variants": [
        {"name": "tp8", "engine": "sglang", "server": {"model_path": "/m", "tp_size": 8}},
        {"name": "ep8", "engine": "sglang",
         "server": {"model_path": "/m", "extra_args": ["--ep-size", "8"], "max_running_requests": 64}},
        {"name": "v", "engine": "vllm", "server": {"max_num_seqs": 8, "tp_size": 8}},
        {"name": "v8", "engine": "vllm", "server": {"tp_size": 8, "gpu_memory_utilization": 0.8}},
    ]}
    assert um.notes(experiment, MODELS) == [
        "ep8: the simulated fleet does not model --max-running-requests, --ep-size: its figures are those "
        "without them",
        "v: the simulated fleet does not model --max-num-seqs: its figures are those without them"]
    assert um.notes(experiment, {"sglang": MODELS["sglang"]}) == um.notes(experiment, MODELS)[:1]  # no vLLM list
    assert um.notes(experiment, None) == []  # a real fleet
