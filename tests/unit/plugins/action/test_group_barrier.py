# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The group_barrier action run by `ansible` on localhost: a server on one host waits for nothing; the last node of a
group to come meets the others; one that waits alone fails naming the missing node."""

from __future__ import annotations

from tests.support.ansible import run_module


def test_one_host_waits_for_nothing_and_a_group_meets_or_names_who_is_missing(tmp_path):
    args = {"dir": str(tmp_path), "run": "r1", "step": "tp16-stop", "node": "h1", "timeout": 0.5}
    alone = run_module("group_barrier", dict(args, nodes=["h1"]))
    assert alone["_rc"] == 0 and alone["waited"] == 0.0 and not (tmp_path / "barriers").exists()
    missing = run_module("group_barrier", dict(args, nodes=["h1", "h2"]))
    assert missing["_rc"] != 0 and "node(s) h2 did not reach tp16-stop" in missing["msg"], missing
    met = run_module("group_barrier", dict(args, node="h2", nodes=["h1", "h2"]))
    assert met["_rc"] == 0 and met["nodes"] == ["h1", "h2"], met.get("msg")


def test_a_node_that_leaves_fails_its_peers_at_once_and_step_or_leave_is_required(tmp_path):
    args = {"dir": str(tmp_path), "run": "r1", "nodes": ["h1", "h2"], "timeout": 3600}
    left = run_module("group_barrier", dict(args, node="h2", leave="GPUs not verified free after tp16"))
    assert left["_rc"] == 0 and left["left"] == "h2" and left["changed"], left
    waiting = run_module("group_barrier", dict(args, node="h1", step="tp8x-launch"))
    assert waiting["_rc"] != 0 and "h2 of the group halted" in waiting["msg"], waiting
    neither = run_module("group_barrier", dict(args, node="h1"))
    assert neither["_rc"] != 0 and "give step" in neither["msg"], neither
