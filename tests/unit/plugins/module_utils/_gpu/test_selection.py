# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The `gpus` option: parsing and checking against the host's GPU count."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import selection as sel


@pytest.mark.parametrize("value, expected", [
    (None, None),
    ("all", None),
    ("ALL", None),
    (" all ", None),
    (["all"], None),
    ([" All "], None),
    ("0,1, 2", [0, 1, 2]),
    ("3", [3]),
    (3, [3]),
    (0, [0]),
    ([3, 1, 3], [1, 3]),
    (["7", " 0 "], [0, 7]),
    ((4, 5), [4, 5]),
    ("1,,2,", [1, 2]),
])
def test_parse_gpus(value, expected):
    assert sel.parse_gpus(value) == expected


@pytest.mark.parametrize("value, words", [
    ("x", "'x' is not a GPU index"),
    (["0", "one"], "'one' is not a GPU index"),
    ([1.5], "is not a GPU index"),
    ([True], "is not a GPU index"),
    (["all", 1], "'all' is not a GPU index"),
    (-1, "-1 is negative"),
    ("0,-2", "-2 is negative"),
    ("", "the list is empty"),
    (" , ", "the list is empty"),
    ([], "the list is empty"),
])
def test_parse_gpus_refuses(value, words):
    with pytest.raises(InvalidInput, match="^gpus: ") as err:
        sel.parse_gpus(value)
    assert words in err.value.msg


@pytest.mark.parametrize("selected, count, expected", [
    (None, 8, list(range(8))),
    (None, 1, [0]),
    (None, 0, []),
    ([0, 7], 8, [0, 7]),
    ([0], 1, [0]),
])
def test_check_against(selected, count, expected):
    assert sel.check_against(selected, count) == expected


@pytest.mark.parametrize("selected, count, words", [
    ([0, 9], 8, "gpus: 9 not present on this host, which has 8 GPUs (indices 0-7)"),
    ([8, 9, 3], 8, "gpus: 8, 9 not present"),
    ([1], 1, "which has 1 GPU (indices 0-0)"),
])
def test_check_against_refuses(selected, count, words):
    with pytest.raises(InvalidInput) as err:
        sel.check_against(selected, count)
    assert words in err.value.msg
