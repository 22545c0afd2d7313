"""gpu_release on cases real GPU hosts meet, through `ansible`, on the fake GPU kit.

Each test starts its processes in a private PID namespace (`ns`): a paused server tree,
a restart loop with a pause, a look-alike of the module's interpreter, bad inputs.
"""

import json
import os
import shutil
import subprocess

import pytest
from simlib import fakegpu

from tests.support import fuse
from tests.support.ansible import run_module
from tests.support.gpu import hold
from tests.support.paths import PYTHON, REPO, SCRIPTS, VENV_BIN
from tests.support.polling import poll
from tests.support.timing import timed

HOLDER = os.path.join(SCRIPTS, "promise_holder.py")
TRACER = os.path.join(SCRIPTS, "ptrace_stop.py")
NOBODY = 65534
SIM_BIN = os.path.join(REPO, "sim", "bin")
MPS_CONTROL = os.path.join(SIM_BIN, "nvidia-cuda-mps-control")

SGLANG = r"sglang::|sglang\.launch_server"


def used(root):
    return {g["index"]: g["used_mib"] for g in fakegpu.read_status(root)}


def test_null_pattern_is_refused_not_read_as_the_regex_none(gpu_root, ns):
    """A YAML null in patterns became the regex 'None' and matched `python3 None_of_your_business.py`."""
    root, env = gpu_root
    bystander = hold(root, 0, 100, "python3 None_of_your_business.py", ns, env)
    res = run_module("gpu_release", {"patterns": [None], "gpus": [0]}, env=env, ns=ns)
    assert res["_rc"] != 0
    assert "patterns: item 1 is null" in res["msg"], res["msg"]
    assert ns.alive(bystander)


def start_tree(ns, env, root, gpus, mib):
    """A server tree in the namespace: a launcher on gpus[0] and one scheduler per further GPU."""
    proc = ns.popen([PYTHON, HOLDER, "tree", root, str(gpus[0]), str(mib), "python3 -m sglang.launch_server --tp %d" % len(gpus)]
                    + [str(g) for g in gpus[1:]], env=env, stdout=subprocess.PIPE, text=True)
    tree = json.loads(proc.stdout.readline())
    return [tree["pid"]] + tree["children"]


def test_stopped_tree_is_continued_after_sigterm_and_gone_at_once(gpu_root, ns):
    """A paused server (Ctrl-Z, kill -STOP) kept SIGTERM pending and waited all of term_timeout."""
    root, env = gpu_root
    pids = start_tree(ns, env, root, [0, 1, 2], 1500)
    ns.run(["kill", "-STOP"] + [str(p) for p in pids], check=True)
    poll(lambda: all(ns.state(p) == "T" for p in pids), what="the tree to stop")
    res = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [0, 1, 2], "term_timeout": 10, "timeout": 20},
                     env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    killed = {k["pid"]: k for k in res["killed"]}
    assert set(killed) == set(pids), killed
    for entry in killed.values():
        assert entry["signals"] == ["SIGTERM", "SIGCONT"], entry
        assert entry["continued"].startswith("stopped (state T)"), entry
    assert res["timings"]["pattern"] < 3, res["timings"]  # not the 10 s term_timeout
    assert all(used(root)[g] == 0 for g in (0, 1, 2))


def test_ptrace_stopped_holder_gets_sigkill_at_once_naming_its_tracer(gpu_root, ns):
    """A holder a debugger paused (state t) acts on no SIGTERM: it waited all of term_timeout."""
    root, env = gpu_root
    pid = hold(root, 4, 1000, "sglang::scheduler_TP4", ns, env)
    tracer = ns.popen([PYTHON, TRACER, str(pid)], stdout=subprocess.PIPE, text=True)
    assert tracer.stdout.readline().strip() == "traced"
    poll(lambda: ns.state(pid) == "t", what="the holder to be in tracing stop")
    res = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [4], "term_timeout": 10, "timeout": 20},
                     env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    (entry,) = res["killed"]
    assert (entry["pid"], entry["signals"]) == (pid, ["SIGKILL"]), entry
    assert entry["sigkill_at_once"].startswith("ptrace-stopped (traced by pid "), entry
    assert res["timings"]["pattern"] < 3, res["timings"]
    assert used(root)[4] == 0


