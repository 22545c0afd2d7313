# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""group_barrier.py: each node marks its step and waits for every other node's mark, one run apart from another."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import group_barrier as gb
from tests.support.timing import FakeClock


def test_the_last_node_to_come_meets_the_others_at_once(tmp_path):
    clock = FakeClock()
    (tmp_path / "barriers" / "r1" / "tp16-stop").mkdir(parents=True)
    (tmp_path / "barriers" / "r1" / "tp16-stop" / "h1").write_text("1\n")
    out = gb.meet(str(tmp_path), "r1", "tp16-stop", "h2", ["h1", "h2"], 5, clock=clock, sleep=clock.sleep)
    assert out == {"waited": 0.0, "nodes": ["h1", "h2"]}
    assert (tmp_path / "barriers" / "r1" / "tp16-stop" / "h2").exists()


def test_a_node_that_never_comes_is_named_after_the_timeout_and_other_runs_do_not_count(tmp_path):
    clock = FakeClock()
    (tmp_path / "barriers" / "old" / "tp16-launch").mkdir(parents=True)
    (tmp_path / "barriers" / "old" / "tp16-launch" / "h2").write_text("1\n")
    with pytest.raises(InvalidInput, match=r"^h1: node\(s\) h2 did not reach tp16-launch within 3 s"):
        gb.meet(str(tmp_path), "new", "tp16-launch", "h1", ["h1", "h2"], 3, clock=clock, sleep=clock.sleep)
    assert clock.now >= 3


def test_a_node_outside_the_group_is_refused(tmp_path):
    with pytest.raises(InvalidInput, match="node h3 is not one of the nodes h1, h2"):
        gb.meet(str(tmp_path), "r", "s", "h3", ["h1", "h2"], 1)


def test_a_node_that_halted_fails_the_waiting_node_at_once_with_its_reason(tmp_path):
    clock = FakeClock()
    assert gb.leave(str(tmp_path), "r1", "h2", "GPUs not verified free after tp16\n") == {"left": "h2"}
    with pytest.raises(InvalidInput, match=r"^h1: node\(s\) h2 of the group halted, so they never reach tp8x-launch: "
                                           r"h2: GPUs not verified free after tp16$"):
        gb.meet(str(tmp_path), "r1", "tp8x-launch", "h1", ["h1", "h2"], 3600, clock=clock, sleep=clock.sleep)
    assert clock.now == 0.0
    # another run of the experiment does not see it
    other = FakeClock()
    with pytest.raises(InvalidInput, match="did not reach"):
        gb.meet(str(tmp_path), "r2", "tp8x-launch", "h1", ["h1", "h2"], 1, clock=other, sleep=other.sleep)
