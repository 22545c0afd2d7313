"""gpu_release keeps its promises under attack, through `ansible`.

Each test sets up one way a release can go wrong, on the fake GPU kit in a private PID
namespace (`ns`): a thread group whose leader exited, respawns, a catastrophic pattern,
EPERM, SIGTERM that cannot act, non-UTF-8 command lines, check mode, bad inputs.
"""
import json
import os
import subprocess
import time

import pytest
from simlib import fakegpu

from tests.support import procfs
from tests.support.ansible import ansible_env, run_module
from tests.support.gpu import hold
from tests.support.paths import PYTHON, REPO, SCRIPTS, VENV_BIN
from tests.support.polling import poll
from tests.support.timing import timed

HOLDER = os.path.join(SCRIPTS, "promise_holder.py")
SGLANG = r"sglang::|sglang\.launch_server"
NOBODY = 65534


def used(root):
    return {g["index"]: g["used_mib"] for g in fakegpu.read_status(root)}


def start(ns, env, *args, **kwargs):
    """A promise_holder.py in the namespace; returns (Popen, its first stdout line)."""
    proc = ns.popen([PYTHON, HOLDER] + [a if isinstance(a, bytes) else str(a) for a in args],
                    env=dict(env, **kwargs.pop("extra_env", {})), stdout=subprocess.PIPE, **kwargs)
    return proc, proc.stdout.readline()


# ---- 5. a thread group whose leader exited ---------------------------------------------

def test_thread_group_with_exited_leader_is_signalled_and_waited_for(gpu_root, ns):
    """Before: the zombie leader counted as gone, nothing signalled it and GPU 3 stayed used."""
    root, env = gpu_root
    unused, line = start(ns, env, "parent", root, 3, 2000, "python3 -m sglang.launch_server --tp 1")
    tree = json.loads(line)
    child = tree["child"]
    poll(lambda: ns.state(child) == "Z", what="leader of the child to exit")
    assert used(root)[3] >= 2000  # its other thread holds the memory
    res = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [3], "term_timeout": 5, "timeout": 8},
                     env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    killed = {k["pid"]: k for k in res["killed"]}
    assert set(killed) == {tree["pid"], child}, killed
    assert killed[child]["signals"] == ["SIGTERM"]
    assert "sglang::scheduler_TP3" in killed[child]["cmdline"]  # named through a live thread
    assert res["gpus"][0]["free"] is True and used(root)[3] == 0


def test_exited_leader_is_named_in_the_message(gpu_root, procs):
    """The message said 'pid 3 (, state zombie)'; it names the process through a live thread."""
    root, env = gpu_root
    proc = procs.popen([PYTHON, HOLDER, "leader-exit", root, "0", "10", "gf-leader-exit-probe"],
                       env=env, stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline())
    poll(lambda: procfs.zombie(pid), what="leader to exit")
    from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import release as _release
    text = _release._describe_holder({"pid": pid, "cmdline": "", "state": "zombie"})  # pylint: disable=protected-access
    assert text == "pid %d (gf-leader-exit-probe, state sleeping (main thread exited, 1 thread live))" % pid, text


# ---- 6. respawns ----------------------------------------------------------------------------

def test_worker_that_forks_at_sigterm_fails_the_task(gpu_root, ns):
    """Before: rc 0 while a same-title child held GPU 1 again moments later (1 s here: after the sweep)."""
    root, env = gpu_root
    unused, line = start(ns, env, "fork-on-term", root, 1, 1000, "sglang::scheduler_TP1")
    pid = int(line)
    res = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [1], "timeout": 10}, env=env, ns=ns)
    assert res["_rc"] != 0, res
    msg = res["msg"]
    (back,) = res["respawned"]
    assert back["pid"] != pid and back["cmdline"] == "sglang::scheduler_TP1"
    assert msg.startswith("GPUs not released: respawned after the release: pid %d (sglang::scheduler_TP1, "
                          "user root, pattern) appeared" % back["pid"]), msg
    assert "its parent is gone (reparented to pid 1)" in msg
    assert "stop that supervisor first" in msg
    assert ns.alive(back["pid"])  # named, not killed: the supervisor would only restart it


