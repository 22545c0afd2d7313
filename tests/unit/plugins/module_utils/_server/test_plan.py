# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""server_plan's logic: compose, fingerprint, what runs, decision, version probe."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._server import plan as pl
from ansible_collections.gpufleet.serving.plugins.module_utils._server import supervisor as sup

BASE = {"state": "started", "model_path": "/models/kimi", "served_model_name": "", "tp_size": 8,
        "host": "127.0.0.1", "port": 30000, "mem_fraction_static": None, "cuda_graph_max_bs": None,
        "max_running_requests": None, "enable_metrics": True, "api_key": "", "speculative_args": [],
        "extra_args": [], "env": {}, "gpus": [], "python": "/opt/sglang/bin/python3", "entry_point": "",
        "instance": "sglang-30000", "log_dir": "/var/log/sglang", "state_dir": "/var/lib/gf",
        "supervisor": "process", "service_mgr": ""}


def params(**more):
    out = dict(BASE)
    out.update(more)
    return out


def test_compose_default_argv_paths_and_url():
    composed = pl.compose(params())
    assert composed["argv"] == ["/opt/sglang/bin/sglang", "serve", "--model-path", "/models/kimi", "--tp-size", "8",
                                "--host", "127.0.0.1", "--port", "30000", "--enable-metrics"]
    assert composed["launch_argv"] == composed["argv"]
    assert composed["url"] == "http://127.0.0.1:30000"
    assert composed["paths"]["log"] == "/var/log/sglang/sglang-30000.log"
    assert composed["paths"]["state_file"] == "/var/lib/gf/sglang-30000.json"
    assert composed["env"] == {}


def test_compose_every_flag_in_order_and_gpus():
    composed = pl.compose(params(served_model_name="kimi", mem_fraction_static=0.85, cuda_graph_max_bs=64,
                                 max_running_requests=128, enable_metrics=False,
                                 speculative_args=["--speculative-algorithm", "EAGLE3"],
                                 extra_args=["--trust-remote-code"], gpus=[0, 1], env={"A": "1"},
                                 entry_point="/usr/local/bin/sglang", host="::1"))
    assert composed["argv"][10:] == ["--served-model-name", "kimi", "--mem-fraction-static", "0.85",
                                     "--cuda-graph-max-bs-decode", "64", "--max-running-requests", "128",
                                     "--speculative-algorithm", "EAGLE3", "--trust-remote-code"]
    assert composed["argv"][0] == "/usr/local/bin/sglang"
    assert composed["env"] == {"A": "1", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert composed["url"] == "http://[::1]:30000"


def test_bare_interpreter_means_sglang_on_path():
    assert pl.compose(params(python="python3"))["entry_point"] == "sglang"


def test_key_goes_to_config_file_and_redactor_never_on_argv():
    composed = pl.compose(params(api_key="gf-SECRET"))
    assert "gf-SECRET" not in json.dumps(composed)
    assert composed["argv"][-2:] == ["--config", "/var/lib/gf/sglang-30000.secret.yaml"]
    assert composed["launch_argv"] == ["/opt/sglang/bin/python3", "/var/lib/gf/log_redact.py",
                                       "/var/lib/gf/sglang-30000.secret.yaml", "--"] + composed["argv"]
    assert composed["fingerprint"] != pl.compose(params(api_key="gf-OTHER"))["fingerprint"]


def test_fingerprint_equals_the_jinja_fingerprint_of_earlier_releases():
    """A server that a release computing the fingerprint in Jinja launched is kept after an upgrade."""
    composed = pl.compose(params(api_key="k", gpus=[2, 3], env={"NCCL_DEBUG": "WARN"}))
    expr = ("{{ {'argv': launch, 'env': env, 'supervisor': 'process', 'key': key | hash('sha256')}"
            " | to_json | hash('sha256') }}")
    variables = {"launch": composed["launch_argv"], "env": composed["env"], "key": "k"}
    former = Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expr))
    assert composed["fingerprint"] == former


