# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_release's reset_stuck: a GPU reset (`nvidia-smi -r -i N`) only where it is safe.

Memory that stays used after the release with no process left on the GPU (NVML lists
none, no process maps or opens its device file) is a context the driver did not clean
up, as after an unclean exit. Only a reset frees it. The reset is run only when:

- the user asked (reset_stuck: true) and the run is not in check mode;
- no process uses any GPU that is reset (nvidia-smi refuses too: "There can't be any
  applications using these devices");
- the NVLink peer set allows it. nvidia-smi(1), --gpu-reset: "any GPUs with NVLink
  connections to a GPU being reset must also be reset in the same command" where the
  GPU predates NVIDIA Ampere or Fabric Manager is not running; "On Hopper and later
  NVSwitch systems, the dependency on Fabric Manager to facilitate reset is removed".
  So a Hopper or later GPU on NVSwitch is reset alone; a GPU without NVLink is reset
  alone; every other NVLinked GPU is reset with all its peers (bridge peers,
  transitively; on an NVSwitch fabric before Hopper, or of unknown architecture, every
  GPU of the fabric), and only when every one of them is selected and unused. Ampere
  on NVSwitch with Fabric Manager running could be reset alone too; this is not
  relied on (whether Fabric Manager runs is not checked): such a GPU goes with its fabric.

The release closes its NVML session first (NVML users hold the device files open, and
nvidia-smi refuses a GPU in use by a monitor), then reads the GPUs again and re-runs
the health checks (health.gather) on every GPU reset.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.xid import pci_key

HOPPER = 9  # NVML_DEVICE_ARCH_HOPPER (nvmlDeviceArchitecture_t)
RULE_NO_NVLINK = "no NVLink: reset alone"
RULE_NVSWITCH = "Hopper or later on NVSwitch: reset alone"
RULE_FABRIC = "NVSwitch before Hopper (or architecture unknown): reset with every GPU of the fabric"
RULE_BRIDGES = "NVLink bridge peers: reset together"
RESET_TIMEOUT = 60.0  # seconds nvidia-smi -r may take at most (a reset takes seconds)


def _on_switch(rec: dict) -> bool:
    return any(link["remote"] == "switch" for link in rec.get("links") or ())


def peer_set(links: dict, index: int) -> tuple:
    """(the GPUs reset together with GPU `index`, or None when a peer is not visible; the rule).

    `links`: {index: nvlink_probe record} of every GPU of the host.
    """
    rec = links[index]
    if not rec.get("links"):
        return {index}, RULE_NO_NVLINK
    if _on_switch(rec):
        if rec.get("arch") is not None and rec["arch"] >= HOPPER:
            return {index}, RULE_NVSWITCH
        return {i for i, r in links.items() if _on_switch(r)}, RULE_FABRIC
    by_bus = {pci_key(r.get("pci_bus_id")): i for i, r in links.items()}
    group, todo = set(), [index]
    while todo:
        gpu = todo.pop()
        if gpu in group:
            continue
        group.add(gpu)
        for link in links[gpu].get("links") or ():
            if link["remote"] != "gpu":
                continue
            peer = by_bus.get(pci_key(link["pci_bus_id"]))
            if peer is None:
                return None, "an NVLink peer of GPU %d (PCI %s) is not visible to NVML here" % (gpu, link["pci_bus_id"])
            todo.append(peer)
    return group, RULE_BRIDGES


def plan(stuck: list, unused: set, selected: set, links: dict) -> tuple:
    """([{gpus, rule}] to reset, [{index, reason}] refused) for the stuck GPUs.

    `unused`: GPUs no process uses; `selected`: the GPUs of this release.
    """
    groups, refused = [], []
    for index in stuck:
        group, rule = peer_set(links, index)
        if group is None:
            refused.append({"index": index, "reason": rule})
            continue
        why = None
        if group - selected:
            why = ("%s: GPU %s must be reset with it and is not selected (give gpus: all, or those GPUs too)"
                   % (rule, ", ".join(str(g) for g in sorted(group - selected))))
        elif group - unused:
            why = ("%s: GPU %s of the set is in use by a process" % (rule, ", ".join(str(g) for g in sorted(group - unused))))
        if why:
            refused.append({"index": index, "reason": why})
        elif not any(g["gpus"] == sorted(group) for g in groups):
            groups.append({"gpus": sorted(group), "rule": rule})
    return groups, refused


def run(group: dict, deadline: float) -> dict:
    """`nvidia-smi -r -i A,B` for one group: GROUP with command, rc and output added."""
    out = dict(group)
    tool = shutil.which("nvidia-smi")
    if tool is None:
        out.update(command=None, rc=None, output="nvidia-smi is not on PATH: no GPU was reset")
        return out
    argv = [tool, "-r", "-i", ",".join(str(g) for g in group["gpus"])]
    out["command"] = " ".join(argv)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False,  # pylint: disable=ansible-bad-function
                              timeout=max(5.0, min(RESET_TIMEOUT, deadline - time.monotonic())))
        out.update(rc=done.returncode, output=(done.stdout + done.stderr).strip()[-2000:])
    except subprocess.TimeoutExpired:
        out.update(rc=None, output="nvidia-smi -r did not return within the task's timeout")
    except OSError as exc:
        out.update(rc=None, output=str(exc))
    return out


def health_summary(result: Any) -> dict:
    """What the release reports of health.gather after a reset: the verdict and each GPU's."""
    return {"verdict": result["verdict"], "reasons": result["reasons"],
            "gpus": [{"index": g["index"], "verdict": g["verdict"], "reasons": g["reasons"]} for g in result["gpus"]]}