def test_restart_loop_fails_naming_the_supervisor(gpu_root, ns, tmp_path):
    """Before: `bash run_server.sh` in a restart loop: success, and the server was back a moment later."""
    root, env = gpu_root
    script = tmp_path / "run_server.sh"
    script.write_text('while true; do "%s" "%s" plain "%s" 2 500 -; sleep 0.1; done\n' % (PYTHON, HOLDER, root))
    loop = ns.popen(["bash", str(script)], env=dict(env, GF_TITLE="sglang::scheduler_TP2"),
                    stdout=subprocess.PIPE)
    first = int(loop.stdout.readline())
    res, wall = timed(run_module, "gpu_release", {"patterns": [SGLANG], "gpus": [2], "timeout": 10,
                                                  "respawn_settle": 3}, env=env, ns=ns)
    assert res["_rc"] != 0, res
    (back,) = res["respawned"]
    assert back["pid"] != first and back["parent"]["cmdline"] == "bash %s" % script
    assert ("restarted by pid %d (bash %s, user root)" % (back["parent"]["pid"], script)) in res["msg"], res["msg"]
    assert [k["pid"] for k in res["killed"]] == [first]
    assert wall < 10 + 10, wall  # timeout 10 s, plus Ansible's start-up on a loaded machine: no hang


def test_orphan_whose_only_ancestor_is_init_is_not_watched(gpu_root, ns):
    """Nobody is left to restart a holder under init: no watch window, one rescan after its exit."""
    root, env = gpu_root
    pid = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env)
    res = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [0]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    watch = res["respawn_watch"]
    assert [s["pid"] for s in watch["skipped"]] == [pid] and watch["watched"] == [], watch
    assert watch["rescans"] >= 1
    assert res["timings"]["respawn_check"] < 0.25, res["timings"]  # not the 0.5 s settle
    quiet = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [0]}, env=env, ns=ns)
    assert quiet["changed"] is False and "respawn_check" not in quiet["timings"]


def test_holder_under_a_live_parent_is_watched_while_memory_drains(tmp_path, ns):
    """The window runs from the holder's own exit, beside the drain: the check costs less than the settle."""
    root = str(tmp_path / "gpu")
    fakegpu.init(root, gpus=2, release_delay_ms=400)  # the drain takes 0.4 s after the exit
    env = dict(os.environ, **fakegpu.env(root))
    parent = ns.popen(["bash", "-c", '"%s" "%s" plain "%s" 1 800 - & wait' % (PYTHON, HOLDER, root)],
                      env=dict(env, GF_TITLE="sglang::scheduler_TP1"), stdout=subprocess.PIPE)
    pid = int(parent.stdout.readline())
    res = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [1], "respawn_settle": 0.5},
                     env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    (watched,) = res["respawn_watch"]["watched"]
    assert watched["pid"] == pid and "restarter" not in watched  # bash waiting once is no restarter
    assert watched["watched_s"] >= 0.45, watched
    assert res["timings"]["verify"] >= 0.3, res["timings"]
    assert res["timings"]["respawn_check"] <= 0.35, res["timings"]  # the drain took most of the window


# ---- 7. never hang, never wait for the impossible --------------------------------------

def test_catastrophic_pattern_fails_within_timeout_naming_it(gpu_root, ns):
    """Before: `(\\w+\\s?)+::scheduler` against a 32-character argument spun for minutes."""
    root, env = gpu_root
    bystander = hold(root, 0, 100, "python3 job.py " + "a" * 32, ns, env)
    pattern = r"(\w+\s?)+::scheduler"
    res, wall = timed(run_module, "gpu_release", {"patterns": [pattern], "timeout": 5, "force_broad": True},
                      env=env, ns=ns, timeout=60)
    assert res["_rc"] != 0
    assert res["msg"].startswith("pattern %r did not finish matching" % pattern), res["msg"]
    assert "nothing was signalled" in res["msg"]
    assert wall < 20, wall
    assert ns.alive(bystander)


