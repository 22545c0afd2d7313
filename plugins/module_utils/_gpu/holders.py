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

Which GPU a mapping or an fd refers to is decided by the file it refers to,
never by its path: a container started with `--device /dev/nvidia5:/dev/nvidia0`
maps a file named nvidia0 that is GPU 5, and a chroot or bind mount shows the
same device under another path. A file is known by its identity:

- a character device of major 195 (the NVIDIA driver) is GPU minor N for
  minors below 254 (254 is nvidia-modeset, 255 nvidiactl: control files);
- any file is also known by (st_dev, st_ino) from a stat of the devices
  directory, which a maps line carries as "dev inode" (hard links and bind
  mounts keep both; the simulated GPUs are regular files known this way);
- a mapping whose (dev, inode) is unknown but whose path names an nvidia file
  is resolved with a stat of /proc/PID/map_files/START-END (root only); an fd
  with a stat of /proc/PID/fd/N (both follow to the file, so both are bounded in
  time: _proc/bounded_fs; a mount that does not answer fails the run naming the
  path). Where neither works, the path decides if it
  lies in the devices directory, else the mapping is recorded as `unresolved`
  (reported, with its path, so that a missed holder has a reason).

A thread group whose leader has exited (the leader is a zombie; its maps and
fd table read empty) but whose other threads still hold the GPU is read per
thread (/proc/PID/task/TID/maps and fd).
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._proc import bounded_fs
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import table as _proctable

DEFAULT_DEVICES = "/dev"
DEVICES_ENV = "GPUFLEET_NVIDIA_DEVICES"
NVIDIA_MAJOR = 195
NVIDIA_GPU_MINORS = 254  # minors 0-253 are GPUs; 254 nvidia-modeset, 255 nvidiactl

_GPU_FILE = re.compile(r"^nvidia(\d+)$")
_GPU_NAME = re.compile(r"(?:^|/)nvidia(\d+)$")


def devices_dir(option_value: str | None) -> str:
    """The option wins; else the environment (simulated hosts set it); else /dev."""
    return option_value or os.environ.get(DEVICES_ENV) or DEFAULT_DEVICES


class DeviceHolders:
    """Result of one scan: pid -> GPU minors mapped (CUDA contexts) or only open, and pids on control files.

    NVML users (nvidia-smi, monitoring exporters, this module) open /dev/nvidiaN
    but never map it and hold no GPU memory; a CUDA context maps it.
    """

    def __init__(self) -> None:
        self.gpus = {}    # pid -> minors mapped
        self.opened = {}  # pid -> minors open (fd)
        self.control = set()
        self.unresolved = {}  # pid -> paths of nvidia-looking mappings whose device is unknown

    def holders_of(self, minors: Any, include_open: bool = False) -> set:
        """PIDs that map one of `minors`; with include_open, also those that only have one open."""
        minors = set(minors)
        found = {pid for pid, held in self.gpus.items() if held & minors}
        if include_open:
            found |= {pid for pid, held in self.opened.items() if held & minors}
        return found

    def held_by(self, pid: Any, include_open: bool = False) -> Any:
        held = set(self.gpus.get(pid, ()))
        if include_open:
            held |= self.opened.get(pid, set())
        return held


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


def classify_stat(st: Any, ids: DeviceIds | None = None) -> int | str | None:
    """GPU minor, 'control' or None for a stat result of a mapped or open file."""
    if stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == NVIDIA_MAJOR:
        minor = os.minor(st.st_rdev)
        return minor if minor < NVIDIA_GPU_MINORS else "control"
    if ids is not None:
        return ids.by_inode.get((st.st_dev, st.st_ino))
    return None


class DeviceIds:
    """The device files of a devices directory, known by identity."""

    def __init__(self, devices: str) -> None:
        self.prefix = os.path.realpath(devices).rstrip("/") + "/"
        self.by_inode = {}
        for rel in self._entries(devices):
            try:
                # Direct: device nodes of the devices directory (/dev) answer from the kernel,
                # and a no-op release should not pay for the helper (_proc/bounded_fs).
                st = os.stat(os.path.join(devices, rel))
            except OSError:
                continue
            kind = classify_stat(st)
            if kind is None:
                match = _GPU_FILE.match(rel)
                kind = int(match.group(1)) if match else "control"
            self.by_inode[(st.st_dev, st.st_ino)] = kind
        # maps lines write the device as hex "major:minor" and the inode in decimal.
        self.maps_keys = {("%02x:%02x %d" % (os.major(dev), os.minor(dev), ino)).encode(): kind
                          for (dev, ino), kind in self.by_inode.items()}
        self._needles = [b" " + key + b" " for key in self.maps_keys] + [b"nvidia"]

    @staticmethod
    def _entries(devices):
        try:
            names = os.listdir(devices)
        except OSError:
            return []
        out = [n for n in names if n.startswith("nvidia")]
        if "nvidia-caps" in names:
            try:
                out += ["nvidia-caps/" + n for n in os.listdir(os.path.join(devices, "nvidia-caps"))]
            except OSError:
                pass
        return out

    def may_hold(self, data: bytes) -> bool:
        """Cheap test on a whole maps file: can any line refer to a device file?"""
        return any(needle in data for needle in self._needles)


