# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The benchmark_report action run by `ansible` on localhost: the report's files written under
dest_dir (the HTML one
included), then unchanged on a second run; in check mode nothing is written."""

from __future__ import annotations

import json

from tests.support.ansible import run_module


def lv(c, tps):
    return {"concurrency": c, "output_tok_s": tps, "ttft_ms": {"p50": 100.0, "p99": 120.0},
            "accept_length": None, "completed": 8, "failed": 0}


RESULTS = {"gpu01": {"baseline": {"levels": [lv(1, 60.0)]}, "candidate": {"levels": [lv(1, 90.0)]}}}


def test_the_report_is_written_once_and_check_mode_writes_nothing(tmp_path):
    args = {"results": RESULTS, "dest_dir": str(tmp_path / "r"), "title": "T", "gpus_per_server": 8}
    assert run_module("benchmark_report", args, check=True)["changed"] is True
    assert not (tmp_path / "r").exists()
    res = run_module("benchmark_report", args)
    assert res["_rc"] == 0 and res["changed"] is True, res.get("msg")
    assert json.loads((tmp_path / "r" / "benchmark.json").read_text())["fleet"]["candidate"]["peak_tok_s"] == 90.0
    assert (tmp_path / "r" / "benchmark.md").read_text().startswith("# T\n")
    assert res["html_path"] == str(tmp_path / "r" / "benchmark.html")
    assert (tmp_path / "r" / "benchmark.html").read_text().startswith("<!DOCTYPE html>")
    assert json.loads((tmp_path / "r" / "benchmark.json").read_text())["gpus_per_server"] == 8
    assert run_module("benchmark_report", args)["changed"] is False