def test_sigterm_ignored_gets_sigkill_at_once(gpu_root, ns):
    """Before: SIGTERM, then term_timeout (5 s) of waiting for nothing."""
    root, env = gpu_root
    pid = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env, ignore_term=True)
    res = run_module("gpu_release", {"patterns": [SGLANG], "term_timeout": 5, "gpus": [0]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    (entry,) = res["killed"]
    assert (entry["pid"], entry["signals"], entry["sigkill_at_once"]) == (pid, ["SIGKILL"], "SIGTERM ignored")
    assert entry["gone_after"] < 1.0 and res["timings"]["pattern"] < 1.0


def test_namespace_init_without_handler_gets_sigkill_at_once(gpu_root, ns):
    """A CUDA holder that is PID 1 of its own PID namespace drops SIGTERM from outside."""
    root, env = gpu_root
    proc = ns.popen(["unshare", "--pid", "--fork", "--kill-child", PYTHON, HOLDER, "plain", root, "4", "700", "-"],
                    env=dict(env, GF_TITLE="sglang::scheduler_TP4"), stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "1"  # PID 1 in its own namespace
    res = run_module("gpu_release", {"patterns": [SGLANG], "term_timeout": 5, "gpus": [4]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    (entry,) = [k for k in res["killed"] if k["cmdline"] == "sglang::scheduler_TP4"]
    assert entry["signals"] == ["SIGKILL"]
    assert entry["sigkill_at_once"] == "PID 1 of its own PID namespace without a SIGTERM handler"
    assert entry["gone_after"] < 1.0 and used(root)[4] == 0


def test_eperm_fails_at_once_saying_whose_and_why(gpu_root, ns, tmp_path):
    """Before: a signal refused with EPERM waited the whole timeout, the EPERM hidden in failed_to_kill.

    The module runs as root without CAP_KILL (as in a restricted container), the target is
    user nobody's: the kernel refuses the signal as it does for a non-root user.
    """
    root, env = gpu_root
    unused, line = start(ns, env, "plain", root, 0, 1000, "sglang::scheduler_TP0", extra_env={"GF_SETUID": str(NOBODY)})
    pid = int(line)
    tree = str(tmp_path / "tree")
    cmd = ["setpriv", "--bounding-set", "-kill", "--inh-caps", "-kill",
           os.path.join(VENV_BIN, "ansible"), "localhost", "-m", "gpufleet.serving.gpu_release",
           "-a", json.dumps({"patterns": [SGLANG], "gpus": [0], "timeout": 20, "term_timeout": 10}), "-t", tree]
    t0 = time.monotonic()
    out = ns.run(cmd, cwd=REPO, env=ansible_env(env), capture_output=True, text=True, timeout=120)
    wall = time.monotonic() - t0
    with open(os.path.join(tree, "localhost")) as handle:
        res = json.load(handle)
    assert out.returncode != 0
    assert res["msg"] == ("not permitted to signal: pid %d (sglang::scheduler_TP0) of user nobody; this module runs "
                          "as root without the right to signal them (no CAP_KILL in this container, or a security "
                          "module refused): run it where root may signal these processes" % pid), res["msg"]
    (refused,) = res["failed_to_kill"]
    assert refused["pid"] == pid and "not permitted" in refused["error"]
    assert wall < 15, wall  # not the 20 s timeout
    assert ns.alive(pid)


# ---- 8. results Ansible can read ---------------------------------------------------------

def test_non_utf8_command_line_gives_a_readable_result(gpu_root, ns):
    """Before: 'Refusing to deserialize an invalid UTF8 string' after the kill, changed: false."""
    root, env = gpu_root
    unused, line = start(ns, env, "plain", root, 0, 500, "", b"sglang::scheduler_\xff\xfe_TP0")
    pid = int(line)
    res = run_module("gpu_release", {"patterns": [SGLANG], "gpus": [0]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg") or res["_stdout"][-2000:]
    assert res["changed"] is True
    (entry,) = res["killed"]
    assert entry["pid"] == pid and entry["cmdline"].endswith("sglang::scheduler_\\xff\\xfe_TP0"), entry
    assert not ns.alive(pid)


# ---- 9. check mode predicts failure ----------------------------------------------------

def test_check_mode_fails_like_the_real_run(gpu_root, ns):
    """Before: --check said ok while the real run failed on a protected holder of GPU 2."""
    root, env = gpu_root
    keep = hold(root, 2, 700, "python3 keep_me_monitor.py", ns, env)
    server = hold(root, 2, 1000, "sglang::scheduler_TP2", ns, env)
    args = {"patterns": [SGLANG], "gpus": [2], "protect": ["keep_me"], "timeout": 3}
    check = run_module("gpu_release", args, env=env, ns=ns, check=True)
    assert check["_rc"] != 0, check
    assert check["msg"].startswith(
        "GPUs not released: GPU 2 (%s) would still have 1700 MiB used after a real run (check mode); "
        "holders that would not be signalled: pid %d (python3 keep_me_monitor.py, state sleeping, "
        "protected: protect pattern)" % (check["gpus"][0]["uuid"], keep)), check["msg"]
    assert [k["pid"] for k in check["killed"]] == [server]
    assert ns.alive(server) and ns.alive(keep)
    real = run_module("gpu_release", args, env=env, ns=ns)
    assert real["_rc"] != 0 and "GPU 2 (" in real["msg"] and "pid %d" % keep in real["msg"]
    # Without the protected holder, check mode is ok again.
    ns.run(["kill", "-9", str(keep)], check=True)
    poll(lambda: used(root)[2] == 0, what="GPU 2 free")
    again = run_module("gpu_release", args, env=env, ns=ns, check=True)
    assert again["_rc"] == 0 and again["predicted_failures"] == [], again.get("msg")


# ---- 11. inputs ----------------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    ("patterns=sglang:: nvml_timeout=0",
     "nvml_timeout must be a positive number of seconds (0 would fail every NVML request at once) (got 0.0)"),
    ("patterns=sglang:: timeout=nan",
     "timeout must be a positive number of seconds (got nan, which is not a finite number)"),
    ("patterns=sglang:: max_used_mib=nan", "max_used_mib must be 0 or more (got nan, which is not a finite number)"),
    ("patterns=sglang:: sweep_users=root,no_such_user_gf",
     "sweep_users: no such user on this host: 'no_such_user_gf'"),
    ("patterns=sglang::scheduler_TP[0-9]{1,2}",
     "patterns: 'sglang::scheduler_TP[0-9]{1,2}' was given as one comma-separated string (k=v form), and "
     "splitting it at the commas would cut the regex into ['sglang::scheduler_TP[0-9]{1', '2}']; pass "
     "patterns as a YAML list"),
])
def test_bad_inputs_refused(gpu_root, ns, args, words):
    root, env = gpu_root
    server = hold(root, 0, 100, "sglang::scheduler_TP7", ns, env)
    tree = os.path.join(os.path.dirname(root), "tree")
    out = ns.run([os.path.join(VENV_BIN, "ansible"), "localhost", "-m", "gpufleet.serving.gpu_release",
                  "-a", args, "-t", tree], cwd=REPO, env=ansible_env(env), capture_output=True, text=True,
                 timeout=120)
    with open(os.path.join(tree, "localhost")) as handle:
        res = json.load(handle)
    assert out.returncode != 0
    assert words in res["msg"], res["msg"]
    assert ns.alive(server)


def test_comma_string_of_whole_regexes_still_splits(gpu_root, ns):
    root, env = gpu_root
    server = hold(root, 0, 100, "sglang::scheduler_TP0", ns, env)
    tree = os.path.join(os.path.dirname(root), "tree")
    ns.run([os.path.join(VENV_BIN, "ansible"), "localhost", "-m", "gpufleet.serving.gpu_release",
            "-a", r"patterns=vllm\.entrypoints,sglang::scheduler_TP[0-9] gpus=0", "-t", tree],
           cwd=REPO, env=ansible_env(env), capture_output=True, text=True, timeout=120)
    with open(os.path.join(tree, "localhost")) as handle:
        res = json.load(handle)
    assert res.get("failed") is not True, res.get("msg")
    assert [k["pid"] for k in res["killed"]] == [server]
