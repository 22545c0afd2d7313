"""Load: reset.yml on 8 simulated hosts at once, then nothing of the fleet left running.

One fleet of 8 hosts (own sshd and SGLang ports), a server-like GPU holder on every GPU of
every host, `ansible-playbook -f 8 reset.yml`: every host must come out clean. Then
`fleet down`, and the test checks that no process of the fleet is left: none in any host's
PID namespace, no namespace init or unshare, nothing listening on the fleet's addresses,
no process anywhere with a server title of the fleet. The timed comparison with one host
is bench/fleet_load.py.
"""
import json
import os
import socket
import subprocess

from _fleet_fixtures import PY, REPO, SIMCTL, Fleet, ansible_env, fleet_proc, needs_fleet

pytestmark = needs_fleet

HOSTS = 8
TITLE = "sglang::scheduler_TP0 load-test-%d"


def host_states(fleet):
    return [json.loads((fleet.host_dir(i) / "host.json").read_text()) for i in range(1, HOSTS + 1)]


def listening(address, port):
    try:
        socket.create_connection((address, port), timeout=1).close()
        return True
    except OSError:
        return False


def leftovers(fleet, states):
    """Everything of the fleet still running after `fleet down` (empty when all is gone)."""
    left = []
    for state in states:
        for key in ("init", "unshare"):
            if fleet_proc.is_alive(state[key + "_pid"], state[key + "_start"]):
                left.append("%s %s %d" % (state["name"], key, state[key + "_pid"]))
        left += ["%s pid %d" % (state["name"], pid) for pid in fleet_proc.pids_in_ns(state["pid_ns"])]
        for port in (fleet.ssh_port, fleet.server_port):
            if listening(state["address"], port):
                left.append("%s:%d listens" % (state["address"], port))
    marker = (TITLE % fleet.ssh_port).encode()
    for pid in fleet_proc.all_pids():
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                if marker in handle.read():
                    left.append("pid %d has the fleet's title" % pid)
        except OSError:
            pass
    return left


def test_reset_on_8_hosts_all_clean_and_nothing_left(request, tmp_path):
    # This test's ports: sshd 2710, SGLang 31710.
    fleet = Fleet(tmp_path / "fleet", HOSTS, 2710, 31710)
    request.addfinalizer(fleet.down)
    fleet.up()
    states = host_states(fleet)
    assert len({s["pid_ns"] for s in states}) == HOSTS

    holders = {}
    for index in range(1, HOSTS + 1):
        # One process holding all 8 GPUs, titled like an SGLang worker: the pattern kill's job.
        out = fleet.ssh(index, "%s %s gpu hold \"$FAKE_NVML_ROOT\" --gpu 0,1,2,3,4,5,6,7 --mib 3000 "
                               "--title '%s' --detach" % (PY, SIMCTL, TITLE % fleet.ssh_port)).stdout
        holders[fleet.name(index)] = int(out.split()[-1])

    summary_file = tmp_path / "reset.json"
    cmd_vars = {"reset_term_timeout": 5, "reset_timeout": 30, "reset_summary_file": str(summary_file)}
    run = subprocess.run(fleet.playbook_cmd("reset.yml", cmd_vars) + ["-f", str(HOSTS)], cwd=str(REPO),
                         env=ansible_env(), capture_output=True, text=True, timeout=180,
                         stdin=subprocess.DEVNULL, check=False)
    assert run.returncode == 0, (run.stdout + run.stderr)[-6000:]
    results = {h["host"]: h for h in json.loads(summary_file.read_text())["hosts"]}
    assert sorted(results) == sorted(fleet.name(i) for i in range(1, HOSTS + 1))
    for result in results.values():
        assert result["outcome"] == "clean", result
        assert result["killed"] == 1 and result["killed_commands"][0].startswith("sglang::scheduler_TP0"), result
        assert result["gpus_free"] == result["gpus_selected"] == 8, result
    for index in range(1, HOSTS + 1):
        fleet.ssh(index, "! kill -0 %d 2>/dev/null" % holders[fleet.name(index)])

    assert leftovers(fleet, states)  # the check sees a fleet that runs
    fleet.down()
    assert leftovers(fleet, states) == []
    assert not os.path.exists(fleet.dir / "hosts")