def _record(result, pid, kind, mapped=True):
    if kind == "control":
        result.control.add(pid)
    elif kind is not None:
        (result.gpus if mapped else result.opened).setdefault(pid, set()).add(kind)


def scan(devices: str, proc_root: str = "/proc", pids: Any = None, fds: bool = True, ids: Any = None, table: Any = None,
         maps_all: bool = True, also: tuple = ()) -> DeviceHolders:
    """Scan processes' fds and memory maps for the device files.

    `pids`: only these (default: every visible process); `table`: their
    snapshot, which says who is a zombie (else /proc/PID/stat is read: on a
    cmdline-only table, for the processes not looked up yet, which costs one
    read where a lookup costs two).
    With `maps_all` false the maps are read only for processes that have a
    device file open (every CUDA process keeps its device fds open) and for
    those in `also`: the cheap scan for a host with thousands of processes.
    """
    ids = ids or DeviceIds(devices)
    result = DeviceHolders()
    if pids is None:
        pids = [int(e) for e in _listdir(proc_root) if e.isdigit()]
    also = set(also)
    for pid in pids:
        info = _proctable.record_if_read(table, pid) if table is not None else None
        if info is not None and info.is_kernel_thread:
            continue
        for base in _bases(proc_root, pid, info):
            if fds:
                _scan_fds(result, pid, base, ids)
            if maps_all or pid in also or pid in result.opened or pid in result.control or pid in result.unresolved:
                _scan_maps(result, pid, base, ids)
    return result


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


def _bases(proc_root, pid, info=None):
    """/proc/PID, and its threads' directories when the leader has exited (a zombie)."""
    base = "%s/%d" % (proc_root, pid)
    if info is not None:
        if info.status != "zombie" or info.threads <= 1:
            return [base]
    else:
        try:
            with open(base + "/stat", "rb") as handle:
                data = handle.read()
            close = data.rindex(b")")
            if data[close + 2:close + 3] != b"Z":
                return [base]
        except (OSError, ValueError):
            return [base]
    tids = [t for t in _listdir(base + "/task") if t.isdigit() and int(t) != pid]
    return [base] + ["%s/task/%s" % (base, t) for t in tids]


def _scan_fds(result, pid, base, ids):
    fd_dir = base + "/fd"
    fds = _listdir(fd_dir)  # empty: gone, a kernel thread, or not ours to read
    for fd in fds:
        path = fd_dir + "/" + fd
        try:
            target = os.readlink(path)
        except OSError:
            continue
        if "nvidia" not in target:
            continue  # sockets, pipes, ordinary files
        kind = None
        try:
            # The stat follows to the file: on a hung FUSE or NFS mount it blocks (bounded_fs).
            kind = classify_stat(bounded_fs.stat(path, shown="%s (-> %s)" % (path, target)), ids)
        except OSError:
            pass
        target = target.replace(" (deleted)", "")
        if kind is None:
            kind = _classify(target, ids.prefix)
        if kind is None and _GPU_NAME.search(target):
            result.unresolved.setdefault(pid, set()).add(target)
        _record(result, pid, kind, mapped=False)


def _scan_maps(result, pid, base, ids):
    try:
        with open(base + "/maps", "rb") as handle:
            data = handle.read()
    except OSError:
        return
    if not ids.may_hold(data):
        return
    for line in data.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 5 or fields[4] == b"0":
            continue
        kind = ids.maps_keys.get(fields[3] + b" " + fields[4])
        path = fields[5].decode("utf-8", "replace").replace(" (deleted)", "") if len(fields) > 5 else ""
        if kind is None and "nvidia" in path:
            kind = _resolve_mapping(base, fields[0], ids, path)
            if kind is None:
                kind = _classify(path, ids.prefix)
            if kind is None and _GPU_NAME.search(path):
                result.unresolved.setdefault(pid, set()).add(path)
        _record(result, pid, kind)


def _resolve_mapping(base, span, ids, path):
    try:
        link = "%s/map_files/%s" % (base, span.decode())
        return classify_stat(bounded_fs.stat(link, shown="%s (-> %s)" % (link, path)), ids)
    except (OSError, UnicodeDecodeError):
        return None  # map_files needs CAP_SYS_ADMIN (CAP_CHECKPOINT_RESTORE) to follow
