"""Fleet faults: one host fails, clearly and on its own, while the other hosts finish.

Real ansible-playbook over real SSH to a simulated fleet (sim/simctl fleet), one fleet
per test on its own sshd and SGLang ports, taken down in a finalizer. The only processes a
test kills are inside its own fleet's namespaces: the sshd of one host, found by the PID
that sshd recorded in the fleet's host dir (start time checked), and that host's SSH
sessions. The stranger that holds a port is started inside its host's namespace and ends
with the fleet.

A host lost altogether (its namespace init killed) during swap_to_eagle.yml is
tests/integration/test_playbooks.py::test_swap_to_eagle_host_lost_mid_run.
"""
import json
import os
import socket
import stat
import subprocess

from _fleet_fixtures import REPO, Fleet, ansible_env, fleet_proc, needs_fleet, wait_for

pytestmark = needs_fleet

SHORT_BENCH = {"swap_bench_levels": [1], "swap_bench_requests_per_level": 2,
               "swap_bench_warmup_requests": 0, "swap_bench_input_len": 32,
               "swap_bench_output_len": 16}


def start_fleet(request, tmp_path, hosts, ssh_port):
    # This file's ports: sshd 2700-2799, SGLang 31700-31799.
    fleet = Fleet(tmp_path / "fleet", hosts, ssh_port, 31000 + ssh_port % 1000)
    request.addfinalizer(fleet.down)
    fleet.up()
    return fleet


def summary_lines(output, host):
    return [line for line in output.splitlines() if '"%s: ' % host in line]


def ns_processes(fleet, index):
    """{host PID: (namespace PID, comm, cmdline)} of every live process of host INDEX."""
    state = json.loads((fleet.host_dir(index) / "host.json").read_text())
    out = {}
    for pid in fleet_proc.pids_in_ns(state["pid_ns"]):
        try:
            with open("/proc/%d/status" % pid) as handle:
                nspid = [line.split()[-1] for line in handle if line.startswith("NSpid:")][0]
            with open("/proc/%d/comm" % pid) as handle:
                comm = handle.read().strip()
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                cmdline = [a.decode(errors="replace") for a in handle.read().split(b"\0") if a]
        except (OSError, IndexError):
            continue
        out[pid] = (int(nspid), comm, cmdline)
    return out


def kill_sshd(fleet, index):
    """SIGKILL host INDEX's sshd (the PID it recorded in the host dir, translated to this
    machine's PID, start time checked) and then its SSH sessions (Ansible's multiplexed
    connection included): SSH to that host is down, its other processes run on."""
    recorded = int((fleet.host_dir(index) / "sshd.pid").read_text())
    procs = ns_processes(fleet, index)
    listener = [pid for pid, (nspid, _comm, _argv) in procs.items() if nspid == recorded]
    assert len(listener) == 1 and procs[listener[0]][1] == "sshd", (recorded, procs)
    sessions = [pid for pid, (_nspid, comm, _argv) in procs.items() if comm == "sshd" and pid != listener[0]]
    assert sessions, "no SSH session of Ansible's on the host: %s" % procs
    pinned = [(pid, fleet_proc.start_time(pid)) for pid in listener + sessions]
    assert fleet_proc.kill_if_same(*pinned[0]), "sshd %d is gone or reused" % listener[0]
    for pid, started in pinned[1:]:
        fleet_proc.kill_if_same(pid, started)
    assert wait_for(lambda: not any(fleet_proc.is_alive(pid, started) for pid, started in pinned),
                    timeout=10)


def test_reset_reports_a_host_whose_ssh_dies_mid_run(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2701)
    # On sim-h2 a server worker that survives SIGTERM keeps gpu_release busy for
    # reset_term_timeout seconds: SSH goes down while the module runs there.
    fleet.ssh(2, "%s %s gpu hold \"$FAKE_NVML_ROOT\" --gpu 0 --mib 4096 --title sglang::scheduler_TP0 "
                 "--catch-term --detach" % (REPO / ".venv" / "bin" / "python", REPO / "sim" / "simctl"))
    summary_file = tmp_path / "reset.json"
    proc = subprocess.Popen(
        fleet.playbook_cmd("reset.yml", {"reset_term_timeout": 30, "reset_timeout": 40,
                                         "reset_summary_file": str(summary_file)}),
        cwd=str(REPO), env=ansible_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, stdin=subprocess.DEVNULL)
    request.addfinalizer(lambda: proc.poll() is None and proc.kill())
    python = str(REPO / ".venv" / "bin" / "python")

    def module_runs():  # Ansible's module process (pipelined: the bare interpreter)
        return any(argv == [python] for _nspid, _comm, argv in ns_processes(fleet, 2).values())

    found = wait_for(module_runs, timeout=120)
    if not found:
        proc.kill()
    assert found, "gpu_release never ran on sim-h2:\n" + proc.communicate()[0][-4000:]
    kill_sshd(fleet, 2)
    output = proc.communicate(timeout=120)[0]

    assert proc.returncode != 0, output[-4000:]
    results = {h["host"]: h for h in json.loads(summary_file.read_text())["hosts"]}
    assert results["sim-h1"]["outcome"] == "clean", results
    assert results["sim-h1"]["gpus_free"] == 8
    assert results["sim-h2"]["outcome"] == "unreachable", results
    assert results["sim-h2"]["reason"].startswith("unreachable: "), results["sim-h2"]
    assert "127.0.0.3" in results["sim-h2"]["reason"], results["sim-h2"]
    table = [line for line in output.splitlines() if "sim-h2" in line and "unreachable" in line]
    assert table, output[-4000:]
    assert "GPUs not verified free on sim-h2" in output
    # SSH to sim-h2 is down for good (the host's other processes may run on); sim-h1 answers.
    assert fleet.ssh(2, "true", check=False, timeout=30).returncode == 255
    fleet.ssh(1, "true")


