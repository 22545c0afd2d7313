# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_experiment/preset.py: compare_engines.yml's and swap_to_eagle.yml's experiments, one variant per
engine of the registry (and its EAGLE-3 twin), unknown labels and engines refused naming the known."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import preset


def test_every_engine_and_its_eagle3_twin_is_a_compare_variant():
    names = registry.names()
    variants = preset.compare_variants()
    assert list(variants) == names + [n + "+eagle3" for n in names]
    assert variants[names[0] + "+eagle3"]["engine"] == names[0] and variants[names[0] + "+eagle3"]["speculative"]
    assert "speculative" not in variants[names[0]]


def test_the_compare_experiment_keeps_the_order_and_refuses_unknown_labels():
    exp = preset.compare_experiment([registry.names()[1], registry.DEFAULT], benchmark={"levels": [1]})
    assert [v["name"] for v in exp["variants"]] == [registry.names()[1], registry.DEFAULT]
    assert (exp["name"], exp["reference"], exp["benchmark"]) == ("compare_engines", registry.DEFAULT, {"levels": [1]})
    with pytest.raises(ValueError, match="compare_variants: unknown variant 'tgi'; the variants are "):
        preset.compare_experiment(["tgi"])
    with pytest.raises(ValueError, match="must be a non-empty list"):
        preset.compare_experiment([])


def test_the_swap_experiment_is_baseline_then_candidate_of_one_engine():
    exp = preset.swap_experiment(registry.names()[1])
    engine = registry.names()[1]
    assert [(v["name"], v["engine"]) for v in exp["variants"]] == [("baseline", engine), ("candidate", engine)]
    assert exp["reference"] == "baseline" and exp["variants"][1]["speculative"]
    alone = preset.swap_experiment(baseline=False)
    assert [v["name"] for v in alone["variants"]] == ["candidate"] and alone["reference"] == "candidate"
    with pytest.raises(ValueError, match="engine must be one of .*, not 'tgi'"):
        preset.swap_experiment("tgi")
