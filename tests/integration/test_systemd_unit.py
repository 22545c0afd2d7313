"""The server roles' systemd unit and environment file render, and the unit passes
`systemd-analyze verify`, for each engine.

They are rendered the way the role renders them: gpufleet.serving._server's plan.yml, with the
engine's role's own mapping of its variables (tests/support/server_role.py), composes the
launch, then ansible.builtin.template writes roles/_server/templates/server.service.j2 and
server.env.j2 into a temporary directory. The unit names /etc/default/INSTANCE as its
EnvironmentFile; `verify` does not read environment files, so the test leaves /etc alone.
ExecStart must name an executable that exists: the project's own Python stands in for the
engine's console script. No systemd runs here (no systemd as PID 1 on these machines), so
starting and stopping the unit is not exercised: only what the role would write.
"""
import json
import os
import shlex
import shutil
import subprocess

import pytest

from tests.support.ansible import run_playbook
from tests.support.paths import PYTHON, REPO
from tests.support.server_role import play

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
TEMPLATES = os.path.join(REPO, "roles", "_server", "templates")
KEY = "gf-UNIT-KEY-0001"

pytestmark = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None,
    reason="systemd-analyze is not installed (apt-get install systemd); the unit cannot be verified")

TASKS = """\
    - name: Compose the launch as the role does
      ansible.builtin.include_role:
        name: gpufleet.serving._server
        tasks_from: plan
        public: true
    - name: Render the unit
      ansible.builtin.template:
        src: {templates}/server.service.j2
        dest: "{{{{ unit_dir }}}}/{{{{ server_spec.instance }}}}.service"
        mode: "0644"
    - name: Render the environment file
      ansible.builtin.template:
        src: {templates}/server.env.j2
        dest: "{{{{ unit_dir }}}}/{{{{ server_spec.instance }}}}.env"
        mode: "0644"
"""

# What differs between the engines' command lines: the model (a flag or vllm serve's
# positional), the tensor-parallel flag, how speculative decoding is given, and whether a log
# redactor runs in front of a server with a key (SGLang prints the key in its log, vLLM masks it).
ENGINES = {
    "sglang": {"model": lambda argv: argv[argv.index("--model-path") + 1], "tp_flag": "--tp-size",
               "speculative": {"speculative_args": ["--speculative-algorithm", "EAGLE3",
                                                    "--speculative-draft-model-path", "/models/AQ-MedAI eagle3"]},
               "redactor": True},
    "vllm": {"model": lambda argv: argv[2], "tp_flag": "--tensor-parallel-size",
             "speculative": {"speculative_config": {"method": "eagle3", "model": "/models/AQ-MedAI eagle3",
                                                    "num_speculative_tokens": 3}},
             "redactor": False},
}


