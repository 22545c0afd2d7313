# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_bench/workload/sample.py: the sample and the seed fix the items and their order."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.sample import load_workload


def test_sample_and_seed_fix_the_items_and_their_order():
    spec = {"source": "builtin", "sample": 20}
    one, two, other = (load_workload(spec, 11), load_workload(spec, 11), load_workload(spec, 12))
    assert [i.ref for i in one.items] == [i.ref for i in two.items]
    assert [i.ref for i in one.items] != [i.ref for i in other.items]
    assert one.info["sample"] == 20 and one.info["sha256"] == two.info["sha256"]
    assert one.items_for(3, 2) == one.items[3:5] + one.items[:3]
