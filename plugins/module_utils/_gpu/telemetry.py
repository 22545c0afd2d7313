# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU telemetry during a benchmark level: energy, power, clocks and throttling, through NVML.

A Sampler is a forked child (as nvml.py's, so a hung NVML call never hangs the module, and
its work never takes the load client's CPU or GIL) that samples the given GPUs every
INTERVAL_S: the energy counter, power, SM clock, clocks-event reasons and utilisation at
every tick; memory clock, temperature, memory used and the violation counters every
SLOW_EVERY ticks and at both ends. The parent asks for nothing while a level runs: begin()
before it, end() after it (each within a deadline), then figures() reduces the samples to
the level's measurement window (window_figures; docs/telemetry.md defines each figure).

Nothing here fails a benchmark: a sampler that dies, hangs or cannot start, and a call a
GPU does not support, leave the figures None with a note saying why.
"""

from __future__ import annotations

import json
import select
import time
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._deps import missing
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.health import CLOCKS_EVENT_REASONS
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.nvml import NvmlSession, child_start

INTERVAL_S = 0.1  # 10 Hz, AIPerf's default GPU telemetry rate is 3.3 Hz
SLOW_EVERY = 10  # the slow readings once a second
# Reasons that mark a level throttled: HW slowdown, SW and HW thermal, HW power brake (the bits
# DCGM counts as clocks-event violations, health.CLOCKS_EVENT_VIOLATION_MASK). SW power cap
# (0x4) alone is a board running at its power limit, the normal state under full load.
THROTTLE_MASK = 0x8 | 0x20 | 0x40 | 0x80
# nvbench's --throttle-threshold (default 75): an SM clock below 75 % of the default clock is
# throttled (NVIDIA/nvbench, nvbench/detail/gpu_frequency.cuh); here a GPU's median busy clock of
# the level (_throttling says why not each sample).
CLOCK_FLOOR = 0.75
CLOCK_FLOOR_REASON = "sm_clock_below_75pct_of_default"
BUSY_UTIL = 50  # a sample counts as busy from this GPU utilisation (%) on
DEADLINE_S = 5.0

# A tick's sample of one GPU: t, energy_mj, power_mw, sm_mhz, reasons, util (None: not read).
# A slow sample adds mem_mhz, temperature_c, memory_used_bytes, viol_power_ns, viol_thermal_ns.
FAST = ("t", "energy_mj", "power_mw", "sm_mhz", "reasons", "util")
SLOW = ("mem_mhz", "temperature_c", "memory_used", "viol_power_ns", "viol_thermal_ns")


# ---------------------------------------------------------------- child side

def _reader(pynvml: Any, handle: Any) -> dict:
    """The calls of one GPU, each of them None once the GPU said it does not support it."""
    sm, mem = pynvml.NVML_CLOCK_SM, pynvml.NVML_CLOCK_MEM
    return {
        "energy_mj": lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(handle),
        "power_mw": lambda: pynvml.nvmlDeviceGetPowerUsage(handle),
        "sm_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(handle, sm),
        "reasons": lambda: pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle),
        "util": lambda: pynvml.nvmlDeviceGetUtilizationRates(handle).gpu,
        "mem_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(handle, mem),
        "temperature_c": lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
        "memory_used": lambda: pynvml.nvmlDeviceGetMemoryInfo(handle).used,
        "viol_power_ns": lambda: pynvml.nvmlDeviceGetViolationStatus(
            handle, pynvml.NVML_PERF_POLICY_POWER).violationTime,
        "viol_thermal_ns": lambda: pynvml.nvmlDeviceGetViolationStatus(
            handle, pynvml.NVML_PERF_POLICY_THERMAL).violationTime,
    }


def _default_sm_clock(pynvml: Any, handle: Any) -> tuple:
    """(MHz, the call that gave it): the default applications clock, else the maximum."""
    sm = pynvml.NVML_CLOCK_SM
    for name, call in (("nvmlDeviceGetClock(APP_CLOCK_DEFAULT)",
                        lambda: pynvml.nvmlDeviceGetClock(handle, sm, pynvml.NVML_CLOCK_ID_APP_CLOCK_DEFAULT)),
                       ("nvmlDeviceGetDefaultApplicationsClock", lambda: pynvml.nvmlDeviceGetDefaultApplicationsClock(handle, sm)),
                       ("nvmlDeviceGetMaxClockInfo", lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, sm))):
        try:
            value = int(call())
        except (pynvml.NVMLError, AttributeError):
            continue
        if value > 0:
            return value, name
    return None, None


class _Gpu:
    def __init__(self, pynvml: Any, index: int) -> None:
        self.pynvml = pynvml
        self.index = index
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        self.calls = _reader(pynvml, handle)
        self.unsupported = {}  # call -> the error it gave
        self.default_sm, self.default_sm_source = _default_sm_clock(pynvml, handle)

    def read(self, keys: tuple) -> list:
        out = []
        for key in keys:
            call = self.calls.get(key)
            if call is None:
                out.append(None)
                continue
            try:
                out.append(int(call()))
            except self.pynvml.NVMLError as exc:
                if isinstance(exc, (self.pynvml.NVMLError_NotSupported, self.pynvml.NVMLError_FunctionNotFound)):
                    self.calls[key] = None  # never asked again
                    self.unsupported[key] = str(exc)
                out.append(None)
            except AttributeError as exc:  # an nvidia-ml-py without the wrapper
                self.calls[key] = None
                self.unsupported[key] = "nvidia-ml-py has no %s" % exc
                out.append(None)
        return out


def _sample(gpus: list, tick: int) -> list:
    """One row a GPU, timed at its energy reading (perf_counter: CLOCK_MONOTONIC, the clock of the
    load client's records): the midpoint of the call, so a child descheduled between two GPUs'
    readings does not misplace the second GPU's counter in time."""
    slow = tick % SLOW_EVERY == 0
    rows = []
    for g in gpus:
        before = time.perf_counter()
        energy = g.read(FAST[1:2])
        now = (before + time.perf_counter()) / 2.0
        rows.append([now] + energy + g.read(FAST[2:]) + (g.read(SLOW) if slow else []))
    return rows


def _serve(req_fd: int, rep_fd: int, indices: list) -> None:  # pragma: no cover - runs in the child
    """Child: init NVML, then sample every INTERVAL_S and answer begin/end between ticks."""
    def hello(pynvml):
        gpus = [_Gpu(pynvml, i) for i in indices]
        return gpus, {"default_sm_mhz": [g.default_sm for g in gpus],
                      "default_sm_source": [g.default_sm_source for g in gpus]}

    started = child_start(req_fd, rep_fd, hello)
    if started is None:
        return
    reader, reply, unused, gpus = started
    samples, tick, sampling = [], 0, False
    next_at = time.monotonic()
    while True:
        wait = max(next_at - time.monotonic(), 0) if sampling else None
        if select.select([reader], [], [], wait)[0]:
            line = reader.readline()
            if not line:
                return
            op = json.loads(line).get("op")
            if op == "begin":
                samples, tick, sampling = [_sample(gpus, 0)], 1, True
                next_at = time.monotonic() + INTERVAL_S
                reply({"ok": True})
            elif op == "end":
                samples.append(_sample(gpus, 0))
                sampling = False
                reply({"samples": samples, "unsupported": [g.unsupported for g in gpus]})
                samples = []
            continue
        samples.append(_sample(gpus, tick))
        tick += 1
        next_at += INTERVAL_S
        if next_at < time.monotonic():  # fell behind (a slow call): no burst to catch up
            next_at = time.monotonic() + INTERVAL_S


# --------------------------------------------------------------- parent side

class Sampler(NvmlSession):
    """One sampling child for the benchmark's lifetime (NvmlSession's fork, pipes and deadline)."""

    def __init__(self, indices: list, timeout: float = DEADLINE_S) -> None:
        self.indices = list(indices)
        self.dead = None  # why the sampler stopped, once it did
        super().__init__(timeout)

    def _start_child(self, req_r: int, rep_w: int) -> None:  # pragma: no cover - runs in the child
        _serve(req_r, rep_w, self.indices)

    def _hello(self, hello: dict) -> None:
        self.default_sm_mhz = hello["default_sm_mhz"]
        self.default_sm_source = hello["default_sm_source"]

    def _ask(self, op: str) -> dict | None:
        if self.dead:
            return None
        try:
            self._req.write(json.dumps({"op": op}) + "\n")
            self._req.flush()
            return self._read("telemetry %s" % op)
        except Exception as exc:  # died, hung (NvmlTimeout), EPIPE: the figures go missing, the run goes on
            self.dead = "the telemetry sampler stopped at %s: %s" % (op, getattr(exc, "msg", None) or exc)
            self.kill()
            return None

    def begin(self) -> bool:
        return self._ask("begin") is not None

    def end(self) -> dict | None:
        return self._ask("end")


def start(indices: list) -> tuple:
    """(a Sampler, None) or (None, why telemetry is off)."""
    if missing("nvidia-ml-py"):
        return None, "nvidia-ml-py is not installed on this host"
    try:
        return Sampler(indices), None
    except Exception as exc:  # NvmlError from init, or fork trouble: no telemetry, the run goes on
        return None, "NVML could not start: %s" % (getattr(exc, "msg", None) or exc)


# ------------------------------------------------------------ the figures

def _interp(points: list, t: float) -> float | None:
    """The value at t of a series [(t, value)] sorted by time, linearly between samples."""
    if not points or t < points[0][0] or t > points[-1][0]:
        return None
    for (t0, v0), (t1, v1) in zip(points, points[1:]):
        if t0 <= t <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (t - t0) / (t1 - t0)
    return points[-1][1]


def _integral(points: list, start: float, end: float) -> float | None:
    """Trapezoid integral over [start, end] of a series [(t, value)]. From each edge to the first
    sample inside, the inside sample's value holds: a window's edges are where its load starts
    and stops, so the sample outside may already read another power."""
    if not points or start < points[0][0] or end > points[-1][0]:
        return None
    inside = [p for p in points if start < p[0] < end]
    if inside:
        cut = [(start, inside[0][1])] + inside + [(end, inside[-1][1])]
    else:
        cut = [(start, _interp(points, start)), (end, _interp(points, end))]
    return sum((t1 - t0) * (v0 + v1) / 2.0 for (t0, v0), (t1, v1) in zip(cut, cut[1:]))


def _median(values: list) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2.0


def _column(samples: list, gpu: int, key: str) -> list:
    """[(t, value)] of one GPU's readings of KEY, the ticks without it left out."""
    pos = (FAST + SLOW).index(key)
    return [(tick[gpu][0], tick[gpu][pos]) for tick in samples
            if len(tick[gpu]) > pos and tick[gpu][pos] is not None]


def _delta(points: list, start: float, end: float) -> float | None:
    a, b = _interp(points, start), _interp(points, end)
    return None if a is None or b is None else b - a


def _energy_at(energy: list, power: dict, t: float) -> float | None:
    """The counter (mJ) at t between two samples. When the power read at the two differs, the
    load changed between them (a level's first requests, its last one ending): the counter's
    growth then places one step from the first power to the second, and t is read on that
    step; else linearly. Linear alone is off by up to a quarter of an interval at the power step."""
    for (t0, e0), (t1, e1) in zip(energy, energy[1:]):
        if not t0 <= t <= t1 or t1 == t0:
            continue
        p0, p1 = power.get(t0), power.get(t1)
        if p0 is None or p1 is None or abs(p0 - p1) < 0.02 * max(p0, p1, 1):
            return e0 + (e1 - e0) * (t - t0) / (t1 - t0)
        # e1 - e0 = p0 (x - t0) + p1 (t1 - x) in mW x s = mJ: x is where the power stepped.
        x = t0 + ((e1 - e0) - p1 * (t1 - t0)) / (p0 - p1)
        x = min(max(x, t0), t1)
        return e0 + p0 * (t - t0) if t <= x else e1 - p1 * (t1 - t)
    return None


def _energy(samples: list, n: int, start: float, end: float, notes: list) -> tuple:
    """(joules of all GPUs over [start, end], source): the counter's delta, else power integrated."""
    total, sources = 0.0, set()
    for g in range(n):
        energy, power = _column(samples, g, "energy_mj"), dict(_column(samples, g, "power_mw"))
        a, b = _energy_at(energy, power, start), _energy_at(energy, power, end)
        delta = None if a is None or b is None else b - a
        if delta is not None and delta >= 0:
            total += delta / 1000.0
            sources.add("counter")
            continue
        power = _column(samples, g, "power_mw")
        joules = _integral(power, start, end)
        if joules is None:
            notes.append("GPU %d: neither the energy counter nor power could be read over the window" % g)
            return None, None
        notes.append("GPU %d: no energy counter (nvmlDeviceGetTotalEnergyConsumption); its energy is power "
                     "integrated over %d samples" % (g, len(power)))
        total += joules / 1000.0
        sources.add("power_integral")
    return total, "+".join(sorted(sources))


def _window_ticks(samples: list, start: float, end: float) -> list:
    return [tick for tick in samples if start <= tick[0][0] <= end]


def _throttling(ticks: list, n: int, default_sm: list) -> tuple:
    """(throttled, reasons, busy SM clocks) over the window's ticks.

    The clock rule takes each GPU's median busy SM clock, not its lowest sample: an H200 under a
    bf16 matmul at its 700 W cap (SW power cap, 0x4, the normal state at full load) runs 1230-1560 MHz
    against its 1980 MHz default, median 1500 (76 %), and single samples below 75 % would mark every
    such level throttled (docs/real-gpu.md, 2026-12-05)."""
    seen, clocks = set(), []
    per_gpu = [[] for unused in range(n)]
    for tick in ticks:
        for g in range(n):
            row = dict(zip(FAST, tick[g]))
            reasons = row["reasons"]
            if reasons is not None:
                for bit, name in CLOCKS_EVENT_REASONS.items():
                    if reasons & bit & THROTTLE_MASK:
                        seen.add(name)
            busy = row["util"] is None or row["util"] >= BUSY_UTIL
            if busy and row["sm_mhz"] is not None:
                clocks.append(row["sm_mhz"])
                per_gpu[g].append(row["sm_mhz"])
    if any(default_sm[g] and per_gpu[g] and _median(per_gpu[g]) < CLOCK_FLOOR * default_sm[g] for g in range(n)):
        seen.add(CLOCK_FLOOR_REASON)
    return bool(seen), sorted(seen), clocks


def _peak_power(ticks: list, n: int) -> float | None:
    """The highest sum of the GPUs' power at one tick, in W."""
    peak = None
    for tick in ticks:
        watts = [tick[g][2] for g in range(n)]
        if None not in watts:
            peak = max(peak or 0.0, sum(watts) / 1000.0)
    return peak


def _maximum(samples: list, n: int, key: str, scale: float = 1.0) -> float | None:
    values = [v for g in range(n) for unused, v in _column(samples, g, key)]
    return round(max(values) / scale, 1) if values else None


MISSING = {"energy_j": None, "joules_per_output_token": None, "output_tokens_per_joule": None,
           "power_avg_w": None, "power_peak_w": None, "sm_clock_min_mhz": None, "sm_clock_median_mhz": None,
           "throttled": None, "throttle_reasons": None}


def missing_figures(gpus: list, why: str) -> dict:
    """A level's figures when no samples exist: every one None, and why."""
    return dict(MISSING, telemetry={"gpus": list(gpus), "samples": 0, "notes": [why]})


def window_figures(reply: dict, gpus: list, default_sm: list, start: float | None, end: float | None,
                   output_tokens: float) -> dict:
    """A level's telemetry figures over its measurement window [start, end] (perf_counter seconds)."""
    samples = reply["samples"]
    n = len(gpus)
    notes = ["GPU %d: %s not supported (%s)" % (gpus[g], key, why)
             for g, calls in enumerate(reply.get("unsupported") or []) for key, why in sorted(calls.items())]
    if start is None or end is None or end <= start:
        return dict(missing_figures(gpus, "the level has no measurement window"))
    ticks = _window_ticks(samples, start, end)
    energy, source = _energy(samples, n, start, end, notes)
    throttled, reasons, clocks = _throttling(ticks, n, default_sm)
    out = dict(MISSING)
    if energy is not None:
        out["energy_j"] = round(energy, 3)
        out["power_avg_w"] = round(energy / (end - start), 1)
        if output_tokens:
            out["joules_per_output_token"] = round(energy / output_tokens, 6)
        if energy > 0:
            out["output_tokens_per_joule"] = round(output_tokens / energy, 4)
    peak = _peak_power(ticks, n)
    out["power_peak_w"] = None if peak is None else round(peak, 1)
    if clocks:
        out["sm_clock_min_mhz"] = min(clocks)
        out["sm_clock_median_mhz"] = _median(clocks)
    if ticks:
        out["throttled"], out["throttle_reasons"] = throttled, reasons
    else:
        notes.append("no sample fell inside the window")
    violation = {}
    for key, name in (("viol_power_ns", "power"), ("viol_thermal_ns", "thermal")):
        deltas = [_delta(_column(samples, g, key), samples[0][g][0], samples[-1][g][0]) for g in range(n)]
        violation[name] = None if None in deltas else round(max(deltas) / 1e9, 3)
    out["telemetry"] = {
        "gpus": list(gpus), "samples": len(samples), "interval_ms": round(INTERVAL_S * 1000),
        "window_s": [round(start, 6), round(end, 6)], "energy_source": source,
        "sm_clock_default_mhz": list(default_sm), "mem_clock_min_mhz": _minimum(samples, n, "mem_mhz"),
        "temperature_max_c": _maximum(samples, n, "temperature_c"),
        "memory_used_max_mib": _maximum(samples, n, "memory_used", 1024.0 * 1024.0),
        "violation_s": violation, "notes": notes,
    }
    return out


def _minimum(samples: list, n: int, key: str) -> float | None:
    values = [v for g in range(n) for unused, v in _column(samples, g, key)]
    return min(values) if values else None
