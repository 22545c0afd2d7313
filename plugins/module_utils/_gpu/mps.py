# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""CUDA MPS (Multi-Process Service): its server's per-GPU context, and shutting it down.

With an MPS control daemon running (`nvidia-cuda-mps-control -d`), the MPS server
(`nvidia-cuda-mps-server`, started by the daemon for its clients) keeps a context on
every GPU it serves for as long as the daemon runs: 74 MiB per GPU on an H200 with
driver 580, listed by NVML as the server's own process. Both are GPU daemons
(_protect) and are never signalled. The memory the server holds is therefore not
left over by a released server: by default it is counted as daemon overhead in the
verification, reported per GPU with its figure. Asked to, the release stops MPS the
way NVIDIA documents it (the MPS documentation, "Starting and Stopping MPS on
Linux"): `echo quit | nvidia-cuda-mps-control`, with CUDA_MPS_PIPE_DIRECTORY
as the daemon has it, never a signal; then the GPUs must reach zero.

The server and the daemon are known by their executable (the base name of
/proc/PID/exe, a root-owned file, run by root or a system user), like every GPU
daemon, never by a title.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.protect import daemon_identity

SERVER = "nvidia-cuda-mps-server"
CONTROL = "nvidia-cuda-mps-control"
PIPE_ENV = "CUDA_MPS_PIPE_DIRECTORY"
LOG_ENV = "CUDA_MPS_LOG_DIRECTORY"
DEFAULT_PIPE_DIR = "/tmp/nvidia-mps"  # the daemon's default (MPS documentation)
MIB = 1048576.0
# MiB an MPS host's GPU may hold beyond what NVML charges to the MPS server, when the server
# is the only process listed: 8 MiB on the H200 (74 used, 66 charged), with 4x room.
UNATTRIBUTED_MIB = 32.0
QUIT_TIMEOUT = 10.0  # seconds the control client may take to hand over `quit`


def _exe_name(info):
    exe = info.exe or ""
    if exe.endswith(" (deleted)"):
        exe = exe[:-len(" (deleted)")]
    return os.path.basename(exe)


def servers(table: dict, exe_trusted: Any = None) -> dict:
    """{pid: ProcInfo} of the MPS servers in `table`, by executable."""
    kwargs = {"exe_trusted": exe_trusted} if exe_trusted else {}
    return {pid: info for pid, info in table.items()
            if info.exe and _exe_name(info) == SERVER and daemon_identity(info, **kwargs)}


def controls(table: dict, exe_trusted: Any = None) -> dict:
    """{pid: ProcInfo} of the MPS control daemons in `table`, by executable."""
    kwargs = {"exe_trusted": exe_trusted} if exe_trusted else {}
    return {pid: info for pid, info in table.items()
            if info.exe and _exe_name(info) == CONTROL and daemon_identity(info, **kwargs)}


class ListedServers:
    """The MPS servers among the processes NVML lists, looked up in the tables of a run.

    Only a process NVML lists on a GPU can be the server whose context `overhead` counts,
    so only those are checked (a readlink of /proc/PID/exe each), not every process of a
    busy host. A PID counts as a server when it was one in any table noted so far.
    """

    def __init__(self) -> None:
        self.tables = []
        self.servers = {}  # pid -> ProcInfo
        self._checked = {}  # pid -> number of tables it was checked against

    def note(self, table: dict) -> None:
        """A snapshot of the run: listed PIDs are looked up in it too."""
        self.tables.append(table)

    def of(self, records: Any) -> dict:
        """{pid: ProcInfo} of every server known so far, after checking the PIDs `records` list."""
        for rec in records:
            for proc in rec.get("processes") or ():
                pid = proc["pid"]
                done = self._checked.get(pid, 0)
                for table in self.tables[done:]:
                    if pid in table:
                        self.servers.update(servers({pid: table[pid]}))
                self._checked[pid] = len(self.tables)
        return self.servers


def overhead(record: dict, server_pids: Any, gpu_used_mib: float | None = None) -> dict | None:
    """The MPS servers' memory on one GPU: {server_pids, nvml_process_mib, used_mib}, or None.

    `nvml_process_mib`: what NVML charges to the server processes. On the H200 (driver
    580.159.04) the GPU showed 74 MiB used with the server alone listed at 66 MiB: 8 MiB
    are MPS's too, charged to no process. So where every process NVML lists on the GPU is
    an MPS server, what the GPU holds beyond the servers' figure counts as theirs up to
    UNATTRIBUTED_MIB (more is memory still being freed, or someone else's: it is waited
    for, never excused). A server listed without an amount (no per-process accounting)
    counts as holding nothing known.
    """
    listed = list(record.get("processes") or ())
    servers = [p for p in listed if p["pid"] in server_pids]
    if not servers:
        return None
    known = sum(p["used"] for p in servers if p.get("used") is not None) / MIB
    used = known
    if gpu_used_mib is not None and len(servers) == len(listed):
        used = known + min(max(0.0, gpu_used_mib - known), UNATTRIBUTED_MIB)
    return {"server_pids": sorted(p["pid"] for p in servers), "nvml_process_mib": round(known, 1),
            "used_mib": round(used, 1)}


def pipe_directory(control: Any) -> str:
    """Where the daemon keeps its pipes: its CUDA_MPS_PIPE_DIRECTORY, or the default."""
    env = control.environ or {}
    return env.get(PIPE_ENV) or DEFAULT_PIPE_DIR


def _client(control):
    """The control command: on PATH as NVIDIA installs it, else beside the daemon's executable."""
    found = shutil.which(CONTROL)
    if found:
        return found
    exe = control.exe or ""
    return exe if _exe_name(control) == CONTROL else CONTROL


def quit_daemon(control: Any, deadline: float) -> dict:
    """`echo quit | nvidia-cuda-mps-control` for this daemon; what was run and how it ended."""
    directory = pipe_directory(control)
    env = dict(os.environ)
    env[PIPE_ENV] = directory
    log_dir = (control.environ or {}).get(LOG_ENV)
    if log_dir:
        env[LOG_ENV] = log_dir
    client = _client(control)
    rec = {"control_pid": control.pid, "pipe_directory": directory, "command": "echo quit | %s" % client}
    try:
        out = subprocess.run([client], input="quit\n", env=env, capture_output=True, text=True, check=False,  # pylint: disable=ansible-bad-function
                             timeout=max(0.5, min(QUIT_TIMEOUT, deadline - time.monotonic())))
        rec["rc"] = out.returncode
        if out.returncode != 0:
            rec["error"] = (out.stderr or out.stdout).strip()[-500:]
    except subprocess.TimeoutExpired:
        rec["rc"], rec["error"] = None, "the control command did not return"
    except OSError as exc:
        rec["rc"], rec["error"] = None, str(exc)
    return rec


def summary(table: dict, records: list) -> dict | None:
    """gpu_info's view of MPS: the daemons with their pipe directory, the servers and their per-GPU memory."""
    found_servers = servers(table)
    found_controls = controls(table)
    if not found_servers and not found_controls:
        return None
    per_gpu = []
    for rec in records:
        share = overhead(rec, found_servers)
        if share:
            per_gpu.append(dict(share, index=rec["index"]))
    return {"control_daemons": [{"pid": pid, "pipe_directory": pipe_directory(info)}
                                for pid, info in sorted(found_controls.items())],
            "servers": [{"pid": pid, "ppid": info.ppid} for pid, info in sorted(found_servers.items())],
            "gpus": per_gpu}