@pytest.mark.parametrize("state,running,recorded,status,decision", [
    ("started", True, "F", 200, "keep"),
    ("started", True, "F", 503, "relaunch"),
    ("started", True, "other", 200, "relaunch"),
    ("started", False, "F", None, "relaunch"),
    ("restarted", True, "F", 200, "relaunch"),
    ("stopped", True, "F", 200, "stop"),
])
def test_decide(state, running, recorded, status, decision):
    assert pl.decide(state, running, recorded, "F", status) == decision


def _never(argv):
    raise AssertionError("no command expected, got %r" % (argv,))


def test_plan_nothing_running_relaunches_and_reads_the_version(tmp_path):
    calls = []

    def run(argv):
        calls.append(argv)
        return 0, "0.5.23\n", ""

    out = pl.plan(params(state_dir=str(tmp_path)), run, check_health=lambda url: pytest.fail("no health"))
    assert (out["decision"], out["running"], out["sglang_version"], out["version_error"]) == (
        "relaunch", False, "0.5.23", None)
    assert out["entry_point_exists"] is False  # /opt/sglang/bin/sglang is not here
    assert calls == [["/opt/sglang/bin/python3", "-c", registry.get("sglang").version_probe()]]


def test_plan_unreadable_version_keeps_the_last_stderr_line(tmp_path):
    out = pl.plan(params(state_dir=str(tmp_path)), lambda argv: (1, "", "Traceback\nModuleNotFoundError: x\n"))
    assert (out["sglang_version"], out["version_error"]) == ("unknown", "ModuleNotFoundError: x")


def test_plan_missing_interpreter_is_unknown(tmp_path):
    def run(argv):
        raise OSError(2, "No such file or directory")

    out = pl.plan(params(state_dir=str(tmp_path)), run)
    assert out["sglang_version"] == "unknown" and "No such file" in out["version_error"]


@pytest.mark.parametrize("package, module", [("pytest", "pytest"), ("no-such-distribution", "pytest")])
def test_version_probe_reads_metadata_else_the_module(package, module):
    """The probe reads the distribution's metadata; without it, MODULE.__version__."""
    probe = dataclasses.replace(registry.get("sglang"), package=package, module=module).version_probe()
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == pytest.__version__


@pytest.fixture
def running_server(tmp_path):
    """A real process recorded in a server_process state file, with the plan's fingerprint."""
    p = params(state_dir=str(tmp_path), log_dir=str(tmp_path))
    composed = pl.compose(p)
    state = sup.start([sys.executable, "-c", "import time; time.sleep(60)"], {}, composed["paths"]["log"],
                      composed["paths"]["state_file"], composed["fingerprint"])
    yield p, state
    sup.stop(composed["paths"]["state_file"], 5)


def test_plan_keeps_a_healthy_server_with_the_same_configuration(running_server):
    p, state = running_server
    asked = []

    def healthy(url):
        asked.append(url)
        return 200

    out = pl.plan(p, _never, check_health=healthy)
    assert (out["decision"], out["keep"], out["pid"], out["sglang_version"]) == ("keep", True, state["pid"], None)
    assert asked == ["http://127.0.0.1:30000"]


def test_plan_relaunches_an_unhealthy_or_changed_server(running_server):
    p, unused = running_server
    assert pl.plan(p, lambda argv: (0, "0.5.23", ""), check_health=lambda url: None)["decision"] == "relaunch"
    changed = dict(p, max_running_requests=7)
    out = pl.plan(changed, lambda argv: (0, "0.5.23", ""), check_health=lambda url: pytest.fail("no health"))
    assert out["decision"] == "relaunch" and out["running"] and out["recorded_fingerprint"] != out["fingerprint"]


def test_plan_stop_asks_no_health_and_reads_no_version(running_server):
    p, unused = running_server
    out = pl.plan(dict(p, state="stopped"), _never, check_health=lambda url: pytest.fail("no health"))
    assert (out["decision"], out["running"]) == ("stop", True)


