# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/server_plan.py: the options it documents (fragments merged, as ansible-doc reads them) are its
real argument spec, names and defaults, read from the module itself (tests/support/module_docs.py); run
on this host for an instance nothing runs yet, it composes the command line and decides a relaunch,
changing nothing (its decisions in detail: module_utils/_server/test_plan.py). Its `settings`: a
server's settings in one dict (the server spec table's names), run through the real module on
localhost: the same plan as the options one by one, the table's checks naming the setting (and the
batch item), the key inside it kept out of the result."""

from __future__ import annotations

import json
import os
import sys

from tests.support import module_docs
from tests.support.ansible import run_module


def test_documented_options_are_the_argument_spec():
    assert module_docs.mismatches("server_plan") == []


def test_a_new_instance_is_composed_and_relaunched_and_nothing_changes(tmp_path):
    state, log = tmp_path / "state", tmp_path / "log"
    res = module_docs.run("server_plan", {"instance": "sglang-t", "model_path": str(tmp_path / "model"),
                                          "state_dir": str(state), "log_dir": str(log), "port": 39999,
                                          "python": sys.executable, "tp_size": 2})
    assert res["_rc"] == 0, res.get("msg")
    assert res["argv"][1:] == ["serve", "--model-path", str(tmp_path / "model"), "--tp-size", "2", "--host",
                               "127.0.0.1", "--port", "39999", "--enable-metrics"]
    assert (res["decision"], res["running"], res["changed"]) == ("relaunch", False, False)
    assert res["paths"]["state_file"] == str(state / "sglang-t.json") and res["url"] == "http://127.0.0.1:39999"
    assert not os.path.exists(state) and not os.path.exists(log)  # only reads


SECRET = "sk-settings-0123456789"


def _dirs(tmp_path):
    return {"log_dir": str(tmp_path / "log"), "state_dir": str(tmp_path / "state")}


def test_settings_plan_as_the_options_do(tmp_path):
    options = dict(_dirs(tmp_path), engine="vllm", model_path="/models/m", tp_size=4, port=8001, instance="vllm-8001",
                   supervisor="process", max_num_seqs=64, state="started")
    by_options = run_module("server_plan", options)
    # The same values in one dict; the state `planned` is planned as started.
    by_settings = run_module("server_plan", {"settings": dict(options, state="planned")})
    assert by_options["_rc"] == 0 and by_settings["_rc"] == 0, (by_options, by_settings)
    for key in ("argv", "launch_argv", "env", "paths", "url", "fingerprint", "decision"):
        assert by_settings[key] == by_options[key], key
    assert by_settings["argv"][by_settings["argv"].index("--max-num-seqs") + 1] == "64"


def test_settings_take_the_table_defaults(tmp_path):
    result = run_module("server_plan", {"settings": dict(_dirs(tmp_path), engine="vllm", model_path="/m",
                                                         supervisor="process")})
    assert result["_rc"] == 0, result
    # vLLM's port and the instance computed from it, not the module's SGLang defaults.
    assert result["url"] == "http://127.0.0.1:8000" and result["paths"]["log"].endswith("/vllm-8000.log")


def test_a_bad_setting_is_named_and_a_batch_item_numbered(tmp_path):
    result = run_module("server_plan", {"settings": {"engine": "sglang", "model_path": "/m", "tp_size": "eight"}})
    assert result["_rc"] != 0 and "settings.tp_size must be a whole number, not str 'eight'" in result["msg"], result
    good = dict(_dirs(tmp_path), engine="sglang", model_path="/m", supervisor="process")
    result = run_module("server_plan", {"batch": [{"settings": good},
                                                  {"settings": dict(good, speculative={"algorithm": "EAGLE3"})}]})
    assert result["_rc"] != 0 and result["batch_item"] == 2, result
    assert result["msg"].startswith("batch item 2: ") and "draft_model_path" in result["msg"], result


def test_the_key_inside_settings_stays_out_of_the_result(tmp_path):
    result = run_module("server_plan", {"settings": dict(_dirs(tmp_path), engine="sglang", model_path="/m",
                                                         supervisor="process", api_key=SECRET)})
    assert result["_rc"] == 0, result
    assert "--config" in result["argv"]
    assert SECRET not in json.dumps(result) and SECRET not in result["_stdout"]


def test_a_node_of_a_group_gets_its_share_of_the_command_line_through_settings_and_options(tmp_path):
    group = {"nodes": ["gpu-a", "gpu-b"], "node": "gpu-b", "dist_addr": "10.0.0.1", "dist_timeout": 120}
    by_settings = run_module("server_plan", {"settings": dict(_dirs(tmp_path), engine="vllm", model_path="/m",
                                                              tp_size=16, supervisor="process", **group)})
    by_options = run_module("server_plan", dict(_dirs(tmp_path), engine="vllm", model_path="/m", tp_size=16,
                                                instance="vllm-8000", port=8000, supervisor="process", **group))
    assert by_settings["_rc"] == 0 and by_options["_rc"] == 0, (by_settings, by_options)
    assert by_settings["argv"] == by_options["argv"]
    at = by_settings["argv"].index("--nnodes")
    assert by_settings["argv"][at - 2:] == ["--distributed-timeout-seconds", "120", "--nnodes", "2", "--node-rank", "1",
                                            "--master-addr", "10.0.0.1", "--master-port", "29501", "--headless"]
    lost = run_module("server_plan", {"settings": dict(_dirs(tmp_path), engine="sglang", model_path="/m",
                                                       supervisor="process", **dict(group, node="gpu-z"))})
    assert lost["_rc"] != 0 and "node 'gpu-z' is not one of the server group's nodes" in lost["msg"], lost
