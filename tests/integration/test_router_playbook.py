# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/router.yml on a simulated 2-host fleet, with the real sglang-router 0.3.2
(build/router/bin/smg) on the controller as the router host: it starts in front of both hosts'
servers (the workers computed from the inventory), calls both healthy, routes a completion to
them; a second run keeps it; router_state=stopped ends it. One fleet for the whole module."""

import json
import os
import signal
import urllib.request

import yaml
from _fleet_fixtures import needs_fleet, start_fleet

from tests.support.net import free_port
from tests.support.paths import PYTHON
from tests.support.router import ROUTER_BIN, healthy_urls

pytestmark = needs_fleet


def _router_inventory(tmp_path, port, metrics_port):
    path = tmp_path / "router-inventory.yml"
    path.write_text(yaml.safe_dump({"router_hosts": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": PYTHON,
        "router_bin": ROUTER_BIN, "router_listen_host": "127.0.0.1", "router_port": port,
        "router_prometheus_host": "127.0.0.1", "router_prometheus_port": metrics_port,
        "router_policy": "round_robin",
        "router_log_path": str(tmp_path / "router" / "router.log"),
        "router_state_file": str(tmp_path / "router" / "router.json")}}}}))
    return path


def _kill_recorded_router(state_file):
    """SIGKILL the router the state file names, if that PID is still the router (its title)."""
    try:
        pid = json.loads(state_file.read_text())["pid"]
        fd = os.pidfd_open(pid)
    except (OSError, ValueError, KeyError):
        return
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            if handle.read().startswith(b"sglang::router"):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(fd)


def test_router_yml_starts_the_router_in_front_of_the_fleet_keeps_it_and_stops_it(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2497)
    launched = fleet.playbook("launch.yml", timeout=900)
    assert launched.returncode == 0, launched.output[-4000:]
    port, metrics_port = free_port(), free_port()
    inventory = _router_inventory(tmp_path, port, metrics_port)
    request.addfinalizer(lambda: _kill_recorded_router(tmp_path / "router" / "router.json"))
    servers = ["http://%s:%d" % (fleet.address(i), fleet.server_port) for i in (1, 2)]

    started = fleet.playbook("router.yml", inventories=[inventory], timeout=600)
    assert started.returncode == 0, started.output[-4000:]
    assert "router started at http://127.0.0.1:%d (metrics http://127.0.0.1:%d/metrics), workers: %s" % (
        port, metrics_port, ", ".join(servers)) in started.output, started.output[-4000:]

    class Router:
        url = "http://127.0.0.1:%d" % port
    assert healthy_urls(Router) == set(servers)
    body = json.dumps({"model": "default", "prompt": "hello", "max_tokens": 4}).encode()
    ask = urllib.request.Request(Router.url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(ask, timeout=60) as answer:
        assert answer.status == 200 and json.loads(answer.read())["choices"]

    kept = fleet.playbook("router.yml", inventories=[inventory], timeout=600)
    assert kept.returncode == 0 and "localhost                  : ok=12   changed=0" in kept.output, kept.output[-3000:]

    pid = json.loads((tmp_path / "router" / "router.json").read_text())["pid"]
    stopped = fleet.playbook("router.yml", {"router_state": "stopped"}, inventories=[inventory], timeout=300)
    assert stopped.returncode == 0 and "router stopped at" in stopped.output, stopped.output[-3000:]
    assert not os.path.exists("/proc/%d" % pid) or open("/proc/%d/cmdline" % pid, "rb").read() != b"sglang::router"