def render(tmp_path, engine, **role_vars):
    """Render the unit and its environment with the engine's role variables ROLE_VARS, given
    without the role's prefix (ansible-playbook -vv, whose output is kept in tmp_path/output.txt);
    return (unit path, unit text, env text)."""
    role = "%s_server" % engine
    playbook = tmp_path / "render.yml"
    playbook.write_text(play(role, "Render the %s unit" % role, TASKS.format(templates=TEMPLATES)))
    unit_dir = tmp_path / "units"
    unit_dir.mkdir()
    settings = {"supervisor": "systemd", "python": PYTHON, "entry_point": PYTHON,
                "log_dir": str(tmp_path / "log"), "state_dir": str(tmp_path / "state")}
    settings.update(role_vars)
    extra = {"%s_%s" % (role, name): value for name, value in settings.items()}
    extra["unit_dir"] = str(unit_dir)
    proc = run_playbook(playbook, extra, flags=["-vv"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (tmp_path / "output.txt").write_text(proc.stdout + proc.stderr)
    (unit,) = unit_dir.glob("*.service")
    (env,) = unit_dir.glob("*.env")
    return unit, unit.read_text(), env.read_text()


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


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_unit_renders_and_verifies(tmp_path, engine):
    spec = ENGINES[engine]
    unit, text, env = render(tmp_path, engine, port=31899, model_path="/models/Kimi K2.5 INT4",
                             served_model_name="kimi k2.5", gpus=[0, 1], tp_size=2,
                             env={"NCCL_DEBUG": "WARN", "LABEL": "50% $HOME"}, **spec["speculative"])
    assert unit.name == "%s-31899.service" % engine
    d = directives(text)
    assert d["KillMode"] == ["mixed"] and d["KillSignal"] == ["SIGTERM"] and d["Restart"] == ["no"]
    assert d["UMask"] == ["0027"] and d["TimeoutStopSec"] == ["60"]
    assert d["EnvironmentFile"] == ["/etc/default/%s-31899" % engine]
    assert d["StandardOutput"] == d["StandardError"] == ["append:%s/%s-31899.log" % (tmp_path / "log", engine)]
    # ExecStart is one line whose words are the role's argv, spaces in arguments kept.
    argv = shlex.split(d["ExecStart"][0])
    assert argv[:2] == [PYTHON, "serve"]
    assert spec["model"](argv) == "/models/Kimi K2.5 INT4"
    assert argv[argv.index(spec["tp_flag"]) + 1] == "2"
    assert argv[argv.index("--served-model-name") + 1] == "kimi k2.5"
    assert argv[argv.index("--port") + 1] == "31899"
    if "speculative_config" in spec["speculative"]:  # the JSON config is one word
        assert json.loads(argv[argv.index("--speculative-config") + 1]) == spec["speculative"]["speculative_config"]
    else:
        assert argv[argv.index("--speculative-draft-model-path") + 1] == "/models/AQ-MedAI eagle3"
    assert "--config" not in argv  # no key, no key file
    # The environment file: CUDA_VISIBLE_DEVICES from the role's gpus, values shell-quoted.
    lines = [line for line in env.splitlines() if line and not line.startswith("#")]
    assert sorted(lines) == ["CUDA_VISIBLE_DEVICES=0,1", "LABEL='50% $HOME'", "NCCL_DEBUG=WARN"]

    rc, lines = verify(unit)
    assert rc == 0 and not lines, "systemd-analyze verify %s (rc %d):\n%s" % (unit, rc, "\n".join(lines))


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_default_entry_point_is_the_console_script_beside_the_interpreter_and_must_exist(tmp_path, engine):
    """The engine's console script in the interpreter's directory (`sglang serve`, the entry point
    sglang 0.5.23 recommends; `vllm serve`); where it does not exist, verify refuses the unit,
    so the check above can fail."""
    python = str(tmp_path / "no-such-env" / "bin" / "python3")
    unit, text, unused_env = render(tmp_path, engine, python=python, entry_point="", port=31898,
                                    model_path="/models/m")
    argv = shlex.split(directives(text)["ExecStart"][0])
    assert argv[:2] == [str(tmp_path / "no-such-env" / "bin" / engine), "serve"]
    assert ENGINES[engine]["model"](argv) == "/models/m"
    assert "launch_server" not in text
    rc, lines = verify(unit)
    assert rc != 0
    assert any("no-such-env" in line or "not executable" in line.lower() for line in lines), lines


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_key_only_in_the_config_file_and_the_log_redacted_where_the_engine_prints_it(tmp_path, engine):
    """With a key, the unit passes --config STATE_DIR/INSTANCE.secret.yaml; the key is in neither file
    nor in what the play printed. SGLang's unit runs the server under log_redact.py, which writes the
    log with the key masked (KillMode=mixed: SIGTERM to the redactor only, which passes it on)."""
    unit, text, env = render(tmp_path, engine, port=31897, model_path="/models/m", api_key=KEY)
    assert KEY not in text and KEY not in env
    assert KEY not in (tmp_path / "output.txt").read_text()
    argv = shlex.split(directives(text)["ExecStart"][0])
    secret = "%s/%s-31897.secret.yaml" % (tmp_path / "state", engine)
    assert argv[argv.index("--config") + 1] == secret
    assert "--api-key" not in argv
    if ENGINES[engine]["redactor"]:
        assert argv[:5] == [PYTHON, "%s/log_redact.py" % (tmp_path / "state"), secret, "--", PYTHON]
    else:
        assert argv[:2] == [PYTHON, "serve"]
    assert directives(text)["StandardOutput"] == ["append:%s/%s-31897.log" % (tmp_path / "log", engine)]
