"""gpu_release (and gpu_info) under faults, through `ansible` on the fake GPU kit.

Every pattern kill runs in a private PID namespace (`ns`); holders are started in it too.
Faults come from the fake kit's switches (`simctl gpu fault ROOT hang|lost N`), from an
environment without the NVML library or without nvidia-ml-py, from a holder in another PID
namespace, and from a holder stuck in uninterruptible sleep (a FUSE request never answered,
tests/support/scripts/fault_fuse.py).
"""
import ctypes.util
import json
import os
import re
import subprocess
import time

import pytest
from simlib import fakegpu

from tests.support import fuse, pidns
from tests.support.ansible import ansible_env, run_module
from tests.support.gpu import hold
from tests.support.paths import COLLECTIONS, PYTHON, REPO, SCRIPTS, VENV_BIN
from tests.support.polling import poll
from tests.support.procfs import alive
from tests.support.timing import timed

SGLANG = r"sglang::|sglang\.launch_server"
SERVER_TITLE = "python3 -m sglang.launch_server --model-path /models/kimi-k2.5 --tp-size 8 --port 30000"


def used(root):
    return {g["index"]: g["used_mib"] for g in fakegpu.read_status(root)}


def ns_cmdlines(ns):
    """Command lines of every process in the namespace."""
    base = "/proc/%d/root/proc" % ns.init_pid
    out = {}
    for entry in os.listdir(base):
        if entry.isdigit():
            try:
                with open("%s/%s/cmdline" % (base, entry), "rb") as handle:
                    out[int(entry)] = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                pass
    return out


# ---- NVML hangs inside a call ----------------------------------------------------------

def test_nvml_hang_fails_gpu_release_within_its_timeout(gpu_root, ns):
    root, env = gpu_root
    server = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env)
    fakegpu.set_fault(root, "hang")
    res, wall = timed(run_module, "gpu_release", {"patterns": [SGLANG], "nvml_timeout": 2}, env=env, ns=ns)
    assert res["_rc"] != 0
    assert "NVML did not answer within 2.0 s while initialising NVML" in res["msg"], res["msg"]
    assert "hung" in res["msg"] and "nothing more was done" in res["msg"]
    assert 2 <= wall < 30, wall
    assert ns.alive(server)  # nothing more was done: no signal before NVML answered
    leftovers = [c for c in ns_cmdlines(ns).values() if "AnsiballZ" in c]
    assert leftovers == []  # the hung NVML helper was killed, not left behind


def test_nvml_hang_fails_gpu_info_within_its_timeout(gpu_root, ns):
    root, env = gpu_root
    fakegpu.set_fault(root, "hang")
    res, wall = timed(run_module, "gpu_info", {"nvml_timeout": 2}, env=env, ns=ns)
    assert res["_rc"] != 0
    assert "NVML did not answer within 2.0 s while initialising NVML" in res["msg"], res["msg"]
    assert 2 <= wall < 30, wall
    assert [c for c in ns_cmdlines(ns).values() if "AnsiballZ" in c] == []


PLAY = """
- name: Release both hosts
  hosts: all
  gather_facts: false
  tasks:
    - name: Release the GPUs
      gpufleet.serving.gpu_release:
        patterns: ["{{ kill_pattern }}"]
        nvml_timeout: 2
        term_timeout: 2
      environment:
        LD_LIBRARY_PATH: "{{ gpu_root }}/lib"
        FAKE_NVML_ROOT: "{{ gpu_root }}"
        GPUFLEET_NVIDIA_DEVICES: "{{ gpu_root }}/dev"
      register: released
    - name: Record that this host went on
      ansible.builtin.copy:
        content: "{{ released | to_json }}"
        dest: "{{ out_dir }}/{{ inventory_hostname }}.json"
        mode: "0644"
"""