def test_plan_systemd_reads_the_unit_and_its_recorded_fingerprint(tmp_path):
    p = params(state_dir=str(tmp_path), supervisor="systemd")
    composed = pl.compose(p)
    (tmp_path / "sglang-30000.fingerprint").write_text(composed["fingerprint"] + "\n")

    def run(argv):
        assert argv[:3] == ["/bin/systemctl", "show", "sglang-30000.service"]
        return 0, "ActiveState=active\nMainPID=4242\n", ""

    out = pl.plan(p, run, systemctl="/bin/systemctl", check_health=lambda url: 200)
    assert (out["decision"], out["pid"]) == ("keep", 4242)


def test_plan_systemd_without_systemctl_is_not_running(tmp_path):
    out = pl.plan(params(state_dir=str(tmp_path), supervisor="systemd"), lambda argv: (0, "0.5.23", ""),
                  systemctl=None)
    assert (out["running"], out["pid"], out["decision"]) == (False, None, "relaunch")


def test_health_without_an_answer_is_none():
    started = time.monotonic()
    assert pl.health("http://127.0.0.1:9", timeout=2) is None  # discard port: refused at once
    assert time.monotonic() - started < 2


def test_dirs_ready_only_with_the_role_modes(tmp_path):
    p = params(log_dir=str(tmp_path / "log"), state_dir=str(tmp_path / "state"))
    assert not pl.dirs_ready(p)
    (tmp_path / "log").mkdir(mode=0o750)
    (tmp_path / "state").mkdir(mode=0o755)
    os.chmod(tmp_path / "log", 0o750)
    os.chmod(tmp_path / "state", 0o755)
    assert not pl.dirs_ready(p)  # the state directory is too open: the role's file task fixes it
    os.chmod(tmp_path / "state", 0o700)
    assert pl.dirs_ready(p)
    assert pl.plan(p, lambda argv: (0, "0.5.23", ""))["dirs_ready"] is True

    assert pl.plan(p, lambda argv: (0, "0.5.23", ""))["dirs"] == [
        {"path": str(tmp_path / "log"), "mode": "0750"}, {"path": str(tmp_path / "state"), "mode": "0700"}]


# vLLM (engine=vllm): `vllm serve MODEL ...`, the key in the --config YAML, no redactor.
VLLM = {"engine": "vllm", "python": "/opt/vllm/bin/python3", "instance": "vllm-8000", "port": 8000}


def test_vllm_default_argv_model_positional_and_entry_beside_python():
    composed = pl.compose(params(**VLLM))
    assert composed["argv"] == ["/opt/vllm/bin/vllm", "serve", "/models/kimi", "--tensor-parallel-size", "8",
                                "--host", "127.0.0.1", "--port", "8000"]
    assert composed["launch_argv"] == composed["argv"]
    assert composed["url"] == "http://127.0.0.1:8000"
    assert pl.entry_point("python3", "", "vllm") == "vllm"


def test_vllm_every_flag_in_order_and_sglang_options_ignored():
    spec = {"method": "eagle3", "model": "/models/eagle3", "num_speculative_tokens": 3}
    composed = pl.compose(params(served_model_name="kimi", gpu_memory_utilization=0.85, max_num_seqs=64,
                                 speculative_config=spec, extra_args=["--trust-remote-code"],
                                 mem_fraction_static=0.5, cuda_graph_max_bs=8, max_running_requests=9,
                                 speculative_args=["--speculative-algorithm", "EAGLE3"], **VLLM))
    assert composed["argv"][9:] == [
        "--served-model-name", "kimi", "--gpu-memory-utilization", "0.85", "--max-num-seqs", "64",
        "--speculative-config", '{"method": "eagle3", "model": "/models/eagle3", "num_speculative_tokens": 3}',
        "--trust-remote-code"]


def test_vllm_key_only_in_the_config_file_and_its_digest():
    composed = pl.compose(params(api_key="sekrit", **VLLM))
    secret = composed["paths"]["secret_config"]
    assert composed["argv"][-2:] == ["--config", secret]
    assert composed["launch_argv"] == composed["argv"]  # vLLM masks the key itself: no redactor
    assert "sekrit" not in json.dumps(composed)
    assert composed["fingerprint"] != pl.compose(params(api_key="other", **VLLM))["fingerprint"]


