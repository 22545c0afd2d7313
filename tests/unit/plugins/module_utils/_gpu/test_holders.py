# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Device-file holders: real processes that open and map fake /dev/nvidia* files."""

from __future__ import annotations

import mmap
import os
import stat

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import holders
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import bounded_fs
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import table as _proctable
from tests.support import procfs
from tests.support.polling import poll

DEVICE_FILES = ["nvidia0", "nvidia1", "nvidia3", "nvidia10", "nvidiactl", "nvidia-uvm",
                "nvidia-modeset", "nvidia-caps/nvidia-cap1", "nvidia-caps/nvidia-cap2", "nvme0"]

# Opens the files named in argv[2] (fds kept) and maps those in argv[3] (fd closed after mmap).
HOLDER = r"""
import mmap, os, sys
dev, opened, mapped = sys.argv[1], sys.argv[2], sys.argv[3]
keep = []
for name in filter(None, opened.split(",")):
    keep.append(os.open(os.path.join(dev, name), os.O_RDWR))
for name in filter(None, mapped.split(",")):
    fd = os.open(os.path.join(dev, name), os.O_RDWR)
    keep.append(mmap.mmap(fd, mmap.PAGESIZE, mmap.MAP_SHARED))
    os.close(fd)
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def devices(tmp_path):
    dev = tmp_path / "dev"
    (dev / "nvidia-caps").mkdir(parents=True)
    for name in DEVICE_FILES:
        with open(dev / name, "wb") as handle:
            handle.truncate(mmap.PAGESIZE)
    return str(dev)


@pytest.fixture
def start_holder(own_procs):
    def start(dev, opened=(), mapped=()):
        proc = own_procs.python(HOLDER, dev, ",".join(opened), ",".join(mapped))
        assert proc.stdout.readline().strip() == "ready"
        return proc.pid
    return start


CUDA_LIKE = ["nvidia0", "nvidia3", "nvidiactl", "nvidia-uvm", "nvidia-caps/nvidia-cap1"]


def test_cuda_like_process_maps_to_minors_and_control(devices, start_holder):
    pid = start_holder(devices, opened=CUDA_LIKE, mapped=["nvidia0", "nvidia3", "nvidiactl", "nvidia-uvm"])
    found = holders.scan(devices)
    assert found.gpus[pid] == {0, 3}
    assert pid in found.control
    assert found.holders_of([3]) == {pid}
    assert found.holders_of([0, 1]) == {pid}
    assert found.holders_of([1, 2]) == set()


def test_mapping_makes_a_holder_an_open_fd_alone_does_not(devices, start_holder):
    """An NVML user (nvidia-smi, an exporter) has /dev/nvidiaN open, unmapped: seen on an H200."""
    by_fd = start_holder(devices, opened=["nvidia3"])
    by_map = start_holder(devices, mapped=["nvidia1"])
    found = holders.scan(devices)
    assert by_fd not in found.gpus and found.opened.get(by_fd) == {3}
    assert found.gpus.get(by_map) == {1}
    assert by_fd not in found.control and by_map not in found.control
    assert found.holders_of([1, 3]) == {by_map}
    assert found.holders_of([1, 3], include_open=True) == {by_fd, by_map}


def test_control_files_only_never_make_a_gpu_holder(devices, start_holder):
    # what an NVML monitor (or gpu_release itself) holds
    pid = start_holder(devices, opened=["nvidiactl", "nvidia-uvm", "nvidia-modeset", "nvidia-caps/nvidia-cap2"],
                       mapped=["nvidiactl"])
    found = holders.scan(devices)
    assert pid in found.control
    assert pid not in found.gpus
    assert pid not in found.holders_of(range(16))


def test_two_digit_minor_and_unrelated_files(devices, start_holder):
    pid = start_holder(devices, opened=["nvme0"], mapped=["nvidia10"])
    found = holders.scan(devices)
    assert found.gpus[pid] == {10}
    assert pid not in found.control
    assert found.holders_of([1]) == set()


def test_files_in_another_directory_are_not_holders(tmp_path, devices, start_holder):
    other = tmp_path / "dev2"
    other.mkdir()
    with open(other / "nvidia0", "wb") as handle:
        handle.truncate(mmap.PAGESIZE)
    pid = start_holder(str(other), opened=["nvidia0"], mapped=["nvidia0"])
    found = holders.scan(devices)  # prefix "…/dev/" must not match "…/dev2/"
    assert pid not in found.gpus and pid not in found.control
    assert found.unresolved.get(pid) == {str(other / "nvidia0")}  # named, with its path
    assert holders.scan(str(other)).gpus[pid] == {0}


def test_devices_dir_given_through_a_symlink(tmp_path, devices, start_holder):
    link = tmp_path / "devlink"
    link.symlink_to(devices)
    pid = start_holder(devices, mapped=["nvidia3"])
    assert holders.scan(str(link)).gpus[pid] == {3}
    assert holders.scan(str(link) + "/").gpus[pid] == {3}


def test_a_process_holding_nothing_is_absent(devices, own_procs):
    proc = own_procs.python("import sys; print('ready', flush=True); sys.stdin.read()")
    assert proc.stdout.readline().strip() == "ready"
    found = holders.scan(devices)
    assert proc.pid not in found.gpus and proc.pid not in found.control


def test_fake_proc_root_fds_and_maps(tmp_path):
    """/proc as scan() reads it: fd links, maps lines (deleted mappings too), odd entries."""
    dev = "/fake/dev"
    proc = tmp_path / "proc"
    fds = proc / "100" / "fd"
    fds.mkdir(parents=True)
    os.symlink(dev + "/nvidia5", fds / "3")
    os.symlink(dev + "/nvidiactl", fds / "4")
    os.symlink("socket:[1234]", fds / "5")
    (proc / "100" / "maps").write_text("")
    (proc / "200").mkdir()  # no fd dir (a kernel thread, or not ours to read)
    (proc / "200" / "maps").write_text(
        "7f00-7f01 rw-s 00000000 00:05 9 %s/nvidia2 (deleted)\n"
        "7f02-7f03 rw-s 00000000 00:05 9 %s/nvidia-uvm\n"
        "7f04-7f05 r-xp 00000000 08:01 7 /usr/lib/libc.so.6\n" % (dev, dev))
    (proc / "self").mkdir()
    (proc / "300").mkdir()  # vanished: no fd dir, no maps
    found = holders.scan(dev, proc_root=str(proc))
    assert found.gpus == {200: {2}}
    assert found.opened == {100: {5}}
    assert found.control == {100, 200}


@pytest.mark.parametrize("path, kind", [
    ("/d/nvidia0", 0),
    ("/d/nvidia17", 17),
    ("/d/nvidiactl", "control"),
    ("/d/nvidia-uvm", "control"),
    ("/d/nvidia-uvm-tools", "control"),
    ("/d/nvidia-caps/nvidia-cap1", "control"),
    ("/d/nvidia0x", "control"),
    ("/d/nvme0", None),
    ("/dx/nvidia0", None),
    ("/other/d/nvidia0", None),
    ("socket:[99]", None),
])
def test_classify(path, kind):
    assert holders._classify(path, "/d/") == kind


@pytest.mark.parametrize("option, env, expected", [
    ("/opt/dev", "/sim/dev", "/opt/dev"),
    (None, "/sim/dev", "/sim/dev"),
    ("", "/sim/dev", "/sim/dev"),
    (None, None, "/dev"),
    (None, "", "/dev"),
])
def test_devices_dir(monkeypatch, option, env, expected):
    if env is None:
        monkeypatch.delenv(holders.DEVICES_ENV, raising=False)
    else:
        monkeypatch.setenv(holders.DEVICES_ENV, env)
    assert holders.devices_dir(option) == expected
    assert holders.DEVICES_ENV == "GPUFLEET_NVIDIA_DEVICES"


# ---- device identity, per-thread holders -------------------------------------------------

def test_a_renamed_file_is_the_gpu_it_is(tmp_path, devices, start_holder):
    """A container's node named nvidia0 that is GPU 3 (here: a hard link), found by identity."""
    ctr = tmp_path / "ctr"
    ctr.mkdir()
    os.link(os.path.join(devices, "nvidia3"), ctr / "nvidia0")
    os.link(os.path.join(devices, "nvidiactl"), ctr / "nvidiactl")
    pid = start_holder(str(ctr), opened=["nvidia0", "nvidiactl"], mapped=["nvidia0"])
    found = holders.scan(devices)
    assert found.gpus[pid] == {3}
    assert found.opened[pid] == {3}
    assert pid in found.control
    assert found.holders_of([0]) == set()


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")
def test_character_devices_by_major_195(tmp_path):
    node = tmp_path / "gpu-as-nvidia0"
    os.mknod(node, 0o600 | stat.S_IFCHR, os.makedev(195, 5))
    assert holders.classify_stat(os.stat(node)) == 5
    ctl = tmp_path / "ctl"
    os.mknod(ctl, 0o600 | stat.S_IFCHR, os.makedev(195, 255))
    assert holders.classify_stat(os.stat(ctl)) == "control"
    other = tmp_path / "null"
    os.mknod(other, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    assert holders.classify_stat(os.stat(other)) is None
    ids = holders.DeviceIds(str(tmp_path))
    assert 5 not in ids.by_inode.values()  # not named nvidia*: not part of the devices dir


LEADER_EXITS = r"""
import ctypes, mmap, os, sys, threading, time
dev = sys.argv[1]
def hold():
    fd = os.open(os.path.join(dev, "nvidia1"), os.O_RDWR)
    keep = mmap.mmap(fd, mmap.PAGESIZE, mmap.MAP_SHARED)
    print("ready", flush=True)
    time.sleep(600)
threading.Thread(target=hold).start()
ctypes.CDLL(None).syscall(60 if os.uname().machine == "x86_64" else 93, 0)  # SYS_exit: this thread only
"""


@pytest.mark.parametrize("table_of", [None, _proctable.snapshot, _proctable.cmdline_snapshot])
def test_a_thread_group_whose_leader_exited_is_read_per_thread(devices, own_procs, table_of):
    """The leader is a zombie with empty maps and fds; another thread holds GPU 1. Told by
    /proc/PID/stat, or by the snapshot's record; a cmdline-only table is not made to look it up."""
    proc = own_procs.python(LEADER_EXITS, devices)
    assert proc.stdout.readline().strip() == "ready"

    poll(lambda: procfs.zombie(proc.pid), 10, 0.02, "the leader thread to exit")
    with open("/proc/%d/maps" % proc.pid) as handle:
        assert handle.read() == ""  # the leader's own view is empty
    table = table_of() if table_of else None
    try:
        found = holders.scan(devices, pids=[proc.pid], table=table)
    finally:
        bounded_fs.close()  # a helper the scan may fork for a renamed file's stat (Releaser.run closes it too)
    assert found.gpus[proc.pid] == {1}
    assert found.opened[proc.pid] == {1}
    if table_of is _proctable.cmdline_snapshot:
        assert table.known(proc.pid) is None
