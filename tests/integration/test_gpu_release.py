"""gpu_release through `ansible` on the fake GPU kit: what is alive and what is gone.

Every test runs its processes and Ansible in a private PID namespace (`ns`),
so the pattern kills can never reach a process the test did not start.
"""
import json
import os
import subprocess

import pytest
from simlib import fakegpu

from tests.support.ansible import ansible_env, run_module
from tests.support.gpu import hold
from tests.support.paths import PYTHON, REPO, SCRIPTS
from tests.support.polling import poll

SGLANG = r"sglang::|sglang\.launch_server"
SERVER_TITLE = "python3 -m sglang.launch_server --model-path /models/kimi-k2.5 --tp-size 8 --port 30000"


def start_tree(ns, root, env, specs, title=SERVER_TITLE):
    proc = ns.popen([PYTHON, os.path.join(SCRIPTS, "server_tree.py"), root, title] + specs,
                    env=env, stdout=subprocess.PIPE, text=True)
    return json.loads(proc.stdout.readline())


def used(root):
    return {g["index"]: g["used_mib"] for g in fakegpu.read_status(root)}


def test_server_tree_released_by_pattern(gpu_root, ns):
    root, env = gpu_root
    specs = ["%d,20000,sglang::scheduler_TP%d" % (i, i) for i in range(8)]
    specs.append("7,1000,python3 /opt/helpers/prefetch_worker.py")  # unrelated title, a child
    tree = start_tree(ns, root, env, specs)
    assert all(v >= 20000 for v in used(root).values())

    res = run_module("gpu_release", {"patterns": [SGLANG], "term_timeout": 5}, env=env, ns=ns)

    assert res["_rc"] == 0, res.get("msg")
    assert res["changed"] is True
    everyone = [tree["parent"]] + list(tree["workers"].values())
    assert not any(ns.alive(p) for p in everyone)
    reasons = {k["pid"]: k["reason"] for k in res["killed"]}
    assert reasons[tree["parent"]] == "pattern"
    assert reasons[tree["workers"]["sglang::scheduler_TP3"]] == "pattern"
    assert reasons[tree["workers"]["python3 /opt/helpers/prefetch_worker.py"]] == "descendant"
    assert set(reasons) == set(everyone)
    assert [g["index"] for g in res["gpus"]] == list(range(8))
    assert all(g["free"] and g["after"]["used_mib"] == 0 for g in res["gpus"])
    assert all(g["before"]["used_mib"] >= 20000 for g in res["gpus"])
    assert used(root) == {i: 0 for i in range(8)}


