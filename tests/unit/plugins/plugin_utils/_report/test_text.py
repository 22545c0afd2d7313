# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""text.py: the formatting rules every fleet line shares."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import text


@pytest.mark.parametrize("value, digits, shown", [
    (None, 1, "-"), ("", 1, "-"), ("None", 2, "-"), (" ", 1, "-"), (2.345, 2, "2.35"), ("3", 1, "3.0"), (0, 2, "0.00"),
])
def test_num(value, digits, shown):
    assert text.num(value, digits) == shown


def test_dig_stops_at_a_missing_level_or_a_non_mapping():
    data = {"a": {"b": {"c": 1}}, "x": [1]}
    assert text.dig(data, "a", "b", "c") == 1
    assert text.dig(data, "a", "z", "c") is None
    assert text.dig(data, "x", "y") is None
    assert text.dig(None, "a") is None


def test_succeeded_only_for_a_result_that_ran_and_did_not_fail():
    assert text.succeeded({"changed": False})
    assert not any(text.succeeded(r) for r in ({}, None, {"failed": True}, {"skipped": True}, {"unreachable": True}))


def test_short_command_drops_the_interpreters_directory_and_cuts_at_a_word():
    assert text.short_command("/usr/bin/python3 -m x") == "python3 -m x"
    long = "/opt/venv/bin/python3 -c from multiprocessing.resource_tracker import main;main(5) " + "x " * 40
    short = text.short_command(long)
    assert short.startswith("python3 -c from multiprocessing.resource_tracker") and short.endswith("...")
    assert len(short) <= 80


def test_cmdlines_names_what_has_none():
    assert text.cmdlines([{"cmdline": "a"}, {}, "junk"]) == ["a", "?", "?"]
    assert text.cmdlines(None) == []
