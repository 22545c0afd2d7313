# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/plot.py: the swap report's PNG, a real image and the same bytes for the same input; its series by concurrency or by request rate."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import merge as rm
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import plot as rp
from tests.support.report_results import RESULTS, full_lv


def test_png_is_a_real_image():
    png = rp.render_png(rm.merge(RESULTS))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(png) > 20000
    assert png == rp.render_png(rm.merge(RESULTS))  # same input, same bytes


def test_plot_series_by_concurrency_or_by_rate():
    closed = rm.merge({"h": {"baseline": {"levels": [full_lv(1, 60.0), full_lv(8, 400.0)]}}})
    assert not rp._by_rate(closed)
    side = closed["hosts"]["h"]["baseline"]
    assert rp._series(side, "tpot_p99_ms") == ([1, 8], [18.0, 18.0])
    opened = rm.merge({"h": {"baseline": {"levels": [full_lv(4, 60.0, rate=1.0), full_lv(4, 90.0, rate=2.0)]}}})
    assert rp._by_rate(opened)
    assert rp._series(opened["hosts"]["h"]["baseline"], by_rate=True) == ([1.0, 2.0], [60.0, 90.0])
    assert rp.render_png(opened)[:8] == b"\x89PNG\r\n\x1a\n"
