"""A simulated fleet (sim/simctl fleet) for playbook tests.

Each test gets its own fleet in tmp_path on its own sshd port and SGLang port (fleets
of other sessions may be up on the same 127.0.0.N addresses meanwhile). `fleet down`
runs in a finalizer: it SIGKILLs each host's namespace init by its recorded PID (with
the start time checked), which takes every process of that host with it.
"""
import json
import os
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
from simlib import fleet_proc  # (start-time checked kills, as `fleet down` does)

from tests.support import leftovers, paths
from tests.support.polling import holds_within

REPO = Path(paths.REPO)
PY = Path(paths.PYTHON)
SIMCTL = Path(paths.SIMCTL)
ANSIBLE_PLAYBOOK = paths.ansible_tool("ansible-playbook")  # GPUFLEET_ANSIBLE_BIN: which ansible-core
ANSIBLE = paths.ansible_tool("ansible")

needs_fleet = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("tini") and os.path.exists("/usr/sbin/sshd")
                              and shutil.which("unshare")),
    reason="simulated fleets need root, unshare, openssh-server and tini")


def ansible_env():
    env = dict(os.environ)
    env.update({"ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")})
    return env


class Fleet:
    def __init__(self, root, hosts, ssh_port, server_port):
        self.dir = Path(root)
        self.hosts = hosts
        self.ssh_port = ssh_port
        self.server_port = server_port
        self.inventory = self.dir / "inventory.yml"

    # ---- life cycle ------------------------------------------------------

    def up(self, *extra):
        proc = subprocess.run([str(PY), str(SIMCTL), "fleet", "up", str(self.dir), "--hosts",
                               str(self.hosts), "--port", str(self.ssh_port), *extra],
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
        assert proc.returncode == 0, "fleet up: %s%s" % (proc.stdout, proc.stderr)
        # The hosts outlive `fleet up` (init adopts them): the session's end looks in their namespaces.
        for pid_file in sorted((self.dir / "hosts").glob("*/init.pid")):
            leftovers.register_namespace(int(pid_file.read_text()))

    def down(self):
        proc = subprocess.run([str(PY), str(SIMCTL), "fleet", "down", str(self.dir)],
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
        assert proc.returncode == 0, "fleet down: %s%s" % (proc.stdout, proc.stderr)

    # ---- hosts -----------------------------------------------------------

    def name(self, index):
        return "sim-h%d" % index

    def address(self, index):
        return "127.0.0.%d" % (index + 1)

    def host_dir(self, index):
        return self.dir / "hosts" / ("h%d" % index)

    def kill_host(self, index):
        """SIGKILL the host's namespace init (recorded PID, start time checked): the
        kernel then kills every process of that host, sshd and the server included."""
        state = json.loads((self.host_dir(index) / "host.json").read_text())
        pid = int((self.host_dir(index) / "init.pid").read_text())
        assert pid == state["init_pid"]
        assert fleet_proc.kill_if_same(pid, state["init_start"]), "init %d is gone or reused" % pid
        assert wait_for(lambda: not fleet_proc.is_alive(pid, state["init_start"]), timeout=10)

    def ssh(self, index, command, check=True, timeout=60):
        proc = subprocess.run(
            ["ssh", "-i", str(self.dir / "ssh" / "id_ed25519"), "-p", str(self.ssh_port),
             "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
             "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
             "-o", "ConnectTimeout=10", "root@" + self.address(index), command],
            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)
        if check:
            assert proc.returncode == 0, "ssh %s %r: rc %d\n%s%s" % (
                self.address(index), command, proc.returncode, proc.stdout, proc.stderr)
        return proc

    def hold_gpu(self, index, gpu, mib, title, daemon=False):
        """Start a detached fake-GPU holder on the host; return its PID (host's namespace).

        daemon: run it as the daemon's executable (a GPU daemon by identity)."""
        out = self.ssh(index, "%s %s gpu hold \"$FAKE_NVML_ROOT\" --gpu %d --mib %d --title %s --detach%s"
                       % (PY, SIMCTL, gpu, mib, title, " --daemon-exe" if daemon else "")).stdout
        return int(out.strip().splitlines()[-1])

    def server_state_file(self, index):
        return (self.host_dir(index) / "lib" / "gpufleet-serving"
                / ("sglang-%d.json" % self.server_port))

    def server_info(self, index):
        url = "http://%s:%d/server_info" % (self.address(index), self.server_port)
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.loads(resp.read())

    # ---- ansible -----------------------------------------------------------

    def playbook_cmd(self, name, extra_vars=None, inventories=(), args=(), playbooks=REPO / "playbooks"):
        cmd = [str(ANSIBLE_PLAYBOOK), "-i", str(self.inventory), *args]
        for inv in inventories:
            cmd += ["-i", str(inv)]
        # Progress files in the fleet's own directory, not the host's /var/tmp.
        progress = str(self.dir / "bench.progress")
        defaults = {"sglang_server_port": self.server_port,
                    "bench_progress_file": progress, "swap_bench_progress_file": progress}
        cmd += [str(Path(playbooks) / name), "-e", json.dumps(dict(defaults, **(extra_vars or {})))]
        return cmd

    def playbook(self, name, extra_vars=None, inventories=(), timeout=300, args=(), playbooks=REPO / "playbooks",
                 env=None):
        """Run playbooks/NAME (from PLAYBOOKS: another copy of the collection) with ENV over ansible_env()."""
        proc = subprocess.run(self.playbook_cmd(name, extra_vars, inventories, args, playbooks), cwd=str(REPO),
                              env=dict(ansible_env(), **(env or {})), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)
        proc.output = proc.stdout + proc.stderr
        return proc

    def module(self, host, module, args=None):
        """Run one module on a host through SSH; return its result (dict)."""
        env = ansible_env()
        env.update({"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "minimal"})
        proc = subprocess.run([str(ANSIBLE), "-i", str(self.inventory), host, "-m", module]
                              + (["-a", json.dumps(args)] if args else []),
                              cwd=str(REPO), env=env, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout.split("=>", 1)[1])


def wait_for(condition, timeout, interval=0.02):
    return holds_within(condition, timeout, interval)


def start_fleet(request, tmp_path, hosts, ssh_port, *extra):
    fleet = Fleet(tmp_path / "fleet", hosts, ssh_port, 31000 + ssh_port % 1000)
    request.addfinalizer(fleet.down)
    fleet.up(*extra)
    return fleet


def planned_commands(output, host, experiment, steps):
    """From a --check run's output: the plan's headline for HOST must be there, and each of
    STEPS ("N. VARIANT [run] ENGINE on all GPUs") gives the command line printed under it."""
    assert "%s: %d variant(s) of %s, %d to run" % (host, len(steps), experiment, len(steps)) in output, output[-6000:]
    lines = [line.strip().strip('",') for line in output.splitlines()]
    return [lines[lines.index(step) + 1] for step in steps]
