# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/plot.py: the swap report's PNG, a real image and the same bytes for the same input; its series by concurrency or by request rate."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import merge as rm
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import plot as rp


def lv(c, tps, p50, p99, accept=None):
    return {"concurrency": c, "output_tok_s": tps, "ttft_ms": {"p50": p50, "p99": p99},
            "accept_length": accept, "completed": 8, "failed": 0}


RESULTS = {
    "gpu01": {"baseline": {"levels": [lv(1, 63.6, 120.0, 130.0), lv(128, 2370.0, 900.0, 2100.0)]},
              "candidate": {"levels": [lv(1, 95.4, 110.0, 125.0, 3.1), lv(128, 2133.0, 950.0, 2300.0, 2.9)]}},
    "gpu02": {"baseline": {"levels": [lv(1, 64.0, 121.0, 131.0), lv(128, 2380.0, 910.0, 2110.0)]},
              "candidate": {"levels": [lv(1, 96.0, 111.0, 126.0, 3.0), lv(128, 2142.0, 951.0, 2301.0, 3.0)]}},
}


def full_lv(c, tps, rate=None, estimated=False):
    def q(p50, p99):
        return {"mean": p50, "p50": p50, "p90": p99, "p99": p99}
    return {"concurrency": c, "request_rate": rate, "output_tok_s": tps, "requests_per_s": 2.5,
            "goodput_req_s": 1.25, "server_tok_s": tps * 1.01, "server_ratio": 1.0,
            "itl_estimated": estimated, "ttft_ms": q(100.0, 200.0), "tpot_ms": q(15.0, 18.0),
            "itl_ms": q(14.0, 30.0), "latency_ms": q(1000.0, 1500.0), "accept_length": None,
            "completed": 8, "failed": 0}


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
