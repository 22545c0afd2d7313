# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Telemetry's figures: the window reduction on hand-made samples, then the sampler on the fake GPU
kit through the real nvidia-ml-py, checked against the kit's own energy integral (fakegpu.energy_between)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from simlib import fakegpu

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import telemetry
from tests.support.paths import COLLECTIONS, SIM


def tick(t, energy_mj, power_mw, sm=1980, reasons=0, util=100):
    return [t, energy_mj, power_mw, sm, reasons, util]


def steady(n=21, watts=500.0, gpus=1, **kw):
    """N ticks 0.1 s apart of GPUs drawing WATTS each, the counter following."""
    return [[tick(i * 0.1, i * 0.1 * watts * 1000, watts * 1000, **kw) for unused in range(gpus)] for i in range(n)]


def figures(samples, gpus=(0,), default=(1755,), start=0.5, end=1.5, tokens=1000, unsupported=None):
    return telemetry.window_figures({"samples": samples, "unsupported": unsupported or [{}] * len(gpus)},
                                    list(gpus), list(default), start, end, tokens)


def test_energy_is_the_counters_delta_over_the_window_and_per_token_follows():
    got = figures(steady(gpus=2), gpus=(0, 1), default=(1755, 1755))
    assert got["energy_j"] == pytest.approx(1000.0)  # 2 GPUs x 500 W x 1 s
    assert got["joules_per_output_token"] == pytest.approx(1.0)
    assert got["output_tokens_per_joule"] == pytest.approx(1.0)
    assert got["power_avg_w"] == pytest.approx(1000.0) and got["power_peak_w"] == pytest.approx(1000.0)
    assert got["sm_clock_min_mhz"] == 1980 and got["sm_clock_median_mhz"] == 1980
    assert got["throttled"] is False and got["throttle_reasons"] == []
    assert got["telemetry"]["energy_source"] == "counter"


def test_a_power_step_between_two_samples_is_placed_by_the_counter():
    # 700 W until t = 1.03, then 70 W: the window ends at the step, between samples 1.0 and 1.1.
    samples = []
    for i in range(16):
        t = i * 0.1
        e = 700.0 * min(t, 1.03) + 70.0 * max(t - 1.03, 0.0)
        samples.append([tick(t, e * 1000, 700000 if t < 1.03 else 70000)])
    got = figures(samples, start=0.2, end=1.03, tokens=100)
    assert got["energy_j"] == pytest.approx(700.0 * 0.83, rel=1e-6)


def test_throttled_by_a_reason_or_by_a_clock_below_75_percent_of_default():
    hot = steady(reasons=0x40)
    assert figures(hot)["throttled"] is True and figures(hot)["throttle_reasons"] == ["hw_thermal_slowdown"]
    slow = steady(sm=1300)  # 74% of 1755
    assert figures(slow)["throttle_reasons"] == [telemetry.CLOCK_FLOOR_REASON]
    # at the power cap (SW power cap alone) and idle samples at a low clock: not throttled
    capped = steady(reasons=0x4)
    idle = steady(sm=345, util=0, reasons=0x1)
    assert figures(capped)["throttled"] is False and figures(idle)["throttled"] is False
    assert figures(idle)["sm_clock_min_mhz"] is None


def test_a_power_capped_h200_dipping_below_75_percent_is_judged_by_its_median_clock():
    # The H200 of docs/real-gpu.md under a bf16 matmul at its 700 W cap: 1230-1560 MHz against 1980.
    def capped(clocks):
        return [[tick(i * 0.1, i * 70000.0, 700000.0, sm=clocks[i % len(clocks)], reasons=0x4)] for i in range(21)]
    real = figures(capped([1230, 1500, 1545, 1470, 1560]), default=(1980,))
    assert real["throttled"] is False and real["sm_clock_min_mhz"] == 1230
    low = figures(capped([1230, 1400, 1470]), default=(1980,))  # median 1400: 71 %
    assert low["throttle_reasons"] == [telemetry.CLOCK_FLOOR_REASON]


def test_no_counter_integrates_power_and_says_so():
    samples = steady()
    for row in samples:
        row[0][1] = None
    got = figures(samples, unsupported=[{"energy_mj": "Not Supported"}])
    assert got["energy_j"] == pytest.approx(500.0)
    assert got["telemetry"]["energy_source"] == "power_integral"
    assert any("power integrated" in note for note in got["telemetry"]["notes"])
    assert any("energy_mj not supported" in note for note in got["telemetry"]["notes"])


