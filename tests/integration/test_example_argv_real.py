"""Every command line the example inventory makes, parsed by the real SGLang parser.

The roles compose the launch for inventories/example-blackwell (the base server and the
EAGLE-3 server, each without and with an API key): _server's plan.yml (with sglang_server's
server_spec, tests/support/server_role.py, and eagle_drafter's, the same lookup with the
drafter) runs in ansible-playbook against the example's host gpu01 (connection
local, paths moved under tmp_path), and the secret --config file is written from the role's own
task. Each argv then goes through real sglang 0.5.23's `prepare_server_args` (and its
--config merger), as `sglang serve` hands it over (sim/realsglang.py: the pinned wheel,
torch/triton stand-ins). A flag real SGLang does not know, or a --config key it refuses,
fails here with SGLang's own message.
"""
import json
import os

import pytest
import realsglang
import yaml

from tests.support.ansible import run_playbook
from tests.support.paths import PYTHON, REPO
from tests.support.server_role import play

INVENTORY = os.path.join(REPO, "inventories", "example-blackwell")
LAUNCH_TASKS = os.path.join(REPO, "roles", "_server", "tasks", "launch_files.yml")
KEY = "gf-EXAMPLE-KEY-5a1e"

RENDER_TASKS = """\
    - name: The base server
      ansible.builtin.include_role:
        name: gpufleet.serving._server
        tasks_from: plan
        public: true
    - name: Keep the base argv
      ansible.builtin.set_fact:
        rendered_base: "{{ _server_plan.argv }}"
        rendered_base_launch: "{{ _server_plan.launch_argv }}"
    - name: The EAGLE-3 server, as eagle_drafter's main.yml hands it to _server
      ansible.builtin.include_role:
        name: gpufleet.serving._server
        tasks_from: plan
        public: true
      vars:
        server_spec: "{{ lookup('gpufleet.serving.server_spec', 'sglang', drafter=true) }}"
    - name: Write the argv
      ansible.builtin.copy:
        content: "{{ {'base': rendered_base, 'base_launch': rendered_base_launch,
                      'eagle': _server_plan.argv} | to_json }}"
        dest: "{{ out_dir }}/argv.json"
        mode: "0600"
    - name: Create the state directory
      ansible.builtin.file:
        path: "{{ sglang_server_state_dir }}"
        state: directory
        mode: "0700"
    - name: Write the secret config as the role's launch_files.yml does
      ansible.builtin.copy:
        content: "{{ secret_content }}"
        dest: "{{ _server_plan.paths.secret_config }}"
        mode: "0600"
      no_log: true
      when: sglang_server_api_key | length > 0
"""


def role_secret_content():
    """The content template of launch_files.yml's task that writes the key file."""
    with open(LAUNCH_TASKS) as handle:
        (task,) = [t for t in yaml.safe_load(handle) if t["name"] == "Write the API key where only root can read it"]
    return task["ansible.builtin.copy"]["content"]


def render(tmp_path, key):
    out = tmp_path / "out"
    out.mkdir()
    playbook = tmp_path / "render.yml"
    playbook.write_text(play("sglang_server", "Compose the example's launches through the roles", RENDER_TASKS,
                             hosts="gpu01"))
    extra = {"ansible_connection": "local", "ansible_python_interpreter": PYTHON, "ansible_become": False,
             "out_dir": str(out), "sglang_server_state_dir": str(tmp_path / "state"),
             "sglang_server_log_dir": str(tmp_path / "log"), "sglang_server_supervisor": "process",
             "secret_content": role_secret_content()}
    if key:
        extra["sglang_server_api_key"] = key
    proc = run_playbook(playbook, extra, inventory=INVENTORY, connection=None, timeout=180)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return json.loads((out / "argv.json").read_text())


@pytest.fixture(scope="module")
def real_parser():
    try:
        realsglang.server_args_module()
    except realsglang.NotInstalled as exc:
        pytest.fail("real sglang is needed for this check: %s" % exc)
    return realsglang


def parse_real(parser, argv):
    """Parse ARGV (the role's `<entry> serve ...`) as real `sglang serve` does; fail with its message."""
    assert argv[0] == "/opt/sglang/.venv/bin/sglang" and argv[1] == "serve", argv[:2]
    result = parser.parse(argv[2:], entry="serve")
    assert result.code == 0, "real sglang refuses %s:\n%s" % (argv, result.message[-3000:])
    return parser.as_dict(result.args)


@pytest.mark.parametrize("key", [None, KEY], ids=["no-key", "key"])
def test_example_launches_parse_with_real_sglang(tmp_path, real_parser, key):
    argv = render(tmp_path, key)
    base = parse_real(real_parser, argv["base"])
    eagle = parse_real(real_parser, argv["eagle"])

    # What the example's group_vars say is what real SGLang gets.
    for args in (base, eagle):
        assert args["model_path"] == "/models/moonshotai/Kimi-K2.5-INT4"
        assert args["served_model_name"] == "kimi-k2.5"
        assert (args["tp_size"], args["host"], args["port"]) == (8, "127.0.0.1", 30000)
        assert args["max_running_requests"] == 128 and args["enable_metrics"] is True
        assert args["trust_remote_code"] is True
        # The --config file the role wrote, merged by SGLang's own ConfigArgumentMerger.
        assert args["api_key"] == key
    assert (base["mem_fraction_static"], base["cuda_graph_max_bs_decode"]) == (0.85, 128)
    assert base["speculative_algorithm"] is None
    assert (eagle["mem_fraction_static"], eagle["cuda_graph_max_bs_decode"]) == (0.8, 8)
    assert eagle["speculative_algorithm"] == "EAGLE3"
    assert eagle["speculative_draft_model_path"] == "/models/AQ-MedAI/Kimi-K2-Instruct-eagle3"
    assert (eagle["speculative_num_steps"], eagle["speculative_eagle_topk"],
            eagle["speculative_num_draft_tokens"]) == (3, 1, 4)

    if key:
        secret = tmp_path / "state" / "sglang-30000.secret.yaml"
        assert argv["base"][argv["base"].index("--config") + 1] == str(secret)
        assert oct(secret.stat().st_mode & 0o777) == "0o600"
        assert KEY not in " ".join(argv["base"] + argv["eagle"])
        # The supervisor runs the server under the log redactor, the key file as its secrets.
        assert argv["base_launch"][:4] == ["/opt/sglang/.venv/bin/python", str(tmp_path / "state" / "log_redact.py"),
                                           str(secret), "--"]
    else:
        assert "--config" not in argv["base"] and argv["base_launch"] == argv["base"]


def test_the_check_can_fail(real_parser):
    """The spelling sglang 0.5.23 dropped is refused by the real parser: the test above would see it."""
    result = real_parser.parse(["--model-path", "/m", "--cuda-graph-max-bs", "8"], entry="serve")
    assert result.code == 2 and "ambiguous option: --cuda-graph-max-bs" in result.message
    result = real_parser.parse(["--model-path", "/m", "--no-such-flag"], entry="serve")
    assert result.code == 2 and "unrecognized arguments: --no-such-flag" in result.message
