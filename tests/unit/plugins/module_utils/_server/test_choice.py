# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_server/choice.py: which plan the _server role acts on (server_plan's, or its caller's)."""

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._server import choice as pl


@pytest.mark.parametrize("requested,mgr,expected", [
    ("", "systemd", "systemd"), ("", "tini", "process"), ("process", "systemd", "process"), ("systemd", "", "systemd"),
])
def test_supervisor_choice(requested, mgr, expected):
    assert pl.choose_supervisor(requested, mgr) == expected


SETTINGS = {"engine": "sglang", "instance": "sglang-30000", "log_dir": "/l", "state_dir": "/s", "supervisor": "",
            "model_path": "/m", "state": "stopped"}
GIVEN = {"decision": "relaunch", "running": True, "pid": 7, "dirs_ready": False, "argv": ["a"]}


def test_a_stop_reuses_the_last_plan_only_when_composed_for_the_same_files():
    key = pl.reuse_key(SETTINGS, "systemd")
    assert pl.choose(SETTINGS, "systemd", last={"p": 1}, last_of=key, reuse=True) == {
        "call": False, "plan": {"p": 1}, "of": key}
    assert pl.choose(SETTINGS, "systemd", last={"p": 1}, last_of=key, reuse=False)["call"]
    other = dict(key, instance="sglang-30001")
    assert pl.choose(SETTINGS, "systemd", last={"p": 1}, last_of=other, reuse=True)["call"]
    assert pl.choose(SETTINGS, "", last={"p": 1}, last_of=key, reuse=True)["call"]  # another service manager


def test_a_stop_takes_the_given_plan_as_it_is():
    """A stop reads only the plan's paths and supervisor: what a planned pass composed for the same settings."""
    assert pl.choose(SETTINGS, given=GIVEN) == {"call": False, "plan": GIVEN, "of": pl.reuse_key(SETTINGS, "")}
    assert pl.choose(SETTINGS, given={})["call"]  # none given (a routed stop reads what runs)
    assert pl.choose(SETTINGS)["call"]


def test_a_start_on_gpus_just_proven_free_takes_the_given_plan_with_nothing_running():
    start = dict(SETTINGS, state="started")
    chosen = pl.choose(start, given=GIVEN, verified_free=True)
    assert not chosen["call"] and chosen["plan"]["argv"] == ["a"]
    assert (chosen["plan"]["running"], chosen["plan"]["pid"], chosen["plan"]["keep"]) == (False, None, False)
    assert chosen["plan"]["dirs_ready"] is False
    assert pl.choose(start, given=GIVEN, verified_free=True, dirs_used=["/l", "/s"])["plan"]["dirs_ready"] is True
    # Not proven free, a kept server's plan, or a restart: server_plan reads what runs.
    assert pl.choose(start, given=GIVEN, verified_free=False)["call"]
    assert pl.choose(start, given=dict(GIVEN, decision="keep"), verified_free=True)["call"]
    assert pl.choose(dict(start, state="restarted"), given=GIVEN, verified_free=True)["call"]


def test_a_start_without_a_model_is_refused_naming_the_variable():
    with pytest.raises(pl.InvalidInput, match=r"^vllm_server_model_path is required to start a server \(state planned\)"):
        pl.choose(dict(SETTINGS, state="planned", model_path="", vars_prefix="vllm_server_"))
    assert pl.choose(dict(SETTINGS, model_path=""))["call"]  # a stop needs none
