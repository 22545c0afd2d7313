# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_release's and gpu_info's input checks (_gpu/args.py): regex lists, finite numbers, users."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.args import finite, known_users, regex_list


@pytest.mark.parametrize("value, expected", [
    (["a{1,2}", "b"], ["a{1,2}", "b"]),
    ("a|b,c", ["a|b", "c"]),
    ("sglang::", ["sglang::"]),
    (None, []),
])
def test_regex_list_accepts(value, expected):
    assert regex_list(value, "patterns") == expected


@pytest.mark.parametrize("value", ["sglang::scheduler_TP[0-9]{1,2}", "x[,;]y", "(a,b)"])
def test_regex_list_refuses_a_split_that_cuts_a_regex(value):
    with pytest.raises(InvalidInput, match="pass patterns as a YAML list"):
        regex_list(value, "patterns")


@pytest.mark.parametrize("value", [[None], ["sglang::", None]])
def test_regex_list_refuses_a_null_item_instead_of_matching_the_word_none(value):
    with pytest.raises(InvalidInput, match="patterns: item %d is null" % len(value)):
        regex_list(value, "patterns")


@pytest.mark.parametrize("value, strict", [(float("nan"), False), (float("inf"), False), (-1.0, False),
                                           (0.0, True), (None, False)])
def test_finite_refuses(value, strict):
    with pytest.raises(InvalidInput, match=r"^timeout must be x \(got"):
        finite(value, "timeout must be x", strict=strict)


def test_known_users():
    known_users(["root"])
    with pytest.raises(InvalidInput, match="no such user on this host: 'gf_no_such_user'"):
        known_users(["root", "gf_no_such_user"])