def test_other_users_lookalike_of_the_module_interpreter_is_released(gpu_root, ns):
    """A `nobody` process titled exactly the interpreter path (the pipelined module's command line)
    holding GPU 2 was spared as 'copy of an ancestor', and the GPU stayed used."""
    root, env = gpu_root
    env = dict(env, ANSIBLE_PIPELINING="True")
    # Implicit localhost runs modules with the interpreter that runs `ansible` (its shebang).
    with open(os.path.join(VENV_BIN, "ansible")) as handle:
        interpreter = handle.readline()[2:].strip()
    proc = ns.popen([PYTHON, HOLDER, "plain", root, "2", "1000", interpreter], env=dict(env, GF_SETUID=str(NOBODY)),
                    stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline())
    res = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [2]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    assert [(k["pid"], k["user"], k["reason"]) for k in res["killed"]] == [(pid, "nobody", "device")], res["killed"]
    assert res["protected_holders"] == [] and used(root)[2] == 0


@pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux")
def test_tmux_session_released_multiplexer_and_other_session_spared(gpu_root, ns, tmp_path):
    """`tmux new -d -s srv 'python3 -m sglang.launch_server ...'`: the tmux server keeps that argv,
    matched, and its SIGTERM ended every session, the training job on GPU 5 too."""
    root, env = gpu_root
    sock = str(tmp_path / "tmux.sock")
    tmux = ["tmux", "-f", "/dev/null", "-S", sock]
    ns.run(tmux + ["new", "-d", "-s", "srv", "%s %s plain %s 0 1500 'python3 -m sglang.launch_server --tp 1'"
                   % (PYTHON, HOLDER, root)], env=env, check=True)
    ns.run(tmux + ["new", "-d", "-s", "job", "%s %s plain %s 5 1000 'python3 train.py'" % (PYTHON, HOLDER, root)],
           env=env, check=True)
    poll(lambda: used(root)[0] == 1500 and used(root)[5] == 1000, what="both sessions to hold their GPUs")
    server = int(ns.run(tmux + ["display", "-p", "#{pid}"], capture_output=True, text=True, check=True).stdout)
    with open("%s/%d/cmdline" % (ns.proc, server), "rb") as handle:
        assert b"sglang.launch_server" in handle.read()  # what makes it match
    res = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [0, 1, 2, 3]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    assert [k["cmdline"] for k in res["killed"]] == ["python3 -m sglang.launch_server --tp 1"], res["killed"]
    assert [(m["pid"], m["protected"]) for m in res["protected_matches"]] == [(server, "terminal multiplexer")]
    assert ns.alive(server) and used(root)[0] == 0 and used(root)[5] == 1000
    sessions = ns.run(tmux + ["ls", "-F", "#{session_name}"], capture_output=True, text=True, check=True).stdout
    assert sessions.split() == ["job"]  # the srv session ended with its command
    ns.run(tmux + ["kill-server"], check=True)


@pytest.mark.parametrize("as_script", [True, False], ids=["script", "dash-c"])
def test_restart_loop_with_a_pause_fails_naming_the_loop(gpu_root, ns, tmp_path, as_script):
    """`while true; do python3 ...; sleep 1; done`: rc 0, and the server was back a second later."""
    root, env = gpu_root
    loop = 'while true; do "%s" "%s" plain "%s" 2 500 -; sleep 1; done' % (PYTHON, HOLDER, root)
    if as_script:
        script = tmp_path / "run_server.sh"
        script.write_text(loop + "\n")
        argv = ["bash", str(script)]
    else:
        argv = ["bash", "-c", loop]
    shell = ns.popen(argv, env=dict(env, GF_TITLE="sglang::scheduler_TP2"), stdout=subprocess.PIPE)
    first = int(shell.stdout.readline())
    res = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [2]}, env=env, ns=ns)
    assert res["_rc"] != 0, res
    assert "respawned" not in res  # nothing came back within the watch: the loop is named by what it is
    (restarter,) = res["restarters"]
    assert restarter["kind"] == "a shell running a loop (while)" and restarter["started"] == [first], restarter
    assert res["msg"].startswith("GPUs not released for good: pid %d (bash " % restarter["pid"]), res["msg"]
    assert "stop that supervisor first" in res["msg"]
    assert [k["pid"] for k in res["killed"]] == [first]


