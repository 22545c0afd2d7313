# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Engine-comparison records for the plot tests: three variants on two hosts, levels 1 to 16
run three times each (the 95% intervals llm_benchmark gives with repeats), the first two
variants with equal figures, each server on 8 GPUs."""


def level(c, tps, tpot, ttft=100.0, spread=0.05):
    def ci(mean):
        return {"n": 3, "mean": mean, "low": round(mean * (1 - spread), 3), "high": round(mean * (1 + spread), 3)}
    return {"concurrency": c, "output_tok_s": tps, "ttft_ms": {"p50": ttft, "p99": ttft * 2},
            "tpot_ms": {"p50": tpot, "p99": tpot * 1.5}, "itl_ms": {"p50": tpot, "p99": tpot * 2},
            "accept_length": None, "completed": 24, "failed": 0,
            "repeats": {"n": 3, "output_tok_s": ci(tps), "ttft_p50_ms": ci(ttft), "accept_length": None}}


def levels(scale):
    return [level(c, scale * 60.0 * c ** 0.8, 16.0 * c ** 0.25) for c in (1, 2, 4, 8, 16)]


def record(variant, engine, scale, gpus=8):
    return {"variant": variant, "engine": engine, "outcome": "ok", "bench": {"levels": levels(scale)},
            "teardown": {"gpus_selected": gpus, "kept": False}}


def records(engine):
    """{host: [record]}: variants 'same-a' and 'same-b' equal, 'faster' 1.5 times their tok/s."""
    return {h: [record("same-a", engine, 1.0), record("same-b", engine, 1.0), record("faster", engine, 1.5)]
            for h in ("h1", "h2")}
