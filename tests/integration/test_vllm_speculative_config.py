"""The checks of vllm_server_speculative_config before anything is stopped, run on localhost:
the role's own (include_role tasks_from speculative: the drafter against the target), then
server_plan's (the method, from the engine registry; a drafter and a token count, from the
engine file), with the
simulated models of sim/models as target and drafters. Each refusal names what is wrong and
fails in the task that checks it; an EAGLE-3 drafter that fits passes (also one named as only
vLLM registers it) and is registered as vllm_server_drafter_check; a method without an EAGLE-3
drafter skips the drafter check. No server, no fleet (server_plan only reads an empty state
directory): these run in seconds.
"""
import json
import os

from tests.support.ansible import run_playbook
from tests.support.paths import PYTHON, REPO

MODELS = os.path.join(REPO, "sim", "models")
TARGET = os.path.join(MODELS, "kimi-k2.5-int4")
GOOD = os.path.join(MODELS, "aq-medai-kimi-k2-eagle3")
MISMATCHED = os.path.join(MODELS, "mismatched-eagle3")

CASE = """\
- name: Check one speculative config
  block:
    - name: Run the role's check
      ansible.builtin.include_role:
        name: gpufleet.serving.vllm_server
        tasks_from: speculative
      vars:
        vllm_server_model_path: "{{ target }}"
        vllm_server_speculative_config: "{{ case }}"
    - name: Plan the server
      gpufleet.serving.server_plan:
        engine: vllm
        model_path: "{{ target }}"
        instance: vllm-speculative-check
        state_dir: "{{ state_dir }}"
        log_dir: "{{ state_dir }}"
        supervisor: process
        python: "{{ ansible_python_interpreter }}"
        speculative_config: "{{ case }}"
    - name: Note that it passed
      ansible.builtin.set_fact:
        outcomes: "{{ outcomes + [{'failed': false, 'check': vllm_server_drafter_check | default(none)}] }}"
  rescue:
    - name: Note how it failed
      ansible.builtin.set_fact:
        outcomes: "{{ outcomes + [{'failed': true, 'task': ansible_failed_task.name,
                                   'msg': ansible_failed_result.msg | default('')}] }}"
"""

PLAYBOOK = """\
- name: Check speculative configs
  hosts: localhost
  gather_facts: false
  vars:
    outcomes: []
  tasks:
    - name: Check each case
      ansible.builtin.include_tasks: {case_file}
      loop: "{{{{ cases }}}}"
      loop_control:
        loop_var: case
    - name: Save the outcomes
      ansible.builtin.copy:
        content: "{{{{ outcomes | to_json }}}}"
        dest: "{{{{ out_file }}}}"
        mode: "0600"
"""

CASES = [
    # (config, expected failing task or None, text the message must hold)
    ({"method": "eagle3", "model": GOOD, "num_speculative_tokens": 3}, None, None),
    ({"method": "eagle3", "model": MISMATCHED, "num_speculative_tokens": 3},
     "Check the drafter against the target before touching the server",
     "hidden_size differs: drafter hidden_size=4096, target hidden_size=7168"),
    ({"model": GOOD, "num_speculative_tokens": 3}, "Plan the server", "speculative_config has no method"),
    ({"method": "EAGLE3", "model": GOOD}, "Plan the server",
     "speculative_config.method 'EAGLE3' is not a speculative method vLLM knows: set method to one of ngram,"),
    ({"method": "eagle3", "num_speculative_tokens": 3}, "Plan the server", "needs `model`"),
    ({"method": "eagle3", "model": GOOD, "num_speculative_tokens": 0}, "Plan the server", "at least 1"),
    # No drafter of its own: no EAGLE-3 check (the mismatched directory is not read).
    ({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}, None, None),
    ({"method": "mtp", "num_speculative_tokens": 1}, None, None),
    ({"method": "eagle3", "model": GOOD, "num_speculative_tokens": None}, "Plan the server",
     "leave the key out, not null"),
]


def test_speculative_configs(tmp_path):
    # An EAGLE-3 drafter as vLLM names it (SGLang 0.5.23 does not register Eagle3LlamaForCausalLM):
    # the role checks it for vLLM (drafter_check engine vllm), so it passes.
    vllm_named = tmp_path / "vllm-named-eagle3"
    vllm_named.mkdir()
    config = json.loads(open(os.path.join(GOOD, "config.json"), encoding="utf-8").read())
    (vllm_named / "config.json").write_text(json.dumps(dict(config, architectures=["Eagle3LlamaForCausalLM"])))
    cases = CASES + [({"method": "eagle3", "model": str(vllm_named), "num_speculative_tokens": 3}, None, None)]
    case_file = tmp_path / "case.yml"
    case_file.write_text(CASE)
    playbook = tmp_path / "check.yml"
    playbook.write_text(PLAYBOOK.format(case_file=case_file))
    out = tmp_path / "outcomes.json"
    proc = run_playbook(playbook, {"cases": [c for c, unused, unused_text in cases], "target": TARGET,
                                   "out_file": str(out), "state_dir": str(tmp_path / "state"),
                                   "ansible_python_interpreter": PYTHON})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    outcomes = json.loads(out.read_text())
    assert len(outcomes) == len(cases)
    for (spec, task, text), got in zip(cases, outcomes):
        if task is None:
            assert got["failed"] is False, (spec, got)
        else:
            assert got["failed"] is True and got["task"] == task, (spec, got)
            assert text in got["msg"], (spec, got)
    # The drafter that fits is registered with the fields checked; ngram and mtp skip the check.
    assert outcomes[0]["check"]["drafter"]["hidden_size"] == 7168
    assert outcomes[0]["check"]["drafter"]["architectures"] == ["LlamaForCausalLMEagle3"]
    assert outcomes[6]["check"]["skipped"] is True and outcomes[7]["check"]["skipped"] is True
    assert outcomes[9]["check"]["drafter"]["architectures"] == ["Eagle3LlamaForCausalLM"]
