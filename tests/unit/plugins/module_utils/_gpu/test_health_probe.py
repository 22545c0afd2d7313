# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""health_probe's readings: a call the driver or nvidia-ml-py lacks is a reading, never a lost GPU."""

from __future__ import annotations

import types

import pynvml

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import health_probe


def stub(**calls):
    """A pynvml with only `calls` (and its real error classes)."""
    return types.SimpleNamespace(NVMLError=pynvml.NVMLError,
                                 NVMLError_FunctionNotFound=pynvml.NVMLError_FunctionNotFound, **calls)


def missing_in_driver(*args):
    raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)


def test_a_wrapper_nvidia_ml_py_lacks_reads_as_function_not_found():
    got = health_probe._ask(stub(), "nvmlDeviceGetSomethingNew", "handle")
    assert got["code"] == 13 and got["err"].startswith("nvidia-ml-py has no ")


def test_an_nvml_error_keeps_its_code_and_words():
    def not_supported(handle):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
    assert health_probe._ask(stub(f=not_supported), "f", "h") == {"err": "Not Supported", "code": 3}
    assert health_probe._ask(stub(f=lambda h: 7), "f", "h") == {"ok": 7}


def test_first_falls_back_to_the_older_or_newer_call():
    old_driver = stub(nvmlDeviceGetCurrentClocksEventReasons=missing_in_driver,
                      nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: 0x40)
    assert health_probe._ask(old_driver, health_probe._first, old_driver,
                             ("nvmlDeviceGetCurrentClocksEventReasons", "h"),
                             ("nvmlDeviceGetCurrentClocksThrottleReasons", "h")) == {"ok": 0x40}
    newer_wrapper = stub(nvmlDeviceGetTemperatureV=lambda h, sensor: 41)  # the deprecated call removed
    assert health_probe._ask(newer_wrapper, health_probe._first, newer_wrapper,
                             ("nvmlDeviceGetTemperature", "h", 0), ("nvmlDeviceGetTemperatureV", "h", 0)) == {"ok": 41}
    neither = stub(a=missing_in_driver, b=missing_in_driver)
    assert health_probe._ask(neither, health_probe._first, neither, ("a",), ("b",))["code"] == 13
