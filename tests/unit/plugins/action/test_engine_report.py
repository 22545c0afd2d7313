# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine_report action: compare_engines.yml's preset offers exactly the variants the report knows;
empty records are refused and nothing is written (`ansible` on localhost). Its documentation against
its ARGUMENT_SPEC: tests/unit/plugins/modules/test_engine_report.py."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import preset
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import compare
from tests.support.ansible import run_module


def test_empty_records_are_refused(tmp_path):
    res = run_module("engine_report", {"records": {}, "dest_dir": str(tmp_path)})
    assert res["_rc"] != 0 and res["msg"] == "records is empty"
    assert list(tmp_path.iterdir()) == []


def test_compare_preset_offers_the_report_variants():
    assert tuple(preset.compare_variants()) == compare.VARIANTS
