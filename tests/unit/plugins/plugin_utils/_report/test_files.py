# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/files.py: the report's files (the HTML one included) written, then unchanged; nothing in check mode;
without matplotlib no PNG and a note; a GPU count kept in the report."""

from __future__ import annotations

import builtins
import json
import pathlib

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import MissingLibrary
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import files as rf
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import merge as rm
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import plot as rp
from tests.support.report_results import RESULTS


def test_files_written_then_unchanged(tmp_path):
    out = rf.build_report(RESULTS, str(tmp_path / "r"), "T", "b", "c")
    assert out["changed"]
    assert json.loads(pathlib.Path(out["json_path"]).read_text())["fleet"]["baseline"]["peak_tok_s"] == 4750.0
    assert pathlib.Path(out["markdown_path"]).read_text() == out["markdown"]
    assert pathlib.Path(out["plot_path"]).read_bytes()[:4] == b"\x89PNG"
    page = pathlib.Path(out["html_path"]).read_text()
    assert out["html_path"].endswith("/r/benchmark.html") and "data:image/png;base64," in page
    assert "gpus_per_server" not in json.loads(pathlib.Path(out["json_path"]).read_text())
    again = rf.build_report(RESULTS, str(tmp_path / "r"), "T", "b", "c")
    assert not again["changed"]


def test_check_mode_writes_nothing(tmp_path):
    out = rf.build_report(RESULTS, str(tmp_path / "r"), "T", "b", "c", check_mode=True)
    assert out["changed"] and not (tmp_path / "r").exists()


def test_without_matplotlib_no_png_and_a_note(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(MissingLibrary):
        rp.render_png(rm.merge(RESULTS))
    out = rf.build_report(RESULTS, str(tmp_path / "r"), "T", "b", "c")
    assert out["plot_path"] is None
    assert not list((tmp_path / "r").glob("*.png"))
    assert any("matplotlib is not installed" in n for n in out["notes"])
    assert "matplotlib is not installed" in out["markdown"]
    assert "![" not in out["markdown"]
    page = pathlib.Path(out["html_path"]).read_text()
    assert "matplotlib is not installed" in page and "<img" not in page


def test_a_gpu_count_makes_the_first_panel_per_gpu(tmp_path):
    out = rf.build_report(RESULTS, str(tmp_path / "r"), "T", "b", "c", check_mode=True, gpus_per_server=8)
    assert out["report"]["gpus_per_server"] == 8
    assert {s["gpus"] for s in rp.series(out["report"])} == {8}
