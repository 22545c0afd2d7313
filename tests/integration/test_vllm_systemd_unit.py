"""The vllm_server role's systemd unit and environment file render, and the unit passes
`systemd-analyze verify`.

As tests/integration/test_systemd_unit.py does for sglang_server: the role's own command.yml
composes the launch (include_role tasks_from, server_plan with engine vllm), then
ansible.builtin.template writes roles/vllm_server/templates/vllm.service.j2 and vllm.env.j2
into a temporary directory. No systemd runs here (no systemd as PID 1 on these machines), so
starting and stopping the unit is not exercised: only what the role would write.
"""
import json
import os
import shlex

from test_systemd_unit import directives, verify
from test_systemd_unit import pytestmark as needs_systemd_analyze

from tests.support.ansible import run_playbook
from tests.support.paths import PYTHON, REPO

TEMPLATES = os.path.join(REPO, "roles", "vllm_server", "templates")
KEY = "gf-VLLM-UNIT-KEY-0001"

pytestmark = needs_systemd_analyze  # skipped without systemd-analyze, as the sglang_server unit test

PLAYBOOK = """\
- name: Render the vllm_server unit
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Compose the launch as the role does
      ansible.builtin.include_role:
        name: gpufleet.serving.vllm_server
        tasks_from: command
        public: true
    - name: Render the unit
      ansible.builtin.template:
        src: {templates}/vllm.service.j2
        dest: "{{{{ unit_dir }}}}/{{{{ vllm_server_instance }}}}.service"
        mode: "0644"
    - name: Render the environment file
      ansible.builtin.template:
        src: {templates}/vllm.env.j2
        dest: "{{{{ unit_dir }}}}/{{{{ vllm_server_instance }}}}.env"
        mode: "0644"
"""


def render(tmp_path, **role_vars):
    """Render the unit and its environment with ROLE_VARS (ansible-playbook -vv, whose output is kept
    in tmp_path/output.txt); return (unit path, unit text, env text)."""
    playbook = tmp_path / "render.yml"
    playbook.write_text(PLAYBOOK.format(templates=TEMPLATES))
    unit_dir = tmp_path / "units"
    unit_dir.mkdir()
    extra = {"unit_dir": str(unit_dir), "vllm_server_supervisor": "systemd",
             "vllm_server_python": PYTHON, "vllm_server_entry_point": PYTHON,
             "vllm_server_log_dir": str(tmp_path / "log"), "vllm_server_state_dir": str(tmp_path / "state")}
    extra.update(role_vars)
    proc = run_playbook(playbook, extra, flags=["-vv"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (tmp_path / "output.txt").write_text(proc.stdout + proc.stderr)
    (unit,) = unit_dir.glob("*.service")
    (env,) = unit_dir.glob("*.env")
    return unit, unit.read_text(), env.read_text()


def test_unit_renders_and_verifies(tmp_path):
    spec = {"method": "eagle3", "model": "/models/AQ-MedAI eagle3", "num_speculative_tokens": 3}
    unit, text, env = render(tmp_path, vllm_server_port=31899, vllm_server_model_path="/models/Kimi K2.5 INT4",
                             vllm_server_served_model_name="kimi k2.5", vllm_server_gpus=[0, 1],
                             vllm_server_tp_size=2, vllm_server_speculative_config=spec,
                             vllm_server_env={"NCCL_DEBUG": "WARN", "LABEL": "50% $HOME"})
    assert unit.name == "vllm-31899.service"
    d = directives(text)
    assert d["KillMode"] == ["mixed"] and d["KillSignal"] == ["SIGTERM"] and d["Restart"] == ["no"]
    assert d["UMask"] == ["0027"] and d["TimeoutStopSec"] == ["60"]
    assert d["EnvironmentFile"] == ["/etc/default/vllm-31899"]
    assert d["StandardOutput"] == d["StandardError"] == ["append:%s/vllm-31899.log" % (tmp_path / "log")]
    # ExecStart is the role's argv: `vllm serve MODEL`, spaces kept, the JSON config one word.
    argv = shlex.split(d["ExecStart"][0])
    assert argv[:3] == [PYTHON, "serve", "/models/Kimi K2.5 INT4"]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
    assert argv[argv.index("--served-model-name") + 1] == "kimi k2.5"
    assert argv[argv.index("--port") + 1] == "31899"
    assert json.loads(argv[argv.index("--speculative-config") + 1]) == spec
    assert "--config" not in argv  # no key, no key file
    # The environment file: CUDA_VISIBLE_DEVICES from vllm_server_gpus, values shell-quoted.
    lines = [line for line in env.splitlines() if not line.startswith("#")]
    assert sorted(lines) == ["CUDA_VISIBLE_DEVICES=0,1", "LABEL='50% $HOME'", "NCCL_DEBUG=WARN"]

    rc, lines = verify(unit)
    assert rc == 0 and not lines, "systemd-analyze verify %s (rc %d):\n%s" % (unit, rc, "\n".join(lines))


def test_key_only_in_the_config_file(tmp_path):
    """With a key, the unit passes --config STATE_DIR/INSTANCE.secret.yaml; the key is in neither file."""
    unit, text, env = render(tmp_path, vllm_server_port=31898, vllm_server_model_path="/models/m",
                             vllm_server_api_key=KEY)
    assert KEY not in text and KEY not in env
    assert KEY not in (tmp_path / "output.txt").read_text()  # nor in what the play printed at -vv
    argv = shlex.split(directives(text)["ExecStart"][0])
    assert argv[:3] == [PYTHON, "serve", "/models/m"]  # no log redactor in front of vLLM
    assert argv[argv.index("--config") + 1] == "%s/vllm-31898.secret.yaml" % (tmp_path / "state")
    assert "--api-key" not in argv


def test_verify_catches_a_missing_entry_point(tmp_path):
    """The check above can fail: a unit whose ExecStart does not exist is refused."""
    missing = str(tmp_path / "no-such-env" / "bin" / "vllm")
    unit, unused, unused_env = render(tmp_path, vllm_server_entry_point=missing, vllm_server_port=31897,
                                      vllm_server_model_path="/models/m")
    rc, lines = verify(unit)
    assert rc != 0
    assert any("no-such-env" in line or "not executable" in line.lower() for line in lines), lines
