# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A GPU's architecture and NVLink links, read in the NVML child (nvml.py runs read()).

What gpu_release's reset_stuck decides the reset's peer set from (_gpu/reset.py): each
active link's far end (another GPU, by PCI bus id, or an NVSwitch). `links` is None where
the GPU has no NVLink (NVML answers NOT_SUPPORTED: a PCIe board).
"""

from __future__ import annotations

from typing import Any

REMOTE = {0: "gpu", 1: "npu", 2: "switch"}  # nvmlNvLinkDeviceType_t; anything else is "unknown"
NOT_SUPPORTED, INVALID_ARGUMENT = 3, 2  # NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_INVALID_ARGUMENT
MAX_LINKS = 36  # NVML_NVLINK_MAX_LINKS


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def read(pynvml: Any, index: int) -> dict:
    """{index, pci_bus_id, arch (None when NVML cannot say), links: [{link, remote, pci_bus_id}] or None}."""
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    rec = {"index": index, "pci_bus_id": _text(pynvml.nvmlDeviceGetPciInfo(handle).busId)}
    try:
        rec["arch"] = int(pynvml.nvmlDeviceGetArchitecture(handle))
    except (pynvml.NVMLError, AttributeError):
        rec["arch"] = None
    links = []
    for link in range(MAX_LINKS):
        try:
            if not pynvml.nvmlDeviceGetNvLinkState(handle, link):
                continue
        except pynvml.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code == NOT_SUPPORTED and link == 0:
                links = None  # no NVLink on this GPU
            if code in (NOT_SUPPORTED, INVALID_ARGUMENT):
                break  # past its last link
            continue
        try:
            remote = REMOTE.get(int(pynvml.nvmlDeviceGetNvLinkRemoteDeviceType(handle, link)), "unknown")
        except (pynvml.NVMLError, AttributeError):
            remote = "unknown"
        try:
            bus = _text(pynvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link).busId)
        except pynvml.NVMLError:
            bus = None
        links.append({"link": link, "remote": remote, "pci_bus_id": bus})
    rec["links"] = links
    return rec