def test_swap_to_eagle_reports_each_host_fault(request, tmp_path):
    """Five hosts: sim-h1 healthy; sim-h2's server crashes in warm-up; a stranger holds
    sim-h3's port; sim-h4's log directory lies under a file; sim-h5's is read-only."""
    fleet = start_fleet(request, tmp_path, 5, 2702)
    port = fleet.server_port
    extra_inv = tmp_path / "faults.yml"
    extra_inv.write_text(
        "all:\n  hosts:\n"
        "    sim-h2:\n      sglang_server_env: {SGLANG_SIM_FAIL_WARMUP: '1'}\n"
        "    sim-h4:\n      sglang_server_log_dir: /var/log/notadir/sglang\n"
        "    sim-h5:\n      sglang_server_log_dir: /var/log/sglang-ro\n")
    # sim-h3: a stranger listening on the host's address and the server's port, started
    # inside that host (its PID namespace), so the holder can be named.
    out = fleet.ssh(3, "setsid python3 -m http.server --bind 127.0.0.4 %d >/dev/null 2>&1 </dev/null & echo $!"
                    % port).stdout
    stranger = int(out.split()[-1])

    def stranger_listens():
        try:
            socket.create_connection(("127.0.0.4", port), timeout=1).close()
            return True
        except OSError:
            return False

    assert wait_for(stranger_listens, timeout=30), "the stranger never listened"
    # sim-h4: /var/log/notadir is a file (the host's /var/log is DIR/hosts/h4/log).
    (fleet.host_dir(4) / "log" / "notadir").write_text("not a directory\n")
    # sim-h5: a read-only tmpfs with the directory's own mode, in that host's mount namespace.
    fleet.ssh(5, "mkdir /var/log/sglang-ro && mount -t tmpfs -o ro,mode=0750,size=64k tmpfs /var/log/sglang-ro")

    report_dir = tmp_path / "report"
    run = fleet.playbook("swap_to_eagle.yml", dict(SHORT_BENCH, swap_baseline=False,
                                                   swap_report_dir=str(report_dir)),
                         inventories=[extra_inv])
    output = run.output
    assert run.returncode != 0, output[-6000:]
    summary = {h["host"]: h for h in json.loads((report_dir / "swap_summary.json").read_text())["hosts"]}
    assert summary["sim-h1"]["outcome"] == "ok", summary["sim-h1"]
    for host in ("sim-h2", "sim-h3", "sim-h4", "sim-h5"):
        assert summary[host]["outcome"] == "failed" and summary[host]["stage"] == "eagle", summary[host]
        assert summary[host]["unreachable"] is False
        line = summary_lines(output, host)
        assert line and ("%s: FAILED at stage eagle: " % host) in line[-1], output[-6000:]

    # Warm-up crash: server_wait fails at once with the cause and the log tail.
    warm = summary["sim-h2"]["reason"]
    assert warm.startswith("Wait until ready: sglang-%d: Server process " % port), warm
    assert "(phase: warmup): warm-up request failed" in warm
    assert "Initialization failed. warmup error" in warm and "\nLast log lines:\n" in warm
    fatal = [line for line in output.splitlines() if line.startswith("fatal: [sim-h2]")]
    assert fatal and '"kind": "warmup_error"' in fatal[-1], output[-6000:]
    # ... and the crashed server's tree is gone.
    assert wait_for(lambda: not fleet.ssh(2, "pgrep -f 'sglang[:.]' || true").stdout.split(), timeout=15)

    # Port held by a stranger: named (PID and command line); never signalled.
    held = summary["sim-h3"]["reason"]
    assert held.startswith("Start the server in its own session: port 127.0.0.4:%d is already in use by pid %d ("
                           % (port, stranger)), held
    assert "-m http.server --bind 127.0.0.4 %d, user root); stop it or choose another port" % port in held
    assert stranger_listens()
    fleet.ssh(3, "kill -0 %d" % stranger)

    # Log directory under a file: the failed task, the directory and the file in the way are named.
    assert summary["sim-h4"]["reason"] == (
        "Start the server in its own session: cannot create the directory /var/log/notadir/sglang: "
        "/var/log/notadir exists and is not a directory; remove it or choose another directory"), summary["sim-h4"]
    # Read-only log directory: the log file cannot be opened; the launch stops there.
    assert summary["sim-h5"]["reason"] == (
        "Start the server in its own session: cannot open the log file /var/log/sglang-ro/sglang-%d.log: "
        "Read-only file system" % port), summary["sim-h5"]
    for index in (4, 5):
        assert not fleet.server_state_file(index).exists()

    # The healthy host's first launch made its directories with their modes (in the start's own run).
    for made, wanted in (("log/sglang", 0o750), ("lib/gpufleet-serving", 0o700)):
        assert stat.S_IMODE(os.stat(fleet.host_dir(1) / made).st_mode) == wanted, made
    # The healthy host finished: EAGLE-3 runs there, and the report holds it alone.
    assert fleet.server_info(1)["speculative_algorithm"] == "EAGLE3"
    report = json.loads((report_dir / "benchmark.json").read_text())
    assert sorted(report["hosts"]) == ["sim-h1"]
    assert "swap_to_eagle did not complete on ['sim-h2', 'sim-h3', 'sim-h4', 'sim-h5']" in output
