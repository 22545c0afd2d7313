# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark results as llm_benchmark returns them, for the report tests (merge, Markdown, plot,
files): one shape of a level, in short (lv) and with every figure (full_lv), and a two-host swap."""


def lv(c, tps, p50, p99, accept=None):
    """A level with its throughput, TTFT p50/p99 and acceptance, 8 requests completed."""
    return {"concurrency": c, "output_tok_s": tps, "ttft_ms": {"p50": p50, "p99": p99},
            "accept_length": accept, "completed": 8, "failed": 0}


def full_lv(c, tps, rate=None, estimated=False):
    """A level with every figure a report shows (RATE: an open-loop level; ESTIMATED: ITL spread evenly)."""
    def q(p50, p99):
        return {"mean": p50, "p50": p50, "p90": p99, "p99": p99}
    return {"concurrency": c, "request_rate": rate, "output_tok_s": tps, "requests_per_s": 2.5,
            "goodput_req_s": 1.25, "server_tok_s": tps * 1.01, "server_ratio": 1.0,
            "itl_estimated": estimated, "ttft_ms": q(100.0, 200.0), "tpot_ms": q(15.0, 18.0),
            "itl_ms": q(14.0, 30.0), "latency_ms": q(1000.0, 1500.0), "accept_length": None,
            "completed": 8, "failed": 0}


# Two hosts, a base server against EAGLE-3 at concurrency 1 and 128 (the seeds' Kimi-K2.5 figures).
RESULTS = {
    "gpu01": {"baseline": {"levels": [lv(1, 63.6, 120.0, 130.0), lv(128, 2370.0, 900.0, 2100.0)]},
              "candidate": {"levels": [lv(1, 95.4, 110.0, 125.0, 3.1), lv(128, 2133.0, 950.0, 2300.0, 2.9)]}},
    "gpu02": {"baseline": {"levels": [lv(1, 64.0, 121.0, 131.0), lv(128, 2380.0, 910.0, 2110.0)]},
              "candidate": {"levels": [lv(1, 96.0, 111.0, 126.0, 3.0), lv(128, 2142.0, 951.0, 2301.0, 3.0)]}},
}
