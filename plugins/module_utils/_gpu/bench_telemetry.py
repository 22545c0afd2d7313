# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""llm_benchmark's telemetry: which GPUs the server uses, and a sampler around each level.

_bench may not import _gpu (docs/design.md), so llm_benchmark hands `for_benchmark` to the
sweep as a factory: the sweep calls it once with its parameters, then begin() before each
timed pass and level(start, end, output_tokens) after it, and close() at the end.

The GPUs: the `gpus` option; else those of the server that listens on base_url's port on
this host - its CUDA_VISIBLE_DEVICES, else the GPUs its process tree holds memory on (NVML's
process list). Telemetry is on by default when nvidia-ml-py is installed and the GPUs are
known; `telemetry: true` makes either missing an error, `false` turns it off.
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._deps import missing
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import telemetry
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.nvml import NvmlSession
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.ports import listener_pid
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import descendants, psutil, read_environ, snapshot


def _addresses(hostname: str) -> set:
    """The IP addresses HOSTNAME resolves to (none when it does not)."""
    try:
        return {info[4][0] for info in socket.getaddrinfo(hostname, None, proto=socket.IPPROTO_TCP)}
    except (OSError, UnicodeError):
        return set()


def _is_local(addresses: set) -> bool:
    """Whether one of ADDRESSES is this host's: loopback, or an address of one of its interfaces."""
    if any(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses):
        return True
    if psutil is None:
        return False
    try:
        own = {a.address.split("%")[0] for nic in psutil.net_if_addrs().values() for a in nic}
    except OSError:
        return False
    return bool(own & addresses)


def _listener(addresses: set, port: int) -> int | None:
    """The PID listening on one of ADDRESSES (or on every address) at TCP PORT, when it can be seen."""
    return listener_pid(addresses, port)


def _from_cvd(value: str) -> list | None:
    items = [x.strip() for x in value.split(",") if x.strip()]
    return [int(x) for x in items] if items and all(x.isdigit() for x in items) else None


def server_gpus(base_url: str) -> tuple:
    """(GPU indices, how they were found) of the server at BASE_URL on this host; (None, why) if unknown."""
    url = urllib.parse.urlsplit(base_url)
    addresses = _addresses(url.hostname or "")
    if not _is_local(addresses):
        return None, "the server %s is not on this host: give gpus" % (url.hostname or base_url)
    port = url.port or (443 if url.scheme == "https" else 80)
    pid = _listener(addresses, port)
    if pid is None:
        return None, "no process seen listening on %s port %d: give gpus" % (url.hostname, port)
    env = read_environ(pid) or {}
    cvd = _from_cvd(env.get("CUDA_VISIBLE_DEVICES", ""))
    if cvd is not None:
        return cvd, "CUDA_VISIBLE_DEVICES of the server (pid %d)" % pid
    tree = {pid} | descendants(snapshot(), [pid])
    try:
        with NvmlSession(10.0) as nvml:
            held = [g["index"] for g in nvml.snapshot() if any(p["pid"] in tree for p in g["processes"])]
    except Exception as exc:  # no NVML, a hung GPU: no telemetry, the benchmark goes on
        return None, "NVML could not list the server's GPUs: %s" % (getattr(exc, "msg", None) or exc)
    if not held:
        return None, "the server (pid %d) holds memory on no GPU NVML lists: give gpus" % pid
    return sorted(held), "GPUs the server's processes (pid %d and below) hold memory on" % pid


class BenchTelemetry:
    """One sampler for the run; the figures of each timed pass (telemetry.window_figures)."""

    def __init__(self, gpus: list, source: str) -> None:
        self.gpus = gpus
        self.info = {"enabled": True, "gpus": gpus, "gpus_from": source, "reason": None}
        self.sampler, why = telemetry.start(gpus)
        if self.sampler is None:
            self.info.update(enabled=False, reason=why)
        self.began = False

    def begin(self) -> None:
        self.began = bool(self.sampler and self.sampler.begin())

    def level(self, start: float | None, end: float | None, output_tokens: float) -> dict:
        """The pass's figures; every one None with a note when the sampler could not give them."""
        if self.sampler is None:
            return telemetry.missing_figures(self.gpus, self.info["reason"])
        reply = self.sampler.end() if self.began else None
        if reply is None:
            return telemetry.missing_figures(self.gpus, self.sampler.dead or "the telemetry sampler did not start")
        return telemetry.window_figures(reply, self.gpus, self.sampler.default_sm_mhz, start, end, output_tokens)

    def close(self) -> None:
        if self.sampler is not None and not self.sampler.dead:
            self.sampler.close()


class Off:
    """Telemetry turned off, or impossible here: no figures, and the reason in the result."""

    def __init__(self, reason: str) -> None:
        self.info = {"enabled": False, "gpus": None, "gpus_from": None, "reason": reason}

    def begin(self) -> None:
        pass

    def level(self, start: float | None, end: float | None, output_tokens: float) -> dict:
        return {}

    def close(self) -> None:
        pass


def for_benchmark(params: dict) -> Any:
    """The sweep's telemetry for llm_benchmark's PARAMS (options telemetry, gpus, base_url)."""
    wanted = params.get("telemetry")
    if wanted is False:
        return Off("telemetry: false")
    gpus = params.get("gpus")
    if gpus is not None and (not gpus or any(g < 0 for g in gpus)):
        raise InvalidInput("gpus: give the GPU indices the server uses (0 or more each), got %s" % gpus)
    if missing("nvidia-ml-py"):
        why = "nvidia-ml-py is not installed on this host"
        if wanted:
            raise InvalidInput("telemetry: true, but %s: install it (pip install nvidia-ml-py) or set telemetry: false" % why)
        return Off(why)
    source = "the gpus option"
    if gpus is None:
        gpus, source = server_gpus(params["base_url"])
    if gpus is None:
        if wanted:
            raise InvalidInput("telemetry: true, but the server's GPUs are not known (%s)" % source)
        return Off(source)
    return BenchTelemetry(list(gpus), source)