def start_mps(ns, env, tmp_path, gpus="0", mib=74):
    """The kit's MPS stand-in: `nvidia-cuda-mps-control -d`, its server holding `mib` on each of `gpus`."""
    pipes = str(tmp_path / "mps-pipes")
    env = dict(env, CUDA_MPS_PIPE_DIRECTORY=pipes, GF_MPS_GPUS=gpus, GF_MPS_MIB=str(mib))
    ns.run([MPS_CONTROL, "-d"], env=env, check=True, timeout=60)
    return env, pipes


def test_mps_server_context_is_daemon_overhead_by_default(gpu_root, ns, tmp_path):
    """On an MPS host every release failed: 'GPU 0 still has 74 MiB used', the MPS server's own context."""
    root, env = gpu_root
    mps_env, pipes = start_mps(ns, env, tmp_path, gpus="0,1")
    client = hold(root, 0, 4000, "sglang::scheduler_TP0", ns, env)
    res = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [0, 1]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    assert [k["pid"] for k in res["killed"]] == [client]
    for gpu in res["gpus"]:
        assert gpu["free"] is True and gpu["after"]["used_mib"] == 74, gpu
        assert gpu["mps"]["used_mib"] == 74 and gpu["mps"]["counted"] == "as daemon overhead", gpu
    assert used(root)[0] == 74  # the daemon was not touched
    assert os.path.exists(os.path.join(pipes, "control"))
    info = run_module("gpu_info", {"gpus": [0, 1, 2]}, env=env, ns=ns)
    assert info["mps"]["control_daemons"][0]["pipe_directory"] == pipes, info["mps"]
    assert [(g["index"], g["used_mib"]) for g in info["mps"]["gpus"]] == [(0, 74.0), (1, 74.0)]


def test_mps_quit_stops_the_daemon_through_its_pipe_then_verifies_zero(gpu_root, ns, tmp_path):
    root, env = gpu_root
    mps_env, pipes = start_mps(ns, env, tmp_path)
    hold(root, 0, 4000, "sglang::scheduler_TP0", ns, env)
    res = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [0], "mps": "quit"},
                     env=dict(env, PATH=SIM_BIN + ":" + os.environ["PATH"]), ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    (daemon,) = res["mps"]["daemons"]
    assert daemon["pipe_directory"] == pipes and daemon["rc"] == 0, daemon
    assert daemon["command"].startswith("echo quit | ") and daemon["command"].endswith("nvidia-cuda-mps-control")
    assert res["gpus"][0]["after"]["used_mib"] == 0 and used(root)[0] == 0
    assert not os.path.exists(os.path.join(pipes, "control"))  # the daemon quit, no signal sent to it
    assert all(k["cmdline"] == "sglang::scheduler_TP0" for k in res["killed"])


def test_holder_of_a_file_on_a_hung_mount_fails_naming_the_path_within_timeout(gpu_root, ns, tmp_path):
    """A file whose path holds "nvidia" on a FUSE mount that stopped answering: the module's stat of
    /proc/PID/fd/N blocked in the kernel, and the module ran past its timeout (30 s with timeout 8)."""
    root, env = gpu_root
    mnt = tmp_path / "models--nvidia--Llama-3.1-Nemotron-70B-Instruct-HF"
    daemon, daemon_pid, pid = fuse.stuck_holder(ns, env, mnt, "pathholder", root, 3, 1000, "sglang::scheduler_TP3")
    try:
        res, wall = timed(run_module, "gpu_release", {"patterns": [SGLANG], "gpus": [3], "timeout": 8},
                          env=env, ns=ns, timeout=120)
        assert res["_rc"] != 0
        assert "/proc/%d/fd/" % pid in res["msg"] and "(-> %s)" % mnt in res["msg"], res["msg"]
        assert "did not answer within" in res["msg"] and "hung FUSE or network file system" in res["msg"]
        assert wall < 8 + 12, wall  # the timeout, plus Ansible's start-up on a loaded machine
        ns.run(["kill", "-KILL", str(daemon_pid)], check=True)  # the mount answers errors from now on
    finally:
        daemon.kill()  # our nsenter; the namespace's end takes what is inside


# ---- reset_stuck: memory held with no process after the release (the fake kit's stuck_mib) ----