def test_two_host_play_goes_on_past_a_hung_host(tmp_path, ns):
    roots = {}
    for host in ("hung_host", "ok_host"):
        roots[host] = fakegpu.init(str(tmp_path / host), gpus=2)
    fakegpu.set_fault(roots["hung_host"], "hang")
    env_of = {h: dict(os.environ, **fakegpu.env(r)) for h, r in roots.items()}
    # Each host's server is its own pattern: the two "hosts" share this namespace.
    hung_server = hold(roots["hung_host"], 0, 1000, "sglang::scheduler_hostA_TP0", ns, env_of["hung_host"])
    ok_server = hold(roots["ok_host"], 0, 1000, "sglang::scheduler_hostB_TP0", ns, env_of["ok_host"])
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    inventory = {"all": {"hosts": {
        "hung_host": {"gpu_root": roots["hung_host"], "kill_pattern": "sglang::scheduler_hostA"},
        "ok_host": {"gpu_root": roots["ok_host"], "kill_pattern": "sglang::scheduler_hostB"}},
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": PYTHON,
                 "out_dir": str(out_dir)}}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(PLAY)
    cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", str(tmp_path / "inventory.json"),
           str(tmp_path / "play.yml")]
    t0 = time.monotonic()
    out = ns.run(cmd, cwd=REPO, env=ansible_env(), capture_output=True, text=True, timeout=180)
    wall = time.monotonic() - t0
    assert out.returncode == 2, out.stdout + out.stderr  # a host failed; the play itself ran
    assert "NVML did not answer within 2.0 s" in out.stdout, out.stdout
    assert "fatal: [hung_host]" in out.stdout and "fatal: [ok_host]" not in out.stdout, out.stdout
    assert "hung_host                  : ok=0    changed=0    unreachable=0    failed=1" in out.stdout
    assert not (out_dir / "hung_host.json").exists()
    ok = json.loads((out_dir / "ok_host.json").read_text())
    assert [k["pid"] for k in ok["killed"]] == [ok_server]
    assert ok["gpus"][0]["free"] is True
    assert ns.alive(hung_server) and not ns.alive(ok_server)
    assert wall < 60, wall


# ---- NVML or nvidia-ml-py missing, a lost GPU ---------------------------------------------

def _env_without_nvml(root):
    env = dict(os.environ)
    env.update(fakegpu.env(root))
    env["LD_LIBRARY_PATH"] = os.environ.get("LD_LIBRARY_PATH", "")
    return env


def test_nvml_library_missing_fails_saying_what_to_install(gpu_root, ns):
    root, unused = gpu_root
    if ctypes.util.find_library("nvidia-ml"):
        pytest.skip("a real libnvidia-ml is installed on this machine")
    env = _env_without_nvml(root)
    server = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, dict(os.environ, **fakegpu.env(root)))
    res = run_module("gpu_release", {"patterns": [SGLANG]}, env=env, ns=ns)
    assert res["_rc"] != 0
    assert res["msg"] == ("NVML library libnvidia-ml.so.1 was not found: install the NVIDIA driver "
                          "(its user-space libraries) on this host, or check LD_LIBRARY_PATH")
    assert ns.alive(server)
    # Without verification NVML is optional: the device files name the GPUs.
    res = run_module("gpu_release", {"patterns": [SGLANG], "verify": False}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    assert [k["pid"] for k in res["killed"]] == [server] and not ns.alive(server)


@pytest.mark.parametrize("absent", [("nvidia-ml-py",), ("psutil", "nvidia-ml-py")])
def test_missing_libraries_fail_in_one_run_saying_what_to_install(gpu_root, ns, tmp_path, absent):
    root, env = gpu_root
    blocker = tmp_path / "blocked"
    blocker.mkdir()
    # Modules that cannot be imported, first on the module's path: as if not installed.
    for name in [{"psutil": "psutil", "nvidia-ml-py": "pynvml"}[d] for d in absent]:
        (blocker / ("%s.py" % name)).write_text("raise ImportError('No module named %s')\n" % name)
    server = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env)
    res = run_module("gpu_release", {"patterns": [SGLANG]}, env=dict(env, PYTHONPATH=str(blocker)), ns=ns)
    assert res["_rc"] != 0
    names = ", ".join(absent)
    python = re.search(r"on \S+'s Python (\S+)\. ", res["msg"]).group(1)
    assert os.path.basename(python).startswith("python"), res["msg"]
    # Ansible's missing_required_lib text, every missing library at once, the role, and the pip
    # line for the very interpreter that lacks them.
    assert res["msg"].startswith("Failed to import the required Python library (%s) on " % names), res["msg"]
    assert res["msg"].endswith("Set the host up with the gpufleet.serving.host_setup role (a virtual environment "
                               "with %s; it sets ansible_python_interpreter to it), or install them for this "
                               "interpreter: %s -m pip install %s" % (names, python, " ".join(absent))), res["msg"]
    assert res["missing_library"] is True and res["missing_libraries"] == list(absent)
    assert ns.alive(server)
    # Without verification nvidia-ml-py is not needed: only psutil is asked for.
    res = run_module("gpu_release", {"patterns": [SGLANG], "verify": False}, env=dict(env, PYTHONPATH=str(blocker)), ns=ns)
    if "psutil" in absent:
        assert res["_rc"] != 0 and res["missing_libraries"] == ["psutil"], res["msg"]
        assert ns.alive(server)
    else:
        assert res["_rc"] == 0, res["msg"]
        assert [k["pid"] for k in res["killed"]] == [server]


