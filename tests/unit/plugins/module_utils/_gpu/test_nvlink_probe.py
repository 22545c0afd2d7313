# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nvlink_probe: a PCIe board has no links, an NVSwitch board's links end at switches, inactive links are skipped."""

from __future__ import annotations

import types

import pynvml
import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import nvlink_probe


def fake_nvml(active, remote=2, arch=9):
    """A pynvml whose GPU has links `active` ({link: active}); other links answer INVALID_ARGUMENT,
    and with active=None every NVLink call answers NOT_SUPPORTED."""
    def state(handle, link):
        if active is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if link not in active:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return active[link]

    return types.SimpleNamespace(
        NVMLError=pynvml.NVMLError,
        nvmlDeviceGetHandleByIndex=lambda i: "h%d" % i,
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId=b"00000000:18:00.0"),
        nvmlDeviceGetArchitecture=lambda h: arch,
        nvmlDeviceGetNvLinkState=state,
        nvmlDeviceGetNvLinkRemoteDeviceType=lambda h, link: remote,
        nvmlDeviceGetNvLinkRemotePciInfo=lambda h, link: types.SimpleNamespace(busId=b"00000000:A%d:00.0" % link))


@pytest.mark.parametrize("active, remote, links", [
    (None, 2, None),
    ({0: 1, 1: 0, 2: 1}, 2, [{"link": 0, "remote": "switch", "pci_bus_id": "00000000:A0:00.0"},
                             {"link": 2, "remote": "switch", "pci_bus_id": "00000000:A2:00.0"}]),
    ({0: 1}, 0, [{"link": 0, "remote": "gpu", "pci_bus_id": "00000000:A0:00.0"}]),
    ({0: 0}, 0, []),
])
def test_links(active, remote, links):
    rec = nvlink_probe.read(fake_nvml(active, remote), 0)
    assert rec == {"index": 0, "pci_bus_id": "00000000:18:00.0", "arch": 9, "links": links}
