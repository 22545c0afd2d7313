# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The _fleet role's rollout_start.yml and rollout_end.yml on the controller, without a fleet: the
real sglang-router 0.3.2 in front of a stand-in server (tests/support/servers/standin.py). A probe
through it is started, waited for, stopped and reported (its table in the output, its files, the
router's lock taken and dropped); a router that does not answer fails the start at once with the
probe's own error; a held lock refuses the start before any probe. test_rollout.py runs the probe
in swap_to_base.yml on a simulated fleet."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._proc import run_lock
from tests.support.ansible import run_playbook
from tests.support.net import free_port
from tests.support.router import start_router
from tests.support.servers.launch import StandIn

PLAYBOOK = """
- name: A rollout that only probes
  hosts: localhost
  gather_facts: false
  vars: {fleet_report_dir: "%(dir)s", fleet_probe: true, fleet_engine: {teardown_fact: sglang_server_teardown}}
  tasks:
    - name: Start
      ansible.builtin.include_role: {name: gpufleet.serving._fleet, tasks_from: rollout_start.yml}
    - name: End
      ansible.builtin.include_role: {name: gpufleet.serving._fleet, tasks_from: rollout_end.yml}
"""


@pytest.fixture
def standin():
    server = StandIn("--rate", "400", "--ttft", "0.01")
    yield server
    server.stop()


def _play(tmp_path, router_url):
    path = tmp_path / "probe.yml"
    path.write_text(PLAYBOOK % {"dir": tmp_path / "report"})
    return run_playbook(path, {"router_url": router_url, "router_lock_dir": str(tmp_path / "locks"),
                               "rollout_probe_output_len": 20, "rollout_probe_clients": 2}, timeout=300)


def test_the_probe_is_started_stopped_and_reported(procs, tmp_path, standin):
    router = start_router(procs, tmp_path, [standin.url])
    run = _play(tmp_path, router.url)
    assert run.returncode == 0, run.stdout[-4000:]
    data = json.loads((tmp_path / "report" / "rollout_probe.json").read_text())
    assert data["sent"] > 0 and data["completed"] == data["sent"] and (data["failed"], data["broken"]) == (0, 0)
    assert data["healthy_floor"] == 1 and data["phases"]["during"]["requests"] == data["sent"]
    assert "requests through the router, %d completed, 0 failed, 0 broken streams" % data["completed"] in run.stdout
    assert (tmp_path / "report" / "rollout_probe.png").exists() and (tmp_path / "report" / "rollout_probe.html").exists()
    assert not (tmp_path / "locks" / run_lock.lock_path("", router.url)).exists()  # dropped at the end


def test_a_router_that_does_not_answer_fails_the_start_with_the_probe_error(tmp_path):
    url = "http://127.0.0.1:%d" % free_port()
    run = _play(tmp_path, url)
    assert run.returncode != 0
    assert "the traffic probe through %s did not start its load: the router at %s does not answer" % (url, url) \
        in run.stdout, run.stdout[-4000:]
    assert (tmp_path / "report" / "rollout_probe.stop").exists()  # the probe is told to stop


def test_a_held_lock_refuses_the_start_before_any_probe(tmp_path):
    url = "http://127.0.0.1:%d" % free_port()
    run_lock.acquire(str(tmp_path / "locks"), url, "the other rollout", run_lock.run_owner())
    run = _play(tmp_path, url)
    assert run.returncode != 0
    assert "refusing to start: another rollout through %s is running (the other rollout" % url in run.stdout
    assert not (tmp_path / "report").exists()
