# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""llm_benchmark's telemetry against the simulated SGLang server on eight of nine fake GPUs: the server draws
power by its load (sim/README.md, "Power and energy"), the benchmark's energy per token matches the
fake counter's own integral (fakegpu.energy_between over the level's window), and an injected
thermal fault flags the level throttled with its reason. The server is started and stopped here."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import urllib.request

import pytest
from simlib import fakegpu

from tests.support import paths
from tests.support.net import free_port
from tests.support.polling import poll

SIM_PY = pathlib.Path(paths.SIM_PYTHON)
SIM_MODEL = pathlib.Path(paths.SIM_MODELS) / "kimi-k2.5-int4"
SERVER_GPUS = list(range(1, 9))
# The module's own entry: benchmark() with llm_benchmark's telemetry factory, in a fresh interpreter
# (the fake libnvidia-ml is found through LD_LIBRARY_PATH, read when a process starts).
RUN = r'''
import json, sys
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.run import benchmark
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.bench_telemetry import for_benchmark
print(json.dumps(benchmark(json.loads(sys.argv[1]), telemetry=for_benchmark)))
'''


def params(url, **kw):
    p = dict(base_url=url, model=None, levels=[8], requests_per_level=None, warmup_requests=None,
             input_len=16, output_len=64, api="completions", temperature=0.0, seed=0, request_timeout=60.0,
             max_error_samples=5, api_key=None, validate_certs=True, output=None, engine="auto",
             request_rates=None, burstiness=1.0, max_concurrency=None, range_ratio=1.0, ignore_eos=True,
             slo_ttft_ms=None, slo_tpot_ms=None, slo_e2e_ms=None, connection="keep_alive", progress_file=None,
             telemetry=None, gpus=None)
    p.update(kw)
    return p


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """A fake host of 9 H200s and the simulated SGLang (Kimi-K2.5, TP 8) on GPUs 1-8; GPU 0 stays idle."""
    if not (SIM_PY.exists() and SIM_MODEL.exists()):
        pytest.skip("the simulated SGLang server (sim/bin/sglang-python) is absent")
    tmp = tmp_path_factory.mktemp("telemetry")
    # A counter updated every 20 ms: these levels last a few seconds, and the sampler's bound is the update period
    # over the window (the kit's default, 100 ms, is the H200's: docs/telemetry.md).
    root = fakegpu.init(str(tmp / "gpu"), gpus=9, name="NVIDIA H200", memory_mib=143771, release_delay_ms=0,
                        energy_period_ms=20)
    port = free_port()
    log_path = tmp / "sim.log"
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=",".join(map(str, SERVER_GPUS)), **fakegpu.env(root))
    with open(str(log_path), "wb") as log:
        proc = subprocess.Popen(
            [str(SIM_PY), "-m", "sglang.launch_server", "--model-path", str(SIM_MODEL), "--host", "127.0.0.1",
             "--port", str(port), "--tp-size", "8", "--enable-metrics"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    url = "http://127.0.0.1:%d" % port

    def healthy():
        if proc.poll() is not None:
            raise AssertionError("simulated server died: %s" % log_path.read_text(errors="replace")[-3000:])
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        poll(healthy, 90, 0.05, "the simulated server to be ready: %s" % log_path)
        yield {"root": root, "url": url}
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the session this fixture created, led by its own child
        except ProcessLookupError:
            pass
        proc.wait(10)


def bench(fleet, **kw):
    env = dict(os.environ, PYTHONPATH=paths.COLLECTIONS, **fakegpu.env(fleet["root"]))
    out = subprocess.run([sys.executable, "-c", RUN, json.dumps(params(fleet["url"], **kw))], env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def test_energy_per_token_matches_the_fake_counters_own_integral(fleet):
    res = bench(fleet, requests_per_level=32, output_len=96)
    assert res["telemetry"]["enabled"] is True and res["telemetry"]["gpus"] == SERVER_GPUS
    assert "CUDA_VISIBLE_DEVICES" in res["telemetry"]["gpus_from"]
    lv = res["levels"][0]
    start, end = lv["telemetry"]["window_s"]
    exact = sum(fakegpu.energy_between(fleet["root"], g, start, end) for g in SERVER_GPUS)
    assert lv["energy_j"] == pytest.approx(exact, rel=0.005)
    assert lv["joules_per_output_token"] == pytest.approx(exact / lv["output_tokens"], rel=0.005)
    assert lv["output_tokens_per_joule"] == pytest.approx(lv["output_tokens"] / exact, rel=0.005)
    # Busy GPUs draw more than idle ones: the server told its GPUs (not GPU 0) its load.
    assert lv["power_avg_w"] > 8 * 70 * 1.5
    assert fakegpu.energy_between(fleet["root"], 0, start, end) == pytest.approx(70 * (end - start), rel=1e-3)
    assert lv["throttled"] is False and lv["throttle_reasons"] == []
    assert lv["sm_clock_min_mhz"] == 1980 and lv["telemetry"]["energy_source"] == "counter"


def test_a_thermal_fault_flags_the_level_throttled_with_its_reason(fleet):
    fakegpu.inject_health(fleet["root"], 2, "thermal")
    try:
        lv = bench(fleet, gpus=SERVER_GPUS, requests_per_level=8, output_len=32)["levels"][0]
    finally:
        fakegpu.set_health(fleet["root"], 2, clear=True)
    assert lv["throttled"] is True
    assert lv["throttle_reasons"] == ["hw_thermal_slowdown", "sm_clock_below_75pct_of_default"]
    assert lv["sm_clock_min_mhz"] == 1980 // 2 and lv["telemetry"]["violation_s"]["thermal"] > 0
    off = bench(fleet, telemetry=False, requests_per_level=8, output_len=16)
    assert off["telemetry"]["enabled"] is False and "energy_j" not in off["levels"][0]
