# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""reset_stuck's rules (_gpu/reset.py): which GPUs go together, when a reset is refused, how it runs."""

from __future__ import annotations

import os
import time

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import reset


def gpu(index, arch=9, links=None):
    return {"index": index, "pci_bus_id": "00000000:%02X:00.0" % (0x18 + 0x10 * index), "arch": arch, "links": links}


def to_switch(count=18):
    return [{"link": n, "remote": "switch", "pci_bus_id": "00000000:A0:00.0"} for n in range(count)]


def to_gpus(*peers):
    return [{"link": p, "remote": "gpu", "pci_bus_id": "0000:%02X:00.0" % (0x18 + 0x10 * p)} for p in peers]


def host(arch, links_of):
    return {i: gpu(i, arch, links) for i, links in enumerate(links_of)}


@pytest.mark.parametrize("links, index, expected", [
    (host(9, [None, None]), 0, ({0}, reset.RULE_NO_NVLINK)),  # PCIe boards
    (host(9, [to_switch()] * 4), 2, ({2}, reset.RULE_NVSWITCH)),  # H100/H200 HGX
    (host(10, [to_switch()] * 4), 1, ({1}, reset.RULE_NVSWITCH)),  # Blackwell
    (host(7, [to_switch()] * 4), 1, ({0, 1, 2, 3}, reset.RULE_FABRIC)),  # A100 HGX: the fabric together
    (host(None, [to_switch()] * 2 + [None]), 0, ({0, 1}, reset.RULE_FABRIC)),  # unknown architecture
    (host(9, [to_gpus(1), to_gpus(0, 2), to_gpus(1), None]), 0, ({0, 1, 2}, reset.RULE_BRIDGES)),  # bridges, transitively
    (host(9, [to_gpus(1), to_gpus(0), None]), 2, ({2}, reset.RULE_NO_NVLINK)),
])
def test_peer_set(links, index, expected):
    assert reset.peer_set(links, index) == expected


def test_a_peer_nvml_does_not_show_refuses_the_reset():
    group, why = reset.peer_set(host(9, [to_gpus(5)]), 0)
    assert group is None and why == "an NVLink peer of GPU 0 (PCI 0000:68:00.0) is not visible to NVML here"


def test_plan_refuses_unselected_or_used_peers_and_merges_sets():
    links = host(9, [to_gpus(1), to_gpus(0), to_gpus(3), to_gpus(2), None])
    groups, refused = reset.plan([0, 1, 2, 4], unused={0, 1, 2, 4}, selected={0, 1, 2, 4}, links=links)
    assert groups == [{"gpus": [0, 1], "rule": reset.RULE_BRIDGES}, {"gpus": [4], "rule": reset.RULE_NO_NVLINK}]
    assert refused == [{"index": 2, "reason": "NVLink bridge peers: reset together: GPU 3 must be reset with it and "
                                              "is not selected (give gpus: all, or those GPUs too)"}]
    groups, refused = reset.plan([0], unused={0}, selected={0, 1}, links=links)
    assert groups == [] and refused == [
        {"index": 0, "reason": "NVLink bridge peers: reset together: GPU 1 of the set is in use by a process"}]


def test_run_says_when_nvidia_smi_is_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    out = reset.run({"gpus": [3], "rule": reset.RULE_NO_NVLINK}, time.monotonic() + 10)
    assert out["rc"] is None and out["output"] == "nvidia-smi is not on PATH: no GPU was reset"


def test_run_calls_nvidia_smi_reset_with_the_whole_set(monkeypatch, tmp_path):
    """A stand-in on PATH, never a real nvidia-smi: it echoes its arguments."""
    tool = tmp_path / "nvidia-smi"
    tool.write_text("#!/bin/sh\necho \"args: $*\"\nexit 0\n")
    os.chmod(tool, 0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    out = reset.run({"gpus": [0, 1], "rule": reset.RULE_BRIDGES}, time.monotonic() + 10)
    assert out == {"gpus": [0, 1], "rule": reset.RULE_BRIDGES, "command": "%s -r -i 0,1" % tool, "rc": 0,
                   "output": "args: -r -i 0,1"}