def stuck_host(root, arch="blackwell", nvswitch=False, pairs=()):
    """GPU 3 holds 900 MiB that no process owns, on a host of this NVLink topology."""
    fakegpu.set_nvlink(root, range(8), arch=arch, nvswitch=nvswitch, pairs=pairs)
    fakegpu.stick(root, 3, 900)


def test_memory_held_by_no_process_is_left_and_named_by_default(gpu_root, ns):
    """The seeds' case: nothing to signal, the memory stays; no reset unless asked, and the failure says how."""
    root, env = gpu_root
    stuck_host(root)
    res = run_module("gpu_release", {"gpus": [3], "timeout": 3}, env=dict(env, PATH=SIM_BIN + ":" + os.environ["PATH"]), ns=ns)
    assert res["_rc"] != 0 and "reset" not in res
    assert "GPU 3 (%s) still has 900 MiB used" % res["gpus"][0]["uuid"] in res["msg"], res["msg"]
    assert "reset_stuck: true runs nvidia-smi -r where that is safe" in res["msg"], res["msg"]
    assert used(root)[3] == 900
    check = run_module("gpu_release", {"gpus": [3], "timeout": 3, "reset_stuck": True}, env=env, ns=ns, check=True)
    assert check["reset"] == {"groups": [], "refused": [{"index": None, "reason": "check mode: no GPU is reset"}]}
    assert used(root)[3] == 900


@pytest.mark.parametrize("topology, gpus, group, rule", [
    ({}, [3], [3], "no NVLink: reset alone"),
    ({"arch": "hopper", "nvswitch": True}, [3], [3], "Hopper or later on NVSwitch: reset alone"),
    ({"arch": "ampere", "pairs": [(2, 3)]}, [2, 3], [2, 3], "NVLink bridge peers: reset together"),
])
def test_reset_stuck_resets_by_the_nvlink_rule_then_checks_health(gpu_root, ns, topology, gpus, group, rule):
    """A GPU busy elsewhere (GPU 5, a protected daemon's) does not stop a reset that does not include it."""
    root, env = gpu_root
    stuck_host(root, **topology)
    daemon = hold(root, 5, 700, "nv-hostengine -n", ns, env, daemon_exe=True)
    res = run_module("gpu_release", {"gpus": gpus, "timeout": 20, "reset_stuck": True},
                     env=dict(env, PATH=SIM_BIN + ":" + os.environ["PATH"]), ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    (done,) = res["reset"]["groups"]
    assert (done["gpus"], done["rule"], done["rc"]) == (group, rule, 0), done
    assert done["command"] == "%s -r -i %s" % (os.path.join(SIM_BIN, "nvidia-smi"), ",".join(str(g) for g in group))
    assert res["reset"]["refused"] == []
    assert [(g["index"], g["verdict"]) for g in res["reset"]["health"]["gpus"]] == [(g, "pass") for g in group]
    gpu3 = [g for g in res["gpus"] if g["index"] == 3][0]
    assert gpu3["reset"] is True and gpu3["free"] is True and gpu3["after"]["used_mib"] == 0
    assert res["elapsed"] < 10  # memory held by no process: no waiting out the timeout
    assert used(root)[3] == 0 and used(root)[5] == 700 and ns.alive(daemon)


@pytest.mark.parametrize("gpus, why", [
    ([3], "NVLink bridge peers: reset together: GPU 4 must be reset with it and is not selected"),
    ([3, 4], "NVLink bridge peers: reset together: GPU 4 of the set is in use by a process"),
])
def test_reset_stuck_refuses_a_peer_set_it_may_not_reset(gpu_root, ns, gpus, why):
    root, env = gpu_root
    stuck_host(root, arch="ampere", pairs=[(3, 4)])
    hold(root, 4, 700, "nv-hostengine -n", ns, env, daemon_exe=True)
    res = run_module("gpu_release", {"gpus": gpus, "timeout": 20, "reset_stuck": True},
                     env=dict(env, PATH=SIM_BIN + ":" + os.environ["PATH"]), ns=ns)
    assert res["_rc"] != 0 and res["reset"]["groups"] == []
    assert [r["index"] for r in res["reset"]["refused"]] == [3]
    assert res["reset"]["refused"][0]["reason"].startswith(why), res["reset"]
    assert "not reset: " + why in res["msg"], res["msg"]
    assert used(root)[3] == 900