def test_vllm_fingerprint_changes_with_what_the_sglang_one_does():
    base = pl.compose(params(**VLLM))["fingerprint"]
    assert base == pl.compose(params(**VLLM))["fingerprint"]
    for change in ({"gpus": [0]}, {"env": {"A": "1"}}, {"supervisor": "systemd"}, {"max_num_seqs": 8},
                   {"speculative_config": {"method": "eagle3"}}):
        assert pl.compose(params(**dict(VLLM, **change)))["fingerprint"] != base, change
    assert base != pl.compose(params(port=8000, instance="vllm-8000"))["fingerprint"]  # sglang, same port


def test_vllm_plan_reads_the_vllm_version(tmp_path):
    calls = []

    def run(argv):
        calls.append(argv)
        return 0, "0.33.0\n", ""

    out = pl.plan(params(state_dir=str(tmp_path), **VLLM), run, check_health=lambda url: pytest.fail("no health"))
    assert (out["decision"], out["engine_version"], out["sglang_version"]) == ("relaunch", "0.33.0", None)
    assert 'm.version("vllm")' in calls[0][2] and "import vllm" in calls[0][2] and "sglang" not in calls[0][2]


def test_sglang_plan_fills_both_version_fields(tmp_path):
    out = pl.plan(params(state_dir=str(tmp_path)), lambda argv: (0, "0.5.23\n", ""))
    assert out["engine_version"] == out["sglang_version"] == "0.5.23"


# Speculative settings (the eagle_drafter role's variables), composed per engine.
DRAFT = {"algorithm": "EAGLE3", "draft_model_path": "/models/eagle3", "num_steps": 3, "eagle_topk": 1,
         "num_draft_tokens": 4}
SGLANG_DRAFT = ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/models/eagle3",
                "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]