def test_lost_gpu_fails_naming_it(gpu_root, ns):
    root, env = gpu_root
    server = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env)
    fakegpu.set_fault(root, "lost", 3)
    res = run_module("gpu_release", {"patterns": [SGLANG]}, env=env, ns=ns)
    assert res["_rc"] != 0
    assert res["msg"].startswith("NVML could not read GPU 3: "), res["msg"]
    assert "GPU is lost" in res["msg"]
    assert [int(g) for g in re.findall(r"GPU (\d+)", res["msg"])] == [3]
    assert ns.alive(server)  # it failed before signalling anything
    # A selection without the lost GPU is released and verified as usual.
    res = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [0, 1, 2]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    assert [k["pid"] for k in res["killed"]] == [server] and not ns.alive(server)
    assert [g["index"] for g in res["gpus"]] == [0, 1, 2]


# ---- holders that cannot be released in time ---------------------------------------------

def test_holder_invisible_to_the_module_fails_naming_the_gpu(gpu_root, ns):
    """Memory held on GPU 1 by a process in another PID namespace: nothing here to kill."""
    root, env = gpu_root
    if not pidns.available():
        pytest.skip("needs a second PID namespace")
    other = pidns.PidNamespace()
    try:
        hidden = hold(root, 1, 3000, "python3 hidden_tenant.py", other, env)
        res = run_module("gpu_release", {"patterns": [SGLANG], "timeout": 1.5}, env=env, ns=ns)
        assert res["_rc"] != 0
        msg = res["msg"]
        assert "GPU 1 (" in msg and "still has 3000 MiB used" in msg, msg
        assert "no process visible here (another PID namespace or a stuck context?)" in msg
        assert [int(g) for g in re.findall(r"GPU (\d+) \(", msg)] == [1]
        assert res["killed"] == [] and res["failed_to_kill"] == []
        assert other.alive(hidden) and used(root)[1] == 3000
    finally:
        other.stop()


def test_holder_stuck_in_d_state_fails_naming_it_its_state_and_gpu(gpu_root, ns, tmp_path):
    root, env = gpu_root
    daemon, daemon_pid, pid = fuse.stuck_holder(ns, env, tmp_path / "stuck", "holder", root, 2, 1000,
                                                "sglang::scheduler_TP2")
    try:
        assert daemon.stdout.readline().startswith("request")  # the holder's request is in, unanswered
        res = run_module("gpu_release", {"patterns": [SGLANG], "term_timeout": 0.5, "timeout": 2},
                         env=env, ns=ns)
        assert res["_rc"] != 0
        msg = res["msg"]
        assert ("pid %d (sglang::scheduler_TP2, state disk-sleep, user root) did not exit within the "
                "timeout of 2.0s" % pid) in msg, msg
        assert "GPU 2 (" in msg and "still has 1000 MiB used" in msg
        assert "holders: pid %d (sglang::scheduler_TP2, state disk-sleep)" % pid in msg
        (stuck,) = res["failed_to_kill"]
        assert (stuck["pid"], stuck["state"], stuck["signals"]) == (pid, "disk-sleep", ["SIGTERM", "SIGKILL"])
        assert ns.state(pid) == "D"
        # Ending the FUSE daemon aborts the request: the SIGKILL then takes effect.
        ns.run(["kill", "-KILL", str(daemon_pid)], check=True)
        poll(lambda: not ns.alive(pid), timeout=20, what="stuck holder to die once released")
    finally:
        daemon.kill()  # our nsenter; the namespace's end takes what is inside