def test_missing_figures_are_none_with_the_reason():
    got = telemetry.missing_figures([0, 1], "the telemetry sampler stopped")
    assert all(got[k] is None for k in telemetry.MISSING)
    assert got["telemetry"]["notes"] == ["the telemetry sampler stopped"]
    assert figures(steady(), start=None, end=None)["energy_j"] is None


# ---- on the fake GPU kit, through the real nvidia-ml-py in a fresh interpreter

RUN = r'''
import json, os, signal, sys, time
from simlib import fakegpu
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import telemetry
args = json.loads(sys.argv[1])
root, gpus = args["root"], [0, 1]
sampler = telemetry.Sampler(gpus)
fakegpu.set_load(root, gpus, 0.8)  # busy before the window opens, as a level after its warm-up
if args.get("fault"):
    fakegpu.inject_health(root, 1, args["fault"])
assert sampler.begin()
time.sleep(0.25)
start = time.perf_counter()
time.sleep(args.get("seconds", 2.0))
end = time.perf_counter()
fakegpu.set_load(root, gpus, 0.0)
time.sleep(0.25)
if args.get("kill"):
    os.kill(sampler.pid, signal.SIGKILL)
reply = sampler.end()
fig = (telemetry.window_figures(reply, gpus, sampler.default_sm_mhz, start, end, 1000) if reply
       else telemetry.missing_figures(gpus, sampler.dead))
exact = sum(fakegpu.energy_between(root, g, start, end) for g in gpus)
print(json.dumps({"fig": fig, "exact": exact}))
'''


@pytest.fixture(scope="module")
def fakenvml_lib(tmp_path_factory):
    """This checkout's fake NVML, built once into a private directory (never the shared build/)."""
    return fakegpu.build(str(tmp_path_factory.mktemp("fakenvml")))


@pytest.fixture
def root(tmp_path, fakenvml_lib):
    return fakegpu.init(str(tmp_path / "gpu"), gpus=2, lib=fakenvml_lib)


def sample_run(root, **args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([COLLECTIONS, SIM]), **fakegpu.env(root))
    out = subprocess.run([sys.executable, "-c", RUN, json.dumps(dict(args, root=root))], env=env,
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_sampler_measures_the_kits_own_energy_integral_within_half_a_percent(root):
    got = sample_run(root)
    fig = got["fig"]
    assert fig["energy_j"] == pytest.approx(got["exact"], rel=0.005)
    assert fig["power_avg_w"] == pytest.approx(2 * 611.8, rel=0.01)  # 70 + 630 x (0.3 + 0.7 x 0.8) each
    assert fig["throttled"] is False and fig["sm_clock_min_mhz"] == 1980
    tel = fig["telemetry"]
    assert tel["energy_source"] == "counter" and tel["samples"] >= 20 and tel["sm_clock_default_mhz"] == [1980, 1980]
    assert tel["temperature_max_c"] == 71 and tel["violation_s"] == {"power": 0.0, "thermal": 0.0}


@pytest.mark.parametrize("fault, reason, violation", [
    ("thermal", "hw_thermal_slowdown", "thermal"),
    ("power_brake", "hw_power_brake_slowdown", "power"),
])
def test_an_injected_slowdown_is_flagged_with_its_reason(root, fault, reason, violation):
    fig = sample_run(root, fault=fault, seconds=1.0)["fig"]
    assert fig["throttled"] is True
    assert fig["throttle_reasons"] == sorted([reason, telemetry.CLOCK_FLOOR_REASON])
    assert fig["sm_clock_min_mhz"] == 1980 // 2
    assert fig["telemetry"]["violation_s"][violation] > 0.5


def test_a_dead_sampler_marks_the_figures_missing(root):
    fig = sample_run(root, kill=True, seconds=0.5)["fig"]
    assert fig["energy_j"] is None and fig["throttled"] is None
    assert "telemetry sampler stopped" in fig["telemetry"]["notes"][0]


def test_no_energy_counter_falls_back_to_power(root):
    fakegpu.set_fault(root, "no_energy")
    got = sample_run(root, seconds=1.0)
    assert got["fig"]["telemetry"]["energy_source"] == "power_integral"
    assert got["fig"]["energy_j"] == pytest.approx(got["exact"], rel=0.01)