def test_orphaned_workers_found(gpu_root, ns):
    root, env = gpu_root
    tree = start_tree(ns, root, env, ["%d,5000,sglang::scheduler_TP%d" % (i, i) for i in range(2)]
                      + ["2,5000,ray::IDLE"])
    ns.run(["kill", "-9", str(tree["parent"])], check=True)
    poll(lambda: not ns.alive(tree["parent"]), what="parent gone")
    res = run_module("gpu_release", {"patterns": [SGLANG]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    reasons = {k["pid"]: k["reason"] for k in res["killed"]}
    assert reasons[tree["workers"]["sglang::scheduler_TP0"]] == "pattern"
    # The unrelated orphan is no longer a descendant: the device sweep finds it.
    assert reasons[tree["workers"]["ray::IDLE"]] == "device"
    assert not any(ns.alive(p) for p in tree["workers"].values())


def test_sigterm_surviving_worker_escalates(gpu_root, ns):
    """A worker that handles SIGTERM and lives on gets SIGKILL at term_timeout."""
    root, env = gpu_root
    pid = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env, catch_term=True)
    res = run_module("gpu_release", {"patterns": [SGLANG], "term_timeout": 0.5}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    (entry,) = [k for k in res["killed"] if k["pid"] == pid]
    assert entry["signals"] == ["SIGTERM", "SIGKILL"]
    assert entry["gone_after"] >= 0.5
    assert not ns.alive(pid)


def test_term_timeout_zero_kills_at_once(gpu_root, ns):
    root, env = gpu_root
    pid = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env, ignore_term=True)
    res = run_module("gpu_release", {"patterns": [SGLANG], "term_timeout": 0}, env=env, ns=ns)
    assert res["_rc"] == 0
    assert [k["signals"] for k in res["killed"] if k["pid"] == pid] == [["SIGKILL"]]


def test_other_tenant_gpu_left_alone(gpu_root, ns):
    root, env = gpu_root
    mine = hold(root, 1, 1000, "python3 my_job.py", ns, env)
    tenant = hold(root, 5, 3000, "python3 their_job.py", ns, env)
    res = run_module("gpu_release", {"gpus": [0, 1, 2, 3]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    assert not ns.alive(mine)
    assert ns.alive(tenant)
    assert used(root)[5] == 3000
    assert [g["index"] for g in res["gpus"]] == [0, 1, 2, 3]


def test_protected_daemon_survives(gpu_root, ns):
    root, env = gpu_root
    daemon = hold(root, 0, 0, "nvidia-persistenced --user nvidia-persistenced", ns, env, daemon_exe=True)
    server = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env)
    res = run_module("gpu_release", {"patterns": [SGLANG]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    assert ns.alive(daemon) and not ns.alive(server)
    assert [(h["pid"], h["protected"]) for h in res["protected_holders"]] == [(daemon, "gpu daemon")]
    assert res["gpus"][0]["free"] is True


def test_protect_option(gpu_root, ns):
    root, env = gpu_root
    keep = hold(root, 0, 500, "sglang::scheduler_TP0 keepme", ns, env)
    res = run_module("gpu_release", {"patterns": [SGLANG], "protect": ["keepme"], "verify": False}, env=env, ns=ns)
    assert res["_rc"] == 0
    assert ns.alive(keep)
    assert res["changed"] is False


def test_ansible_processes_the_pattern_matches_are_spared_and_reported(gpu_root, ns):
    # `ansible ... -a '{"patterns": ["sglang::|..."]}'` carries the pattern in its own command line.
    root, env = gpu_root
    server = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env)
    res = run_module("gpu_release", {"patterns": [SGLANG]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    assert [k["pid"] for k in res["killed"]] == [server]
    spared = res["spared_ansible"]
    assert any("gpufleet.serving.gpu_release" in s["cmdline"] and "ansible" in s["cmdline"] for s in spared), spared
    assert {s["protected"] for s in spared} <= {"ansible", "ancestor", "copy of an ancestor"}, spared
    assert server not in {s["pid"] for s in spared}
    # No pattern in the command line of the run: nothing to report.
    server = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env)
    res = run_module("gpu_release", {"engine": ["sglang"]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    assert [k["pid"] for k in res["killed"]] == [server] and res["spared_ansible"] == []


def test_callers_shell_with_pattern_survives(gpu_root, ns):
    """The shell that runs ansible carries the pattern in its command line."""
    root, env = gpu_root
    server = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env)
    script = ("%s localhost -m gpufleet.serving.gpu_release -a 'patterns=sglang:: term_timeout=1' "
              "-e ansible_python_interpreter=%s; echo shell-survived sglang::" % (
                  os.path.join(os.path.dirname(PYTHON), "ansible"), PYTHON))
    out = ns.run(["bash", "-c", script], cwd=REPO, env=ansible_env(env),
                 capture_output=True, text=True, timeout=120)
    assert "shell-survived" in out.stdout, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout or "CHANGED" in out.stdout, out.stdout
    assert not ns.alive(server)


def test_check_mode_kills_nothing(gpu_root, ns):
    root, env = gpu_root
    server = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env)
    stray = hold(root, 1, 1000, "python3 stray.py", ns, env)
    res = run_module("gpu_release", {"patterns": [SGLANG]}, env=env, check=True, ns=ns)
    assert res["_rc"] == 0
    assert res["changed"] is True
    assert {k["pid"]: k["reason"] for k in res["killed"]} == {server: "pattern", stray: "device"}
    assert ns.alive(server) and ns.alive(stray)
    assert used(root)[0] == 1000


def test_second_run_reports_no_change(gpu_root, ns):
    root, env = gpu_root
    hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env)
    first = run_module("gpu_release", {"patterns": [SGLANG]}, env=env, ns=ns)
    second = run_module("gpu_release", {"patterns": [SGLANG]}, env=env, ns=ns)
    assert first["changed"] is True
    assert second["_rc"] == 0 and second["changed"] is False and second["killed"] == []


def test_unfreeable_gpu_fails_naming_holder(gpu_root, ns):
    root, env = gpu_root
    daemon = hold(root, 2, 700, "nvidia-persistenced", ns, env, daemon_exe=True)
    res = run_module("gpu_release", {"patterns": [SGLANG], "timeout": 1}, env=env, ns=ns)
    assert res["_rc"] != 0 and res["msg"]
    assert "GPU 2" in res["msg"] and "700 MiB" in res["msg"] and "pid %d" % daemon in res["msg"]
    assert ns.alive(daemon)


@pytest.mark.parametrize("args, words", [
    ({"patterns": [""]}, "empty pattern"),
    ({"patterns": ["("]}, "not a valid regular expression"),
    ({"patterns": [".*"]}, "matches the empty command line"),
    ({"patterns": ["python"]}, "too broad"),
    ({"gpus": [0, 9]}, "9 not present"),
    ({"gpus": ["x"]}, "not a GPU index"),
    ({"patterns": [], "sweep": False}, "nothing to release"),
    ({"term_timeout": -1}, "term_timeout"),
    ({"timeout": 0}, "timeout must be a positive number"),
    ({"max_used_mib": -1}, "max_used_mib must be 0 or more"),
    ({"protect": [""]}, "protect: an empty pattern"),
    ({"protect": ["["]}, "protect: '[' is not a valid regular expression"),
])
def test_refused_inputs(gpu_root, ns, args, words):
    root, env = gpu_root
    bystander = hold(root, 0, 100, "python3 bystander.py", ns, env)
    res = run_module("gpu_release", dict({"sweep": False, "patterns": ["sglang::"]}, **args), env=env, ns=ns)
    assert res["_rc"] != 0 and res["msg"]
    assert words in res["msg"]
    assert ns.alive(bystander)


def test_force_broad_accepts_broad_pattern(gpu_root, ns):
    root, env = gpu_root
    target = hold(root, 0, 100, "python3 zz_unique_target.py", ns, env)
    res = run_module("gpu_release", {"patterns": ["python3 zz_unique"], "force_broad": True}, env=env, ns=ns)
    assert res["_rc"] == 0 and not ns.alive(target)


def test_nvml_monitor_is_not_swept(gpu_root, ns):
    """NVML users (nvidia-smi, exporters) keep /dev/nvidiaN open, unmapped, holding no memory
    (seen on an H200, docs/real-gpu.md): reported as holders, never swept."""
    root, env = gpu_root
    monitor = ns.popen([PYTHON, "-c", "import os, sys, pynvml; pynvml.nvmlInit(); "
                        "print(os.getpid(), flush=True); sys.stdin.read()", "exporter"],
                       env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = int(monitor.stdout.readline())
    server = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env)
    res = run_module("gpu_release", {"patterns": [SGLANG]}, env=env, ns=ns)
    assert res["_rc"] == 0, res.get("msg")
    assert not ns.alive(server)
    assert ns.alive(pid), [k for k in res["killed"] if k["pid"] == pid]
    assert pid in [h["pid"] for h in res["gpus"][0]["holders"]]


def test_gives_up_early_when_only_protected_holders_remain(gpu_root, ns):
    """Memory held only by a protected daemon cannot drain: no waiting out a long timeout."""
    root, env = gpu_root
    daemon = hold(root, 4, 900, "nv-hostengine -n", ns, env, daemon_exe=True)
    res = run_module("gpu_release", {"patterns": [SGLANG], "timeout": 60}, env=env, ns=ns)
    assert res["_rc"] != 0 and "GPU 4" in res["msg"] and "protected: gpu daemon" in res["msg"]
    assert res["elapsed"] < 30, res["elapsed"]  # gave up well before the 60 s timeout
    assert ns.alive(daemon)


VLLM_WORKERS = ["0,20000,VLLM::Worker_TP0", "1,20000,VLLM::Worker_TP1"]


def start_vllm_survivors_and_sglang(ns, root, env):
    """vLLM's trap (vllm issues 55510, 34643): the API server is gone, and its EngineCore
    with its workers (titles set in vllm/v1/engine/core.py and vllm/v1/executor/multiproc_executor.py)
    lives on, holding GPUs 0 and 1; beside it, an SGLang process that holds no GPU, so only a
    pattern can reach it (the sweep never would)."""
    engine = start_tree(ns, root, env, VLLM_WORKERS, title="VLLM::EngineCore")
    sglang = start_tree(ns, root, env, [], title=SERVER_TITLE)["parent"]
    assert used(root)[0] >= 20000 and used(root)[1] >= 20000
    return [engine["parent"]] + list(engine["workers"].values()), sglang


def test_engine_vllm_frees_engine_core_and_workers_and_leaves_sglang(gpu_root, ns):
    root, env = gpu_root
    vllm, sglang = start_vllm_survivors_and_sglang(ns, root, env)

    res = run_module("gpu_release", {"engine": "vllm", "term_timeout": 5}, env=env, ns=ns)

    assert res["_rc"] == 0, res.get("msg")
    assert {k["pid"]: k["reason"] for k in res["killed"]} == {pid: "pattern" for pid in vllm}
    assert not any(ns.alive(p) for p in vllm)
    assert ns.alive(sglang)
    assert used(root) == {i: 0 for i in range(8)}
    assert all(g["free"] for g in res["gpus"])


def test_engine_any_takes_both(gpu_root, ns):
    root, env = gpu_root
    vllm, sglang = start_vllm_survivors_and_sglang(ns, root, env)

    res = run_module("gpu_release", {"engine": ["any"], "term_timeout": 5}, env=env, ns=ns)

    assert res["_rc"] == 0, res.get("msg")
    assert {k["pid"]: k["reason"] for k in res["killed"]} == {pid: "pattern" for pid in vllm + [sglang]}
    assert not any(ns.alive(p) for p in vllm + [sglang])
    assert used(root) == {i: 0 for i in range(8)}


def test_engine_unset_kills_by_pattern_nothing(gpu_root, ns):
    """Without engine or patterns only the sweep runs: the GPU holders go, the GPU-less SGLang
    process and the EngineCore (a parent holding no GPU itself) stay."""
    root, env = gpu_root
    vllm, sglang = start_vllm_survivors_and_sglang(ns, root, env)

    res = run_module("gpu_release", {"term_timeout": 5}, env=env, ns=ns)

    assert res["_rc"] == 0, res.get("msg")
    assert {k["pid"]: k["reason"] for k in res["killed"]} == {pid: "device" for pid in vllm[1:]}
    assert ns.alive(sglang) and ns.alive(vllm[0])


def test_unknown_engine_refused_by_the_argument_spec(gpu_root, ns):
    root, env = gpu_root
    res = run_module("gpu_release", {"engine": "trt"}, env=env, ns=ns)
    assert res["_rc"] != 0 and "engine" in res["msg"] and "trt" in res["msg"]
