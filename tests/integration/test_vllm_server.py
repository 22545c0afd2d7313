"""The vllm_server role end to end: real ansible-playbook, real SSH, one simulated host
running the simulated `vllm serve` (sim/bin/vllm) on its fake GPUs (the fleet inventory
sets vllm_server_python, vllm_server_host and vllm_server_model_path).

Start (ready, vllm_server_result), a second run keeps the server, stop frees every GPU; and
the survivor trap: with --sim-survivors, the API server killed by its PID leaves
VLLM::EngineCore and the workers holding the GPUs, and state stopped (gpu_release with
vLLM's kill set) kills them and verifies every GPU free. A speculative config with a drafter
that does not fit the target, or a method vLLM does not know (given in the config, or composed
by the eagle_drafter role from its algorithm), fails before anything is stopped: the running
server and its GPU memory stay as they were.
"""
import json
import os

from _fleet_fixtures import needs_fleet, start_fleet

from tests.support.paths import REPO

pytestmark = needs_fleet

VLLM_CLI = os.path.join(REPO, "sim", "bin", "vllm")
MODELS = os.path.join(REPO, "sim", "models")
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

    - name: Save the facts
      ansible.builtin.copy:
        content: "{{ {'result': vllm_server_result | default(none),
                      'teardown': vllm_server_teardown | default(none)} | to_json }}"
        dest: "{{ facts_file }}"
        mode: "0600"
      delegate_to: localhost
"""


# The role in a block: the rescue saves how it failed and the registered drafter check.
REFUSED_PLAYBOOK = """\
- name: Run vllm_server, expecting a refusal
  hosts: sim-h1
  gather_facts: false
  tasks:
    - name: Run the role
      block:
        - name: Run vllm_server
          ansible.builtin.include_role:
            name: gpufleet.serving.vllm_server
      rescue:
        - name: Save how it failed
          ansible.builtin.copy:
            content: "{{ {'task': ansible_failed_task.name, 'msg': ansible_failed_result.msg | default(''),
                          'check': vllm_server_drafter_check | default(none)} | to_json }}"
            dest: "{{ facts_file }}"
            mode: "0600"
          delegate_to: localhost
"""

# eagle_drafter on vLLM in a block, as the fleet playbooks run it: the rescue saves how it failed.
REFUSED_EAGLE_PLAYBOOK = REFUSED_PLAYBOOK.replace(
    "name: gpufleet.serving.vllm_server", "name: gpufleet.serving.eagle_drafter").replace(
    "vllm_server_drafter_check | default(none)", "eagle_drafter_check | default(none)")


def _run(fleet, tmp_path, name, expect_rc=0, playbook_text=PLAYBOOK, **extra):
    playbook = tmp_path / ("%s.yml" % name)
    playbook.write_text(playbook_text)
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

    # A drafter with the wrong hidden size, and a method vLLM 0.33.0 does not know: refused before
    # anything is stopped (the same server, the same GPU holders), the drafter check registered.
    holders = sorted((g["index"], h["pid"]) for g in _gpus(fleet) for h in g["holders"])
    mismatched = {"method": "eagle3", "model": os.path.join(MODELS, "mismatched-eagle3"), "num_speculative_tokens": 3}
    unused, refused = _run(fleet, tmp_path, "mismatched", playbook_text=REFUSED_PLAYBOOK, vllm_server_extra_args=FAST,
                           vllm_server_api_key=KEY, vllm_server_speculative_config=mismatched)
    assert refused["task"] == "Check the drafter against the target before touching the server", refused
    assert "hidden_size" in refused["msg"] and "4096" in refused["msg"] and "7168" in refused["msg"], refused
    assert refused["check"]["failed"] is True, refused
    unknown = dict(mismatched, method="eagle4", model=os.path.join(MODELS, "aq-medai-kimi-k2-eagle3"))
    unused, refused = _run(fleet, tmp_path, "unknown", playbook_text=REFUSED_PLAYBOOK, vllm_server_extra_args=FAST,
                           vllm_server_api_key=KEY, vllm_server_speculative_config=unknown)
    assert refused["task"] == "Plan the server (compose the launch, read what runs, decide)", refused
    assert "speculative_config.method 'eagle4' is not a speculative method vLLM knows" in refused["msg"], refused
    assert "eagle3" in refused["msg"], refused
    assert refused["check"]["skipped"] is True, refused  # no drafter check for a method without one
    # eagle_drafter's algorithm, lowercased into the composed config's method: refused in the plan too.
    unused, refused = _run(fleet, tmp_path, "unknown-composed", playbook_text=REFUSED_EAGLE_PLAYBOOK,
                           vllm_server_extra_args=FAST, vllm_server_api_key=KEY, eagle_drafter_engine="vllm",
                           eagle_drafter_algorithm="EAGLE4",
                           eagle_drafter_model_path=os.path.join(MODELS, "aq-medai-kimi-k2-eagle3"))
    assert refused["task"] == "Plan the server (compose the launch, read what runs, decide)", refused
    assert "speculative.algorithm 'EAGLE4' (vLLM method 'eagle4') is not a speculative method vLLM knows" in (
        refused["msg"]), refused
    assert refused["check"]["failed"] is False, refused  # the drafter itself fits
    assert sorted((g["index"], h["pid"]) for g in _gpus(fleet) for h in g["holders"]) == holders
    fleet.ssh(1, "kill -0 %d" % result["pid"])  # the same API server still runs

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
