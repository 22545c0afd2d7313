# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Who holds the NVIDIA device files: what `fuser /dev/nvidia*` finds, and more.

A process holds a GPU when it has /dev/nvidiaN open (an fd) or mapped (a line
of /proc/PID/maps); CUDA contexts do both. /dev/nvidiactl, /dev/nvidia-uvm and
/dev/nvidia-caps/* are opened by every CUDA *and* NVML user (monitoring
included, and this module itself), so they say nothing about which GPU a
process uses: they are recorded as `control` and never make a sweep target.
psutil.open_files() lists regular files only, hence the /proc scan.
"""

from __future__ import annotations

import os
import re

DEFAULT_DEVICES = "/dev"
DEVICES_ENV = "GPUFLEET_NVIDIA_DEVICES"

_GPU_FILE = re.compile(r"^nvidia(\d+)$")


def devices_dir(option_value):
    """The option wins; else the environment (simulated hosts set it); else /dev."""
    return option_value or os.environ.get(DEVICES_ENV) or DEFAULT_DEVICES


class DeviceHolders:
    """Result of one scan: pid -> GPU minors mapped (CUDA contexts) or only open, and pids on control files.

    NVML users (nvidia-smi, monitoring exporters, this module) open /dev/nvidiaN
    but never map it and hold no GPU memory; a CUDA context maps it.
    """

    def __init__(self):
        self.gpus = {}    # pid -> minors mapped
        self.opened = {}  # pid -> minors open (fd)
        self.control = set()

    def holders_of(self, minors, include_open=False):
        """PIDs that map one of `minors`; with include_open, also those that only have one open."""
        minors = set(minors)
        found = {pid for pid, held in self.gpus.items() if held & minors}
        if include_open:
            found |= {pid for pid, held in self.opened.items() if held & minors}
        return found


def _classify(path, prefix):
    """GPU minor for /dev/nvidiaN, 'control' for the shared files, else None."""
    if not path.startswith(prefix):
        return None
    rest = path[len(prefix):]
    match = _GPU_FILE.match(rest)
    if match:
        return int(match.group(1))
    if rest.startswith("nvidia"):
        return "control"
    return None


def _record(result, pid, kind, mapped=True):
    if kind == "control":
        result.control.add(pid)
    elif kind is not None:
        (result.gpus if mapped else result.opened).setdefault(pid, set()).add(kind)


def scan(devices, proc_root="/proc"):
    """Scan every visible process's fds and memory maps for the device files."""
    prefix = os.path.realpath(devices).rstrip("/") + "/"
    result = DeviceHolders()
    for entry in os.listdir(proc_root):
        if not entry.isdigit():
            continue
        pid = int(entry)
        base = os.path.join(proc_root, entry)
        _scan_fds(result, pid, base, prefix)
        _scan_maps(result, pid, base, prefix)
    return result


def _scan_fds(result, pid, base, prefix):
    fd_dir = base + "/fd"
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return  # gone, a kernel thread, or not ours to read
    for fd in fds:
        try:
            target = os.readlink(fd_dir + "/" + fd)
        except OSError:
            continue
        _record(result, pid, _classify(target.replace(" (deleted)", ""), prefix), mapped=False)


def _scan_maps(result, pid, base, prefix):
    try:
        with open(base + "/maps", "rb") as handle:
            data = handle.read()
    except OSError:
        return
    needle = prefix.encode()
    if needle not in data:
        return
    for line in data.splitlines():
        at = line.find(needle)
        if at >= 0:
            path = line[at:].decode("utf-8", "replace").replace(" (deleted)", "")
            _record(result, pid, _classify(path, prefix))
