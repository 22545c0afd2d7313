"""`simctl fleet`: real namespaces, real sshd, real SSH and Ansible on loopback.

Needs root plus openssh-server and tini (apt-get install openssh-server tini).
Every fleet a test starts is taken down by a finalizer; the only processes a
test kills are ones it started (a `sleep` it ran, a fleet's own init).
"""
import json
import os
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

import psutil
import pytest
import yaml
from simlib import fakegpu, fleet_cli, fleet_ops, fleet_proc

from tests.support import paths
from tests.support.polling import holds_within, poll

SIM = Path(paths.SIM)
REPO = Path(paths.REPO)
SIMCTL = Path(paths.SIMCTL)
PY = Path(paths.PYTHON)
ANSIBLE = Path(paths.VENV_BIN) / "ansible"
# Not the default 22: a colleague's fleet may be up on 127.0.0.2:22 meanwhile.
PORT = 2222
ENV_PROBE = ("SGLANG_SIM_PROBE", "probe value 1")

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("tini") and os.path.exists("/usr/sbin/sshd")),
    reason="needs root, openssh-server and tini")


def simctl(*args, check=True):
    proc = subprocess.run([str(PY), str(SIMCTL), *map(str, args)], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
    if check:
        assert proc.returncode == 0, "simctl %s: rc %d\n%s%s" % (
            " ".join(map(str, args)), proc.returncode, proc.stdout, proc.stderr)
    return proc


def ssh(fleet_dir, address, command, port=PORT, check=True):
    proc = subprocess.run(
        ["ssh", "-i", str(fleet_dir / "ssh" / "id_ed25519"), "-p", str(port),
         "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
         "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
         "-o", "ConnectTimeout=10", "root@" + address, command],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
    if check:
        assert proc.returncode == 0, "ssh %s %r: rc %d\n%s" % (
            address, command, proc.returncode, proc.stderr)
    return proc


def start_fleet(request, fleet_dir, hosts, port, *extra):
    request.addfinalizer(lambda: simctl("fleet", "down", fleet_dir))
    simctl("fleet", "up", fleet_dir, "--hosts", hosts, "--gpus", 2, "--port", port, *extra)
    return fleet_dir


def fleet_processes(fleet_dir):
    """(pid, create_time) of every init, unshare and namespace member of the fleet."""
    found = set()
    for state_file in fleet_dir.glob("hosts/h*/host.json"):
        state = json.loads(state_file.read_text())
        for key in ("init_pid", "unshare_pid"):
            proc = psutil.Process(state[key])
            found.add((proc.pid, proc.create_time()))
        for proc in psutil.Process(state["init_pid"]).children(recursive=True):
            found.add((proc.pid, proc.create_time()))
    return found


def still_running(pid, created):
    try:
        proc = psutil.Process(pid)
        return proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _cmdline(proc):
    """PROC's argv, or None once it ended (an SSH session's processes end at any moment)."""
    try:
        return proc.cmdline()
    except psutil.NoSuchProcess:
        return None


def root_ssh_state():
    path = Path("/root/.ssh")
    if not path.exists():
        return None
    return sorted((p.name, p.stat().st_mtime_ns) for p in path.iterdir())


@pytest.fixture(scope="module")
def fleet(request, tmp_path_factory):
    fleet_dir = tmp_path_factory.mktemp("fleet") / "f"
    start_fleet(request, fleet_dir, 2, PORT, "--env", "%s=%s" % ENV_PROBE)
    inventory = yaml.safe_load((fleet_dir / "inventory.yml").read_text())
    return fleet_dir, inventory["all"]["children"]["gpu_hosts"]["hosts"]


def test_inventory_describes_each_host(fleet):
    fleet_dir, hosts = fleet
    assert sorted(hosts) == ["sim-h1", "sim-h2"]
    for index, name in enumerate(["sim-h1", "sim-h2"], start=2):
        hv = hosts[name]
        assert hv["ansible_host"] == hv["sglang_server_host"] == "127.0.0.%d" % index
        assert hv["ansible_port"] == PORT
        assert hv["ansible_user"] == "root"
        assert hv["ansible_python_interpreter"] == str(PY)
        assert Path(hv["ansible_ssh_private_key_file"]).is_file()
        assert hv["sim_gpu_root"] == str(fleet_dir / "hosts" / ("h%d" % (index - 1)) / "gpu")
        assert Path(hv["sim_gpu_root"]).is_dir()
        assert hv["sglang_server_python"] == str(SIM / "bin" / "sglang-python")
        # vllm_server finds its console script next to the interpreter.
        assert hv["vllm_server_host"] == hv["ansible_host"]
        assert (Path(hv["vllm_server_python"]).parent / "vllm").is_file()


def test_sessions_get_the_hosts_gpu_environment(fleet):
    fleet_dir, hosts = fleet
    for name, hv in hosts.items():
        out = ssh(fleet_dir, hv["ansible_host"], "env -0").stdout
        env = dict(item.split("=", 1) for item in out.split("\0") if "=" in item)
        expected = {ENV_PROBE[0]: ENV_PROBE[1], "FAKE_NVML_ROOT": hv["sim_gpu_root"]}
        if (SIM / "simlib" / "gpu_cli.py").exists():
            printed = simctl("gpu", "env", hv["sim_gpu_root"]).stdout
            from simlib.fleet_host import parse_exports
            expected.update(parse_exports(printed))
            assert {"LD_LIBRARY_PATH", "GPUFLEET_NVIDIA_DEVICES"} <= set(expected)
        for key, value in expected.items():
            assert env.get(key) == value, "%s on %s" % (key, name)


def test_run_log_lib_tmp_are_private_to_each_host(fleet):
    fleet_dir, hosts = fleet
    h1, h2 = hosts["sim-h1"]["ansible_host"], hosts["sim-h2"]["ansible_host"]
    probe = "fleet-probe-%s" % uuid.uuid4().hex
    dirs = {"/run": "run", "/var/log": "log", "/var/lib": "lib", "/tmp": "tmp"}
    ssh(fleet_dir, h1, " && ".join("echo h1 > %s/%s" % (d, probe) for d in dirs))
    for target, private in dirs.items():
        path = "%s/%s" % (target, probe)
        assert ssh(fleet_dir, h1, "cat " + path).stdout == "h1\n"
        assert ssh(fleet_dir, h2, "test -e " + path, check=False).returncode == 1, path
        assert not os.path.exists(path), "%s leaked onto the real host" % path
        assert (fleet_dir / "hosts" / "h1" / private / probe).read_text() == "h1\n"
    # sshd's privilege-separation dir and the fleet dir stay reachable inside.
    ssh(fleet_dir, h1, "test -d /run/sshd && test -f %s/sshd_config"
        % (fleet_dir / "hosts" / "h1"))


def test_each_host_has_its_own_process_table(fleet):
    fleet_dir, hosts = fleet
    h1, h2 = hosts["sim-h1"]["ansible_host"], hosts["sim-h2"]["ansible_host"]
    duration = "3599.%d" % (uuid.uuid4().int % 10 ** 6)  # a unique command line
    ns_pid = int(ssh(fleet_dir, h1, "sleep %s </dev/null >/dev/null 2>&1 & echo $!"
                     % duration).stdout)
    try:
        assert duration in ssh(fleet_dir, h1, "ps -eo args").stdout
        assert duration not in ssh(fleet_dir, h2, "ps -eo args").stdout
        for address in (h1, h2):
            assert ssh(fleet_dir, address, "ps -o comm= -p 1").stdout.strip() == "tini"
            count = int(ssh(fleet_dir, address, "ps -e --no-headers | wc -l").stdout)
            assert 3 <= count <= 12, "%s sees %d processes" % (address, count)
        # On the real host the sleep is a descendant of h1's init, in h1's namespace.
        init = psutil.Process(int((fleet_dir / "hosts" / "h1" / "init.pid").read_text()))
        sleeps = [p for p in init.children(recursive=True) if _cmdline(p) == ["sleep", duration]]
        assert len(sleeps) == 1
        assert os.readlink("/proc/%d/ns/pid" % sleeps[0].pid) == \
            os.readlink("/proc/%d/ns/pid" % init.pid) != os.readlink("/proc/self/ns/pid")
        assert sleeps[0].pid != ns_pid  # host PID and namespace PID differ
    finally:
        ssh(fleet_dir, h1, "kill %d" % ns_pid, check=False)
    assert holds_within(lambda: duration not in ssh(fleet_dir, h1, "ps -eo args").stdout, 10.0, 0.05)


def test_ansible_reaches_both_hosts(fleet):
    fleet_dir, unused = fleet
    proc = subprocess.run([str(ANSIBLE), "-i", str(fleet_dir / "inventory.yml"), "gpu_hosts",
                           "-m", "ansible.builtin.ping"], cwd=str(REPO), capture_output=True,
                          text=True, timeout=180, stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("sim-h1", "sim-h2"):
        assert "%s | SUCCESS" % name in proc.stdout


def test_status_reports_both_hosts(fleet):
    fleet_dir, unused = fleet
    inits = [int((fleet_dir / "hosts" / ("h%d" % i) / "init.pid").read_text()) for i in (1, 2)]

    def counted_alike():
        # SSH sessions of earlier tests may still be ending: agree with a count taken alongside.
        rows = json.loads(simctl("fleet", "status", fleet_dir, "--json").stdout)
        counts = [1 + len(psutil.Process(pid).children(recursive=True)) for pid in inits]
        return rows if [r["processes"] for r in rows] == counts else None
    rows = poll(counted_alike, 10, 0.1, "fleet status to count each host's processes")
    assert [r["name"] for r in rows] == ["sim-h1", "sim-h2"]
    for index, row in enumerate(rows, start=1):
        assert row["init_pid"] == inits[index - 1]
        assert row["address"] == "127.0.0.%d" % (index + 1)
        assert row["alive"] is True and row["sshd"] is True
        assert psutil.Process(inits[index - 1]).cmdline()[0] == "tini"
    table = simctl("fleet", "status", fleet_dir).stdout
    assert "sim-h1" in table and "sim-h2" in table


def test_up_refuses_a_dir_with_a_fleet(fleet):
    fleet_dir, unused = fleet
    proc = simctl("fleet", "up", fleet_dir, "--hosts", 2, "--port", PORT, check=False)
    assert proc.returncode == 1 and "already set up" in proc.stderr
    assert simctl("fleet", "status", fleet_dir, check=False).returncode == 0


def test_down_leaves_nothing_behind(request, tmp_path):
    ssh_before = root_ssh_state()
    fleet_dir = start_fleet(request, tmp_path / "f", 2, PORT + 1)
    ssh(fleet_dir, "127.0.0.2", "sleep 3600 </dev/null >/dev/null 2>&1 &", port=PORT + 1)

    def settled():
        # The SSH session's own sshd and shell end a moment after ssh returns (seen in CI):
        # the processes down must end are the ones that last.
        try:
            found = fleet_processes(fleet_dir)
        except psutil.NoSuchProcess:
            return None
        return found if all(still_running(*p) for p in found) else None
    procs = poll(settled, 10, 0.05, "the fleet's processes without the SSH session's")
    assert len(procs) >= 2 * 3 + 1  # unshare, tini, sshd per host, and the sleep
    assert any(psutil.Process(pid).name() == "sleep" for pid, unused in procs)
    simctl("fleet", "down", fleet_dir)
    assert [p for p in procs if still_running(*p)] == []
    assert not (tmp_path / "f").exists()  # up created it, down removed it
    for address in ("127.0.0.2", "127.0.0.3"):
        assert ssh(fleet_dir, address, "true", port=PORT + 1, check=False).returncode == 255
    assert root_ssh_state() == ssh_before
    assert "nothing" in simctl("fleet", "down", fleet_dir).stdout  # idempotent


def test_down_handles_a_host_that_died(request, tmp_path):
    fleet_dir = start_fleet(request, tmp_path / "f", 2, PORT + 2)
    (tmp_path / "f" / "keep.txt").write_text("not the fleet's")
    init_pid = int((fleet_dir / "hosts" / "h2" / "init.pid").read_text())
    os.kill(init_pid, signal.SIGKILL)  # the fleet's own init, which this test started

    def h2_dead():
        rows = json.loads(simctl("fleet", "status", fleet_dir, "--json", check=False).stdout)
        return rows[1]["alive"] is False and rows[0]["alive"] is True
    assert holds_within(h2_dead, 10.0, 0.05)
    assert simctl("fleet", "status", fleet_dir, check=False).returncode == 1
    procs = fleet_processes_alive_hosts(fleet_dir)
    simctl("fleet", "down", fleet_dir)
    assert [p for p in procs if still_running(*p)] == []
    assert sorted(os.listdir(fleet_dir)) == ["keep.txt"]  # others' files stay


def test_down_ignores_a_reused_namespace_number(tmp_path):
    # A host whose init died long ago: the kernel has freed its PID namespace, and the
    # number recorded at `up` now names another namespace (here: this test's own, full of
    # processes that are not the fleet's). down must neither wait for them nor fail.
    gone = subprocess.Popen(["true"])
    gone.wait()
    host_dir = tmp_path / "f" / "hosts" / "h1"
    host_dir.mkdir(parents=True)
    (host_dir / "host.json").write_text(json.dumps({
        "name": "sim-h1", "init_pid": gone.pid, "init_start": 1,
        "unshare_pid": gone.pid, "unshare_start": 1,
        "pid_ns": os.readlink("/proc/self/ns/pid")}))
    assert fleet_proc.pids_in_ns(os.readlink("/proc/self/ns/pid"))  # strangers do live there
    out = []
    fleet_ops.down(str(tmp_path / "f"), say=out.append)
    assert out == ["fleet down: 1 hosts stopped, %s cleaned" % (tmp_path / "f")]
    assert not (tmp_path / "f" / "hosts").exists()


def fleet_processes_alive_hosts(fleet_dir):
    found = set()
    for state_file in fleet_dir.glob("hosts/h*/host.json"):
        state = json.loads(state_file.read_text())
        try:
            init = psutil.Process(state["init_pid"])
            found.add((init.pid, init.create_time()))
            found.update((p.pid, p.create_time()) for p in init.children(recursive=True))
        except psutil.NoSuchProcess:
            pass
    return found


def test_refuses_without_root(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(fleet_cli.os, "geteuid", lambda: 1000)
    assert fleet_cli.main(["up", str(tmp_path / "f"), "--hosts", "1"]) == 2
    assert capsys.readouterr().err.strip() == fleet_cli.NEEDS_ROOT
    assert not (tmp_path / "f").exists()


def test_names_the_package_of_a_missing_tool(monkeypatch, capsys, tmp_path):
    real_which = shutil.which
    monkeypatch.setattr(fleet_cli.shutil, "which",
                        lambda tool: None if tool == "tini" else real_which(tool))
    assert fleet_cli.main(["up", str(tmp_path / "f"), "--hosts", "1"]) == 2
    err = capsys.readouterr().err
    assert "tini" in err and "apt-get install tini" in err


def fleet_json(*args):
    return json.loads(simctl("fleet", *args).stdout)


def test_gpu_model_faults_and_ensure(request, tmp_path):
    """--gpu-model names the GPUs; the faults act on their host only; --ensure keeps the same fleet
    and replaces another; --check changes nothing."""
    fleet_dir, port = tmp_path / "f", 2223
    request.addfinalizer(lambda: simctl("fleet", "down", fleet_dir))
    held = {"kind": "gpu_held", "host": "sim-h1", "gpu": 1, "mib": 3000}
    crash = {"kind": "warmup_crash", "host": "sim-h2"}
    up = ["up", fleet_dir, "--hosts", 2, "--gpus", 2, "--port", port, "--ensure", "--json",
          "--fault", json.dumps(held), "--fault", json.dumps(crash), "--sglang", '{"accept_length": 3.5}']
    assert fleet_json(*up, "--gpu-model", "h100")["action"] == "started"
    h1, h2 = fleet_dir / "hosts" / "h1", fleet_dir / "hosts" / "h2"
    config = fakegpu.read_config(str(h1 / "gpu"))
    assert (config["name"], config["memory_mib"], config["count"]) == ("NVIDIA H100 80GB HBM3", 81559, 2)
    # The stranger is a process of sim-h1 (its PID namespace), holding 3000 MiB on GPU 1 only.
    assert [g["used_mib"] for g in fakegpu.read_status(str(h1 / "gpu"))] == [0, 3000]
    assert [g["used_mib"] for g in fakegpu.read_status(str(h2 / "gpu"))] == [0, 0]
    ns = json.loads((h1 / "host.json").read_text())["pid_ns"]
    titles = [psutil.Process(p).cmdline()[0] for p in fleet_proc.pids_in_ns(ns)]
    assert fleet_ops.STRANGER_TITLE % 1 in titles
    assert "SGLANG_SIM_FAIL_WARMUP=1\n" in (h2 / "session.env").read_text()
    assert "SGLANG_SIM_FAIL_WARMUP" not in (h1 / "session.env").read_text()
    assert "SGLANG_SIM_ACCEPT_LENGTH=3.5\n" in (h1 / "session.env").read_text()
    init = json.loads((h1 / "host.json").read_text())["init_pid"]

    assert fleet_json(*up, "--gpu-model", "h100") == {
        "changed": False, "action": "kept", "inventory": str(fleet_dir / "inventory.yml")}
    assert json.loads((h1 / "host.json").read_text())["init_pid"] == init
    assert fleet_json(*up, "--gpu-model", "h200", "--check")["action"] == "would replace"
    assert fakegpu.read_config(str(h1 / "gpu"))["name"] == "NVIDIA H100 80GB HBM3"
    assert fleet_json(*up, "--gpu-model", "h200", "--gpu-memory-mib", 100000)["action"] == "replaced"
    config = fakegpu.read_config(str(h1 / "gpu"))
    assert (config["name"], config["memory_mib"]) == ("NVIDIA H200", 100000)

    assert fleet_json("down", fleet_dir, "--check", "--json")["action"] == "would stop"
    assert (fleet_dir / "fleet.json").exists()
    assert fleet_json("down", fleet_dir, "--json")["changed"] is True
    assert fleet_json("down", fleet_dir, "--json")["changed"] is False


def test_a_kits_real_sglang_outside_the_kit_stays_visible_in_the_hosts(request, tmp_path):
    # sim_fleet_sglang_real_root links the kit to a real SGLang elsewhere, here under /tmp
    # like a checkout CI clones into /tmp: the hosts' private /tmp must not hide it.
    from simlib import kit_cli
    real = tmp_path / "sglang-real"
    (real / "sglang").mkdir(parents=True)
    (real / "sglang" / "marker").write_text("the real one\n")
    kit, unused = kit_cli.build(str(tmp_path / "cache"), str(PY), str(real))
    fleet_dir = tmp_path / "f"
    port = PORT + 7

    def kit_simctl(*args):
        return subprocess.run([str(PY), os.path.join(kit, "simctl"), *map(str, args)],
                              capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL, check=False)
    request.addfinalizer(lambda: kit_simctl("fleet", "down", fleet_dir))
    up = kit_simctl("fleet", "up", fleet_dir, "--hosts", 1, "--gpus", 1, "--port", port)
    assert up.returncode == 0, up.stderr
    seen = ssh(fleet_dir, "127.0.0.2", "cat %s/build/sglang-real/sglang/marker" % kit, port=port)
    assert seen.stdout == "the real one\n"
