"""A module_defaults entry for an action group reaches its members, through ansible-playbook."""
import yaml

from tests.support.ansible import run_playbook


def test_an_endpoint_group_default_reaches_server_wait(tmp_path):
    # server_wait in check mode probes once and reports the URL it probed: the group's, since
    # the task names none (base_url is required).
    playbook = tmp_path / "defaults.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "A group default",
        "hosts": "localhost",
        "gather_facts": False,
        "module_defaults": {"group/gpufleet.serving.endpoint": {"base_url": "http://127.0.0.1:9", "validate_certs": False}},
        "tasks": [
            {"name": "Probe", "gpufleet.serving.server_wait": {"timeout": 1}, "check_mode": True, "register": "probe"},
            {"name": "Check", "ansible.builtin.assert": {"that": ["probe.url == 'http://127.0.0.1:9'", "not probe.ready"]}},
        ],
    }]))
    proc = run_playbook(playbook)
    assert proc.returncode == 0, proc.stdout + proc.stderr
