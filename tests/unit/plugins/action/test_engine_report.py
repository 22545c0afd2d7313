# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""engine_report: the action's argument spec is the one its documentation stub describes, and
compare_engines.yml's preset offers exactly the variants the report knows."""

from __future__ import annotations

import yaml

from ansible_collections.gpufleet.serving.plugins.action import engine_report as action
from ansible_collections.gpufleet.serving.plugins.modules import engine_report as doc
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import preset
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare


def test_documented_options_are_the_action_spec():
    options = yaml.safe_load(doc.DOCUMENTATION)["options"]
    assert set(options) == set(action.ARGUMENT_SPEC)
    for name, spec in action.ARGUMENT_SPEC.items():
        assert options[name]["type"] == spec["type"], name
        assert options[name].get("required", False) == spec.get("required", False), name
        assert options[name].get("default") == spec.get("default"), name
        assert options[name].get("elements") == spec.get("elements"), name


def test_compare_preset_offers_the_report_variants():
    assert tuple(preset.compare_variants()) == compare.VARIANTS
