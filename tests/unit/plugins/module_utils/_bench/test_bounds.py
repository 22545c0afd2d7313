# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The values llm_benchmark refuses, each named by its option; an option left out is no problem."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.bounds import value_problems


@pytest.mark.parametrize("bad, key", [
    ({"request_rates": [0]}, "request_rates"), ({"burstiness": -1.0}, "burstiness"), ({"burstiness": 0.0}, "burstiness"),
    ({"max_concurrency": 0}, "max_concurrency"), ({"range_ratio": 0.0}, "range_ratio"),
    ({"range_ratio": 1.5}, "range_ratio"), ({"repeats": 0}, "repeats"), ({"levels": [1, 0]}, "levels"),
    ({"requests_per_level": -4}, "requests_per_level"), ({"input_len": 0}, "input_len"),
    ({"warmup_requests": -1}, "warmup_requests"),
])
def test_each_refused_value_is_named_by_its_option(bad, key):
    named = [option for option, _why in value_problems(dict({"levels": [1], "input_len": 1, "output_len": 1}, **bad))]
    assert named == [key]


def test_options_left_out_are_no_problem():
    assert value_problems({}) == []
