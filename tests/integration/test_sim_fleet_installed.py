# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpufleet.serving.sim_fleet from an installed collection.

The collection is built with ansible-galaxy and installed into a temporary directory, as a
user gets it; ansible-playbook runs there with only that copy on its collections path. The
playbook builds the kit into a fresh cache and brings up two H200 hosts with both faults;
gpu_info sees the preset's name and memory and the stranger on sim-h1's GPU 3, and
sglang_server on sim-h2 fails with the warm-up crash as its cause. Then `down`, twice.
The only thing taken from the checkout is build/sglang-real (sim_fleet_sglang_real_root),
so that the test does not download SGLang.
"""
import json
import os
import shutil
import subprocess

import pytest
import yaml

from tests.support import paths

PORT = 2231
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("tini") and os.path.exists("/usr/sbin/sshd")),
    reason="needs root, openssh-server and tini")

PLAY = """
- name: Read the GPUs of sim-h1
  hosts: sim-h1
  gather_facts: false
  tasks:
    - name: GPU facts
      gpufleet.serving.gpu_info:
      register: info
    - name: Keep them
      ansible.builtin.copy:
        content: "{{ info | to_json }}"
        dest: "%(out)s/gpu_info.json"
      delegate_to: localhost

- name: Launch SGLang on sim-h2, whose warm-up crashes
  hosts: sim-h2
  gather_facts: false
  tasks:
    - name: Launch
      block:
        - name: The sglang_server role
          ansible.builtin.include_role:
            name: gpufleet.serving.sglang_server
      rescue:
        - name: Keep the failure
          ansible.builtin.copy:
            content: "{{ ansible_failed_result | to_json }}"
            dest: "%(out)s/launch.json"
          delegate_to: localhost
"""


def run(cmd, cwd, env, timeout=300):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, "%s: rc %d\n%s\n%s" % (" ".join(cmd), proc.returncode,
                                                        proc.stdout[-4000:], proc.stderr[-2000:])
    return proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(work dir, environment) with the collection built and installed there, not the checkout."""
    work = tmp_path_factory.mktemp("installed")
    galaxy = paths.ansible_tool("ansible-galaxy")
    run([galaxy, "collection", "build", paths.REPO, "--output-path", str(work / "dist")], work, None)
    tarball = next((work / "dist").glob("gpufleet-serving-*.tar.gz"))
    run([galaxy, "collection", "install", "--force", str(tarball), "-p", str(work / "coll")], work, None)
    (work / "ansible.cfg").write_text("[defaults]\ncollections_path = %s\n" % (work / "coll"))
    env = dict(os.environ, ANSIBLE_CONFIG=str(work / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(work / "coll"), ANSIBLE_LOCALHOST_WARNING="False",
               ANSIBLE_HOST_KEY_CHECKING="False")
    return work, env


def playbook(work, env, state, *extra):
    variables = {"sim_fleet_state": state, "sim_fleet_dir": str(work / "fleet")}
    if state == "up":
        variables.update({
            "sim_fleet_hosts": 2, "sim_fleet_gpu_model": "h200", "sim_fleet_ssh_port": PORT,
            "sim_fleet_cache_dir": str(work / "cache"), "sim_fleet_python": paths.PYTHON,
            "sim_fleet_sglang_real_root": os.path.join(paths.REPO, "build", "sglang-real"),
            "sim_fleet_sglang": {"profile": "fast"},
            "sim_fleet_faults": [{"kind": "warmup_crash", "host": "sim-h2"},
                                 {"kind": "gpu_held", "host": "sim-h1", "gpu": 3, "mib": 4096}]})
    (work / "vars.json").write_text(json.dumps(variables))
    return run([paths.ansible_tool("ansible-playbook"), "gpufleet.serving.sim_fleet",
                "-e", "@" + str(work / "vars.json"), *extra], work, env)


def recap(stdout):
    line = next(x for x in stdout.splitlines() if x.startswith("localhost"))
    return dict(item.split("=") for item in line.split(":", 1)[1].split())


def test_sim_fleet_from_an_installed_collection(installed, request):
    work, env = installed
    request.addfinalizer(lambda: subprocess.run([paths.PYTHON, paths.SIMCTL, "fleet", "down",
                                                 str(work / "fleet")], check=False))
    out = playbook(work, env, "up", "--check")  # would build the kit and start the fleet
    assert recap(out)["changed"] == "2" and "would start" in out
    assert not (work / "fleet").exists() and not (work / "cache").exists()
    out = playbook(work, env, "up")
    assert recap(out)["changed"] == "2"  # the kit built into the fresh cache, the fleet started
    inventory = yaml.safe_load((work / "fleet" / "inventory.yml").read_text())
    hosts = inventory["all"]["children"]["gpu_hosts"]["hosts"]
    assert sorted(hosts) == ["sim-h1", "sim-h2"]
    kit = os.path.dirname(os.path.dirname(hosts["sim-h1"]["sglang_server_python"]))
    assert os.path.dirname(kit) == str(work / "cache" / "kits")  # built from the installed copy
    assert hosts["sim-h1"]["ansible_python_interpreter"] == paths.PYTHON
    assert recap(playbook(work, env, "up"))["changed"] == "0"  # the same fleet stays
    assert recap(playbook(work, env, "up", "--check"))["changed"] == "0"

    (work / "play.yml").write_text(PLAY % {"out": work})
    run([paths.ansible_tool("ansible-playbook"), "-i", str(work / "fleet" / "inventory.yml"),
         str(work / "play.yml")], work, env)
    info = json.loads((work / "gpu_info.json").read_text())
    assert info["gpu_count"] == 8
    assert {(g["name"], g["total_mib"]) for g in info["gpus"]} == {("NVIDIA H200", 143771)}
    assert [g["used_mib"] for g in info["gpus"]] == [0, 0, 0, 4096, 0, 0, 0, 0]
    assert [h["cmdline"] for h in info["gpus"][3]["holders"]] == ["stranger-gpu-job --gpu 3"]
    launch = json.loads((work / "launch.json").read_text())
    assert launch["cause"]["kind"] == "warmup_error", launch.get("msg")

    assert recap(playbook(work, env, "down"))["changed"] == "1"
    assert not (work / "fleet").exists()
    assert recap(playbook(work, env, "down"))["changed"] == "0"
