"""The fake NVML's power model (ROOT/nvml/power/gpu<N>) as the real nvidia-ml-py reads it:
the energy counter integrates the power a load draws, and a slowdown fault drops the SM
clock, sets its reason and counts violation time (sim/README.md, "Power and energy")."""
import json
import os
import subprocess
import sys
import time

from simlib import fakegpu

PY = sys.executable
# A client that reads GPU 0 as the telemetry sampler does, at each line it gets on stdin.
READ = r'''
import json, sys, time
import pynvml as n
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(0)
def ask(call, *args):
    try:
        return call(*args)
    except n.NVMLError as e:
        return "error %d" % e.value
for line in sys.stdin:
    print(json.dumps({
        "t": time.monotonic(),
        "energy_mj": ask(n.nvmlDeviceGetTotalEnergyConsumption, h),
        "power_mw": n.nvmlDeviceGetPowerUsage(h),
        "limit_mw": n.nvmlDeviceGetEnforcedPowerLimit(h),
        "sm": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
        "mem": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM),
        "sm_max": n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM),
        "sm_default": n.nvmlDeviceGetClock(h, n.NVML_CLOCK_SM, n.NVML_CLOCK_ID_APP_CLOCK_DEFAULT),
        "sm_default_app": n.nvmlDeviceGetDefaultApplicationsClock(h, n.NVML_CLOCK_SM),
        "reasons": n.nvmlDeviceGetCurrentClocksEventReasons(h),
        "temperature": n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
        "util": n.nvmlDeviceGetUtilizationRates(h).gpu,
        "viol_power_ns": n.nvmlDeviceGetViolationStatus(h, n.NVML_PERF_POLICY_POWER).violationTime,
        "viol_thermal_ns": n.nvmlDeviceGetViolationStatus(h, n.NVML_PERF_POLICY_THERMAL).violationTime,
    }), flush=True)
'''


class Reader:
    def __init__(self, root):
        self.proc = subprocess.Popen([PY, "-c", READ], env=dict(os.environ, **fakegpu.env(root)),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def read(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def test_energy_is_the_integral_of_the_power_a_load_draws(root):
    reader = Reader(root)
    try:
        idle = reader.read()
        assert idle["power_mw"] == 70000 and idle["sm"] == 885 and idle["reasons"] == 0x1 and idle["util"] == 0
        fakegpu.set_load(root, [0], 1.0)
        busy = reader.read()
        assert busy["power_mw"] == 700000 and busy["sm"] == 1980 and busy["reasons"] == 0 and busy["util"] == 100
        assert busy["temperature"] == 80 and busy["mem"] == 3201
        assert (busy["sm_max"], busy["sm_default"], busy["sm_default_app"], busy["limit_mw"]) == (1980, 1980, 1980, 700000)
        fakegpu.set_load(root, [0], 0.5)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            time.sleep(0.05)
        fakegpu.set_load(root, [0], 0.0)
        end = reader.read()
    finally:
        reader.close()
    counted = (end["energy_mj"] - idle["energy_mj"]) / 1000.0
    exact = fakegpu.energy_between(root, 0, idle["t"], end["t"])
    assert exact > 400  # about a second at 479.5 W
    # The counter updates every energy_period_ms: each end lags by at most that.
    period_s = fakegpu.read_config(root)["energy_period_ms"] / 1000.0
    assert abs(counted - exact) <= 2 * period_s * 700 + 0.002


def test_a_thermal_fault_drops_the_clock_sets_the_reason_and_counts_violation_time(root):
    fakegpu.set_load(root, [0], 1.0)
    reader = Reader(root)
    try:
        clean = reader.read()
        fakegpu.inject_health(root, 0, "thermal")
        hot = reader.read()
        time.sleep(0.2)
        later = reader.read()
    finally:
        reader.close()
    assert clean["viol_thermal_ns"] == 0 and clean["sm"] == 1980
    assert hot["reasons"] & 0x40 and hot["sm"] == 1980 // 2 and hot["temperature"] == 88
    assert hot["power_mw"] == 385000  # 70 W + half the 630 W span
    assert later["viol_thermal_ns"] - hot["viol_thermal_ns"] >= 150_000_000
    assert later["viol_power_ns"] == 0


def test_no_energy_fault_and_a_kit_without_power_files(root):
    fakegpu.set_fault(root, "no_energy")
    reader = Reader(root)
    try:
        assert reader.read()["energy_mj"] == "error 3"  # NVML_ERROR_NOT_SUPPORTED
        fakegpu.set_fault(root, "no_energy", clear=True)
        assert isinstance(reader.read()["energy_mj"], int)
        os.unlink(fakegpu.power_path(root, 0))
        gone = reader.read()
    finally:
        reader.close()
    assert gone["energy_mj"] == "error 3" and gone["power_mw"] == 0


def test_power_model_keys_are_checked(root):
    try:
        fakegpu.init(root, gpus=8, power_max_watts=1)
    except ValueError as exc:
        assert "power_max_w" in str(exc)
    else:
        raise AssertionError("an unknown power model key was accepted")
    fakegpu.init(root, gpus=8, energy_period_ms=100)
    assert fakegpu.read_config(root)["energy_period_ms"] == 100
