# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""llm_benchmark's telemetry choice: on, off or an error, and the server's GPUs."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import bench_telemetry as bt

REMOTE = {"base_url": "http://10.1.2.3:30000"}


def test_off_when_asked_and_off_with_the_reason_when_the_gpus_are_unknown():
    off = bt.for_benchmark(dict(REMOTE, telemetry=False))
    assert off.info == {"enabled": False, "gpus": None, "gpus_from": None, "reason": "telemetry: false"}
    assert off.level(0.0, 1.0, 10) == {}
    auto = bt.for_benchmark(dict(REMOTE, telemetry=None))
    assert auto.info["enabled"] is False and "not on this host" in auto.info["reason"]


def test_asked_for_but_impossible_is_an_error_that_says_what_to_change(monkeypatch):
    with pytest.raises(InvalidInput, match="not known .*give gpus"):
        bt.for_benchmark(dict(REMOTE, telemetry=True))
    with pytest.raises(InvalidInput, match="gpus: give the GPU indices"):
        bt.for_benchmark(dict(REMOTE, telemetry=True, gpus=[-1]))
    monkeypatch.setattr(bt, "missing", lambda name: [name])
    with pytest.raises(InvalidInput, match="pip install nvidia-ml-py.*telemetry: false"):
        bt.for_benchmark(dict(REMOTE, telemetry=True, gpus=[0]))
    assert "not installed" in bt.for_benchmark(dict(REMOTE, gpus=[0])).info["reason"]


@pytest.mark.parametrize("value, gpus", [("0,1", [0, 1]), (" 3 ", [3]), ("", None),
                                         ("GPU-1234,GPU-5678", None), ("0,MIG-1", None)])
def test_cuda_visible_devices_of_the_server(value, gpus):
    assert bt._from_cvd(value) == gpus


def test_no_listener_on_the_port_is_named(monkeypatch):
    monkeypatch.setattr(bt, "_listener", lambda addresses, port: None)
    gpus, why = bt.server_gpus("http://127.0.0.3:39999")
    assert gpus is None and "127.0.0.3 port 39999" in why


@pytest.mark.parametrize("host, local", [("127.0.0.1", True), ("127.0.0.7", True), ("localhost", True),
                                         ("::1", True), ("10.1.2.3", False), ("no-such-host.invalid", False)])
def test_which_servers_are_on_this_host(host, local):
    assert bt._is_local(bt._addresses(host)) is local


def test_the_servers_cuda_visible_devices_through_its_listening_socket(tmp_path):
    """A listener of ours with CUDA_VISIBLE_DEVICES set: found by its address and port, its devices read."""
    import subprocess
    import sys
    server = subprocess.Popen([sys.executable, "-c", "import socket, sys, time\n"
                               "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
                               "print(s.getsockname()[1], flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True, env={"CUDA_VISIBLE_DEVICES": "2,5"})
    try:
        port = int(server.stdout.readline())
        gpus, how = bt.server_gpus("http://127.0.0.1:%d/v1" % port)
    finally:
        server.kill()
        server.wait()
    assert gpus == [2, 5] and "CUDA_VISIBLE_DEVICES of the server (pid %d)" % server.pid in how


def test_a_sampler_that_cannot_start_leaves_the_figures_missing(monkeypatch):
    monkeypatch.setattr(bt.telemetry, "start", lambda gpus: (None, "NVML could not start: Driver Not Loaded"))
    tel = bt.BenchTelemetry([0, 1], "the gpus option")
    assert tel.info["enabled"] is False and "Driver Not Loaded" in tel.info["reason"]
    tel.begin()
    fig = tel.level(0.0, 1.0, 100)
    assert fig["energy_j"] is None and fig["telemetry"]["notes"] == ["NVML could not start: Driver Not Loaded"]
    tel.close()
