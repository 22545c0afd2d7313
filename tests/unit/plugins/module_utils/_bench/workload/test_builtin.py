# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_bench/workload/builtin.py: the built-in prompt set."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.builtin import BUILTIN


def test_builtin_set_has_eight_categories_of_ten_with_multi_turn_items():
    assert len(BUILTIN) >= 8 and all(len(prompts) >= 10 for prompts in BUILTIN.values())
    assert all(any(not isinstance(p, str) for p in prompts) for prompts in BUILTIN.values())
