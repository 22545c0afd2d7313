"""The vllm_server role end to end: real ansible-playbook, real SSH, one simulated host
running the simulated `vllm serve` (sim/bin/vllm) on its fake GPUs.

Start (ready, vllm_server_result), a second run keeps the server, stop frees every GPU; and
the survivor trap: with --sim-survivors, the API server killed by its PID leaves
VLLM::EngineCore and the workers holding the GPUs, and state stopped (gpu_release with
vLLM's kill set) kills them and verifies every GPU free.
"""
import json
import os

from _fleet_fixtures import needs_fleet, start_fleet

from tests.support.paths import REPO

pytestmark = needs_fleet

VLLM_CLI = os.path.join(REPO, "tests", "sim", "bin", "vllm")
KEY = "sekrit-vllm-key"
FAST = ["--sim-init-seconds", "0.05", "--sim-load-seconds", "0.1", "--sim-kv-seconds", "0.05",
        "--sim-graph-seconds", "0.1"]

PLAYBOOK = """\
- name: Run vllm_server
  hosts: sim-h1
  gather_facts: false
  tasks:
    - name: Run the role
      ansible.builtin.include_role:
        name: gpufleet.serving.vllm_server
      vars:
        vllm_server_host: "{{ sglang_server_host }}"
        vllm_server_model_path: "{{ sglang_server_model_path }}"
        vllm_server_python: "{{ sglang_server_python }}"

    - name: Save the facts
      ansible.builtin.copy:
        content: "{{ {'result': vllm_server_result | default(none),
                      'teardown': vllm_server_teardown | default(none)} | to_json }}"
        dest: "{{ facts_file }}"
        mode: "0600"
      delegate_to: localhost
"""


def _run(fleet, tmp_path, name, expect_rc=0, **extra):
    playbook = tmp_path / "vllm.yml"
    playbook.write_text(PLAYBOOK)
    facts = tmp_path / ("%s.json" % name)
    extra_vars = {"facts_file": str(facts), "vllm_server_entry_point": VLLM_CLI,
                  "vllm_server_port": fleet.server_port, "vllm_server_progress_interval": 2,
                  "vllm_server_ready_timeout": 120}
    extra_vars.update(extra)
    run = fleet.playbook(str(playbook), extra_vars)
    assert run.returncode == expect_rc, run.output[-6000:]
    return run, json.loads(facts.read_text()) if expect_rc == 0 else None


def _gpus(fleet):
    return fleet.module(fleet.name(1), "gpufleet.serving.gpu_info")["gpus"]


def test_start_keep_stop(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 1, 2471)
    refused, unused = _run(fleet, tmp_path, "systemd", expect_rc=2, vllm_server_supervisor="systemd")
    assert "systemd supervisor: not yet for vllm_server" in refused.output, refused.output[-3000:]
    unused, first = _run(fleet, tmp_path, "start", vllm_server_extra_args=FAST, vllm_server_api_key=KEY)
    result = first["result"]
    cmdline = fleet.ssh(1, "tr '\\0' ' ' < /proc/%d/cmdline" % result["pid"]).stdout
    assert "serve" in cmdline and "--config" in cmdline and KEY not in cmdline, cmdline
    assert KEY not in fleet.ssh(1, "cat %s" % result["log_path"]).stdout
    secret = cmdline.split("--config ", 1)[1].split()[0]
    assert fleet.ssh(1, "stat -c %%a %s" % secret).stdout.strip() == "600"
    assert result["relaunched"] is True and result["pid"] > 0, result
    assert result["base_url"] == "http://%s:%d" % (fleet.address(1), fleet.server_port)
    assert result["vllm_version"] == "0.33.0" and result["speculative"] is False
    assert result["ready_seconds"] is not None and result["phases"], result
    titles = [h["cmdline"] for g in _gpus(fleet) for h in g["holders"]]
    assert any(t.startswith("VLLM::Worker_TP") for t in titles), titles

    unused, second = _run(fleet, tmp_path, "keep", vllm_server_extra_args=FAST, vllm_server_api_key=KEY)
    assert second["result"]["relaunched"] is False and second["result"]["pid"] == result["pid"]
    assert second["teardown"] is None  # no teardown ran

    unused, stopped = _run(fleet, tmp_path, "stop", vllm_server_state="stopped")
    assert stopped["teardown"]["stopped"] is True, stopped
    assert fleet.ssh(1, "test -e %s" % secret, check=False).returncode == 1  # the key file is gone
    gpus = _gpus(fleet)
    assert len(gpus) == 8 and all(g["used_mib"] == 0 and not g["holders"] for g in gpus), gpus


def test_survivors_of_a_killed_api_server_are_released(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 1, 2472)
    unused, started = _run(fleet, tmp_path, "start", vllm_server_extra_args=FAST + ["--sim-survivors"])
    api = started["result"]["pid"]
    fleet.ssh(1, "kill -9 %d" % api)
    holders = [h["cmdline"] for g in _gpus(fleet) for h in g["holders"]]
    assert any(t.startswith("VLLM::Worker_TP") for t in holders), holders  # the survivors hold the GPUs

    unused, stopped = _run(fleet, tmp_path, "stop", vllm_server_state="stopped")
    killed = stopped["teardown"]["killed_titles"]
    assert "VLLM::EngineCore" in killed, killed
    gpus = _gpus(fleet)
    assert all(g["used_mib"] == 0 and not g["holders"] for g in gpus), gpus
