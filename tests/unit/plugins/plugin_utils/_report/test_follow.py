# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/follow.py: one progress file per label, and a follow command that runs as printed."""

from __future__ import annotations

import shlex

import pytest

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import follow


@pytest.mark.parametrize("given, label, expected", [
    ("", None, "/var/tmp/gpufleet.serving/llm_benchmark-h1.progress"),
    ("", "tp8 eagle", "/var/tmp/gpufleet.serving/llm_benchmark-h1+tp8%20eagle.progress"),
    (None, "a/b", "/var/tmp/gpufleet.serving/llm_benchmark-h1+a%2Fb.progress"),
    ("/d/bench.progress", "baseline", "/d/bench+baseline.progress"),
    ("/d.x/bench", "v2", "/d.x/bench+v2"),
    ("/d/.hidden", "v2", "/d/.hidden+v2"),
    ("/d/bench.progress", "", "/d/bench.progress"),
])
def test_progress_file_has_one_file_per_label(given, label, expected):
    assert follow.progress_file(given, "h1", label) == expected


def test_no_two_hosts_and_labels_share_a_progress_file():
    # With '-' between them, both were llm_benchmark-a-b-c.progress.
    assert follow.progress_file("", "a", "b-c") != follow.progress_file("", "a-b", "c")


def test_follow_command_from_the_inventory():
    line = follow.follow_command("/var/tmp/p x.progress", "sim-h1", address="127.0.0.2", port=2222, user="root",
                                 key="/k/id", ssh_args=["-o StrictHostKeyChecking=no -o 'ProxyJump=a b'", "", None])
    assert shlex.split(line) == ["ssh", "-p", "2222", "-i", "/k/id", "-o", "StrictHostKeyChecking=no", "-o",
                                 "ProxyJump=a b", "root@127.0.0.2", "tail -f '/var/tmp/p x.progress'"]
    # The remote shell splits the last word once more: the path stays one word.
    assert shlex.split(shlex.split(line)[-1]) == ["tail", "-f", "/var/tmp/p x.progress"]


def test_follow_command_defaults_and_local():
    assert follow.follow_command("/p", "h1") == "ssh h1 'tail -f /p'"
    assert follow.follow_command("/p", "h1", address="None", port="", user=None) == "ssh h1 'tail -f /p'"
    assert follow.follow_command("/p", "h1", connection="local", address="10.0.0.1") == "tail -f /p"