def test_speculative_settings_give_sglang_flags_before_the_extra_ones():
    composed = pl.compose(params(speculative=DRAFT, speculative_args=["--speculative-attention-mode", "decode"],
                                 extra_args=["--trust-remote-code"]))
    assert composed["argv"][-13:] == SGLANG_DRAFT + ["--speculative-attention-mode", "decode", "--trust-remote-code"]
    assert composed["speculative_argv"] == SGLANG_DRAFT + ["--speculative-attention-mode", "decode"]
    assert composed["speculative_numbers"] == {"num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}
    # The same argv as the arguments written out by hand (so a running server composed either way is kept).
    assert composed["fingerprint"] == pl.compose(params(
        speculative_args=SGLANG_DRAFT + ["--speculative-attention-mode", "decode"],
        extra_args=["--trust-remote-code"]))["fingerprint"]


def test_speculative_settings_without_steps_leave_sglang_its_own_numbers():
    composed = pl.compose(params(speculative=dict(DRAFT, num_steps=None, eagle_topk=None, num_draft_tokens=None)))
    assert composed["speculative_argv"] == SGLANG_DRAFT[:4]


def test_speculative_settings_give_vllm_a_config_merged_under_the_given_one():
    composed = pl.compose(params(speculative=DRAFT, speculative_config={"num_speculative_tokens": 2, "x": 1}, **VLLM))
    config = {"method": "eagle3", "model": "/models/eagle3", "num_speculative_tokens": 2, "x": 1}
    assert composed["speculative_argv"] == ["--speculative-config", json.dumps(config, sort_keys=True)]
    assert composed["argv"][-2:] == composed["speculative_argv"]
    # vLLM drafts a chain: top-k 1, steps + 1 draft tokens, whatever SGLang's numbers say.
    more = pl.compose(params(speculative=dict(DRAFT, eagle_topk=4, num_draft_tokens=8), **VLLM))
    assert more["speculative_numbers"] == {"num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}
    assert json.loads(more["speculative_argv"][1]) == {"method": "eagle3", "model": "/models/eagle3",
                                                       "num_speculative_tokens": 3}


def test_no_speculative_settings_add_nothing():
    for engine in ({}, VLLM):
        composed = pl.compose(params(**engine))
        assert (composed["speculative_argv"], composed["speculative_numbers"]) == ([], None)


# A speculative method the engine does not know fails the plan before anything is read or stopped.
def _no_command(argv):
    raise AssertionError("refused before any command, got %r" % (argv,))


@pytest.mark.parametrize("more, words", [
    ({"speculative": dict(DRAFT, algorithm="EAGLE4")},
     "speculative.algorithm 'EAGLE4' (SGLang method 'EAGLE4') is not a speculative method SGLang knows: "
     "set it to one of DFLASH, UNO, DSPARK, EAGLE, EAGLE3,"),
    (dict(VLLM, speculative=dict(DRAFT, algorithm="EAGLE4")),
     "speculative.algorithm 'EAGLE4' (vLLM method 'eagle4') is not a speculative method vLLM knows: "
     "set it to one of ngram, draft_model,"),
    (dict(VLLM, speculative_config={"method": "EAGLE3", "model": "/models/eagle3"}),
     "speculative_config.method 'EAGLE3' is not a speculative method vLLM knows: set method to one of ngram,"),
    (dict(VLLM, speculative_config={"model": "/models/eagle3"}),
     "speculative_config has no method (vLLM would guess it from the drafter's directory name): "
     "set method to one of ngram,"),
], ids=["sglang-composed", "vllm-composed", "vllm-config", "vllm-config-without-method"])
def test_unknown_speculative_method_is_refused_before_anything_is_read(tmp_path, more, words):
    with pytest.raises(pl.InvalidInput) as err:
        pl.plan(params(state_dir=str(tmp_path), **more), _no_command,
                check_health=lambda url: pytest.fail("no health"))
    assert words in err.value.msg
    assert "eagle3" in err.value.msg.lower()


@pytest.mark.parametrize("more", [
    {"speculative": dict(DRAFT, algorithm="eagle3")},  # SGLang upper-cases it
    {"speculative": dict(DRAFT, algorithm="NEXTN")},  # SGLang's alias of EAGLE
    dict(VLLM, speculative=DRAFT),
    dict(VLLM, speculative_config={"method": "ngram", "num_speculative_tokens": 4}),
    dict(VLLM, speculative=DRAFT, speculative_config={"num_speculative_tokens": 2}),  # the composed method stays
    {"state": "stopped", "speculative": dict(DRAFT, algorithm="EAGLE4")},  # a stop does not launch
], ids=["sglang-lowercase", "sglang-alias", "vllm-composed", "vllm-config", "vllm-merged", "stop"])
def test_known_speculative_method_or_a_stop_passes(tmp_path, more):
    out = pl.plan(params(state_dir=str(tmp_path), **more), lambda argv: (0, "1.0\n", ""))
    assert out["decision"] in ("relaunch", "stop")


# Several configurations in one module run: each planned as alone, the service manager read once.
def test_plan_each_plans_every_item_in_order_and_reads_the_service_manager_once(tmp_path):
    reads = []

    def service_mgr():
        reads.append(1)
        return "systemd"

    items = [params(state_dir=str(tmp_path), supervisor="", max_running_requests=n) for n in (101, 102)]
    items.append(params(state_dir=str(tmp_path), supervisor="process", max_running_requests=103))
    out = pl.plan_each(items, lambda argv: (0, "0.5.23\n", ""), service_mgr=service_mgr)
    alone = [pl.plan(dict(item, service_mgr=item["service_mgr"] or "systemd"), lambda argv: (0, "0.5.23\n", ""))
             for item in items]
    assert out == [dict(plan, changed=False) for plan in alone]
    assert [o["argv"][o["argv"].index("--max-running-requests") + 1] for o in out] == ["101", "102", "103"]
    assert [o["supervisor"] for o in out] == ["systemd", "systemd", "process"] and reads == [1]


def test_plan_each_names_the_item_it_refuses(tmp_path):
    items = [params(state_dir=str(tmp_path)),
             params(state_dir=str(tmp_path), speculative=dict(DRAFT, algorithm="EAGLE4"))]
    with pytest.raises(pl.InvalidInput) as err:
        pl.plan_each(items, lambda argv: (0, "0.5.23\n", ""), numbered=True)
    assert err.value.msg.startswith("batch item 2: speculative.algorithm 'EAGLE4'"), err.value.msg
    assert err.value.fail_fields()["batch_item"] == 2
