"""The sglang_server role's systemd unit renders and passes `systemd-analyze verify`.

The unit is rendered the way the role renders it: the role's own command.yml builds the
launch command (include_role tasks_from), then ansible.builtin.template writes
roles/sglang_server/templates/sglang.service.j2 into a temporary directory. The unit names
/etc/default/INSTANCE as its EnvironmentFile; `verify` does not read environment files, so
the test leaves /etc alone. ExecStart must name an executable that exists: the project's
own Python stands in for the SGLang environment's interpreter.
"""
import os
import shlex
import shutil
import subprocess

import pytest

from tests.support.ansible import run_playbook
from tests.support.paths import PYTHON, REPO

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
TEMPLATE = os.path.join(REPO, "roles", "sglang_server", "templates", "sglang.service.j2")

pytestmark = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None,
    reason="systemd-analyze is not installed (apt-get install systemd); the unit cannot be verified")

PLAYBOOK = """\
- name: Render the sglang_server unit
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Compose the launch as the role does
      ansible.builtin.include_role:
        name: gpufleet.serving.sglang_server
        tasks_from: command
        public: true
    - name: Render the unit
      ansible.builtin.template:
        src: {template}
        dest: "{{{{ unit_dir }}}}/{{{{ sglang_server_instance }}}}.service"
        mode: "0644"
"""


def render(tmp_path, **role_vars):
    """Render the unit with ROLE_VARS; return (path, text)."""
    playbook = tmp_path / "render.yml"
    playbook.write_text(PLAYBOOK.format(template=TEMPLATE))
    unit_dir = tmp_path / "units"
    unit_dir.mkdir()
    extra = {"unit_dir": str(unit_dir), "sglang_server_supervisor": "systemd",
             "sglang_server_log_dir": str(tmp_path / "log"),
             "sglang_server_state_dir": str(tmp_path / "state")}
    extra.update(role_vars)
    proc = run_playbook(playbook, extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    units = list(unit_dir.iterdir())
    assert len(units) == 1, units
    return units[0], units[0].read_text()


def verify(unit):
    """Run `systemd-analyze verify` on UNIT; return (rc, the lines about this unit)."""
    proc = subprocess.run([SYSTEMD_ANALYZE, "verify", str(unit)], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, SYSTEMD_LOG_COLOR="0"), check=False)
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if unit.name in line]
    return proc.returncode, lines


def directives(text):
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, unused, value = line.partition("=")
            out.setdefault(key, []).append(value)
    return out


def test_unit_renders_and_verifies(tmp_path):
    # The entry point must exist for `verify`: the project's Python stands in for bin/sglang.
    unit, text = render(tmp_path, sglang_server_python=PYTHON, sglang_server_entry_point=PYTHON,
                        sglang_server_port=31999,
                        sglang_server_model_path="/models/Kimi K2.5 INT4",
                        sglang_server_served_model_name="kimi k2.5",
                        sglang_server_env={"NCCL_DEBUG": "WARN"})
    assert unit.name == "sglang-31999.service"
    d = directives(text)
    assert d["KillMode"] == ["mixed"]
    assert d["UMask"] == ["0027"]
    assert d["KillSignal"] == ["SIGTERM"]
    assert d["TimeoutStopSec"] == ["60"]
    assert d["Restart"] == ["no"]
    assert d["EnvironmentFile"] == ["/etc/default/sglang-31999"]
    assert d["StandardOutput"] == ["append:%s/sglang-31999.log" % (tmp_path / "log")]
    # ExecStart is one line whose words are the role's argv, spaces in arguments kept.
    argv = shlex.split(d["ExecStart"][0])
    assert argv[:2] == [PYTHON, "serve"]
    assert argv[argv.index("--model-path") + 1] == "/models/Kimi K2.5 INT4"
    assert argv[argv.index("--served-model-name") + 1] == "kimi k2.5"
    assert argv[argv.index("--port") + 1] == "31999"

    rc, lines = verify(unit)
    assert rc == 0 and not lines, "systemd-analyze verify %s (rc %d):\n%s" % (unit, rc, "\n".join(lines))


def test_verify_catches_a_missing_interpreter(tmp_path):
    """The check above can fail: a unit whose ExecStart does not exist is refused."""
    missing = str(tmp_path / "no-such-env" / "bin" / "python")
    unit, unused = render(tmp_path, sglang_server_python=missing, sglang_server_port=31998,
                          sglang_server_model_path="/models/m")
    rc, lines = verify(unit)
    assert rc != 0
    assert any("no-such-env" in line or "not executable" in line.lower() for line in lines), lines


def test_default_entry_point_is_sglang_serve_beside_the_interpreter(tmp_path):
    """sglang 0.5.23's recommended entry point: the `sglang` console script of the environment."""
    unit, text = render(tmp_path, sglang_server_python="/opt/sglang/.venv/bin/python3",
                        sglang_server_model_path="/models/m")
    argv = shlex.split(directives(text)["ExecStart"][0])
    assert argv[:4] == ["/opt/sglang/.venv/bin/sglang", "serve", "--model-path", "/models/m"]
    assert "sglang.launch_server" not in text


def test_unit_with_a_key_runs_the_server_under_the_log_redactor(tmp_path):
    """With a key the unit's main process is log_redact.py, which writes the log with the key masked."""
    unit, text = render(tmp_path, sglang_server_python=PYTHON, sglang_server_entry_point=PYTHON,
                        sglang_server_model_path="/models/m", sglang_server_port=31997,
                        sglang_server_api_key="gf-UNIT-KEY-0001")
    assert "gf-UNIT-KEY-0001" not in text
    d = directives(text)
    argv = shlex.split(d["ExecStart"][0])
    secret = "%s/sglang-31997.secret.yaml" % (tmp_path / "state")
    assert argv[:5] == [PYTHON, "%s/log_redact.py" % (tmp_path / "state"), secret, "--", PYTHON]
    assert argv[argv.index("--config") + 1] == secret
    # SIGTERM to the redactor only: it passes the signal on, so the server gets it once.
    assert d["KillMode"] == ["mixed"]
    assert d["StandardOutput"] == ["append:%s/sglang-31997.log" % (tmp_path / "log")]