def test_term_timeout_beyond_timeout_still_kills_in_time(gpu_root, ns):
    """SIGKILL comes before the deadline even when term_timeout reaches past it.

    A SIGKILL sent at the deadline itself would let the holder die a moment after the last
    look, and the task would fail, calling a dead process stuck ("state gone") and its GPU held.
    """
    root, env = gpu_root
    pid = hold(root, 2, 1000, "sglang::scheduler_TP0", ns, env, catch_term=True)
    res = run_module("gpu_release", {"patterns": [SGLANG], "term_timeout": 30, "timeout": 2}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    (entry,) = res["killed"]
    assert (entry["pid"], entry["signals"]) == (pid, ["SIGTERM", "SIGKILL"])
    assert res["failed_to_kill"] == [] and res["gpus"][2]["free"] is True
    assert res["elapsed"] < 2.0 and not ns.alive(pid)


# ---- a PID reused between the scan and the signal ------------------------------------------

def test_reused_pid_is_never_signalled_by_a_target(procs):
    """_signals level, a real process: the snapshot's start time differs from the live one."""
    import psutil

    from ansible_collections.gpufleet.serving.plugins.module_utils._proc import signals as _signals
    from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import ProcInfo
    child = procs.popen([PYTHON, "-c", "import signal; signal.pause()"])
    real = psutil.Process(child.pid).create_time()
    target = _signals.Target(ProcInfo(child.pid, os.getpid(), real - 3.0, "root", ["sglang::scheduler_TP0"],
                                      "python", "sleeping"), "pattern")
    assert target.gone is True
    assert _signals.release([target], 0.2, time.monotonic() + 2) == []
    assert target.signals == [] and target.result()["signals"] == []
    assert alive(child.pid)
    # Control: the same process with its true start time is signalled and goes.
    pinned = _signals.Target(ProcInfo(child.pid, os.getpid(), real, "root", ["x"], "python", "sleeping"), "pattern")
    assert _signals.release([pinned], 0.2, time.monotonic() + 5) == []
    assert pinned.signals == ["SIGTERM"]
    poll(lambda: not alive(child.pid), what="control process gone")


@pytest.mark.parametrize("control", [False, True])
def test_reused_pid_is_never_signalled_through_the_releaser(gpu_root, ns, control):
    root, env = gpu_root
    argv = [PYTHON, os.path.join(SCRIPTS, "fault_pidreuse.py"), root] + (["control"] if control else [])
    out = ns.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout.strip().splitlines()[-1])
    if control:
        assert [k["pid"] for k in rep["result"]["killed"]] == [rep["child"]]
        assert rep["child_state"] == "Z"  # our own child: killed, not yet reaped
    else:
        assert rep["result"]["killed"] == [] and rep["result"]["changed"] is False
        assert rep["result"]["failed_to_kill"] == []
        assert rep["child_state"] in ("S", "R")


# ---- two gpu_release runs at once -------------------------------------------------------

def test_two_concurrent_releases_both_succeed(gpu_root, ns, tmp_path):
    root, env = gpu_root
    specs = ["%d,2000,sglang::scheduler_TP%d" % (i, i) for i in range(8)] + ["7,500,python3 /opt/prefetch.py"]
    tree_proc = ns.popen([PYTHON, os.path.join(SCRIPTS, "server_tree.py"), root, SERVER_TITLE] + specs,
                         env=env, stdout=subprocess.PIPE, text=True)
    tree = json.loads(tree_proc.stdout.readline())
    everyone = {tree["parent"]} | set(tree["workers"].values())
    # The pattern goes in an extra-vars file: a command line carrying it would itself be a
    # pattern match for the other run.
    (tmp_path / "vars.json").write_text(json.dumps({"pats": [SGLANG]}))
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        out.mkdir()
        cmd = [os.path.join(VENV_BIN, "ansible"), "localhost", "-m", "gpufleet.serving.gpu_release",
               "-a", '{"patterns": "{{ pats }}", "term_timeout": 2}', "-e", "@" + str(tmp_path / "vars.json"),
               "-t", str(out)]
        runs.append((out, ns.popen(cmd, cwd=REPO, env=ansible_env(env), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)))
    results = []
    for out, proc in runs:
        stdout, stderr = proc.communicate(timeout=180)
        with open(out / "localhost") as handle:
            res = json.load(handle)
        res["_rc"], res["_out"] = proc.returncode, stdout + stderr
        results.append(res)
    killed = [{k["pid"] for k in r.get("killed", [])} for r in results]
    story = json.dumps([{"rc": r["_rc"], "msg": r.get("msg"), "killed": [(k["pid"], k["reason"], k["cmdline"][:60])
                                                                         for k in r.get("killed", [])]}
                        for r in results], indent=1) + "\ntree: %s" % sorted(everyone)
    for res in results:
        assert res["_rc"] == 0, story + res["_out"][-3000:]
        assert res["failed_to_kill"] == [] and all(g["free"] for g in res["gpus"]), story
    assert killed[0] | killed[1] == everyone, story
    assert not any(ns.alive(p) for p in everyone)
    assert used(root) == {i: 0 for i in range(8)}


HELPER_GONE = """
import os, signal, sys
sys.path.insert(0, %r)
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.nvml import NvmlSession, NvmlError
session = NvmlSession(10)
os.kill(session.pid, signal.SIGKILL)
os.waitpid(session.pid, 0)
try:
    session.snapshot()
except NvmlError as exc:
    print("NvmlError:", exc.msg)
"""


def test_nvml_helper_gone_gives_a_clear_error(gpu_root):
    """A dead NVML helper (killed by someone else) is an NvmlError, not a BrokenPipeError traceback."""
    root, env = gpu_root
    out = subprocess.run([PYTHON, "-c", HELPER_GONE % COLLECTIONS],
                         env=env, capture_output=True, text=True, timeout=60, check=False)
    assert out.stdout.strip() == "NvmlError: the NVML helper process died before reading GPU memory and processes", \
        out.stdout + out.stderr
