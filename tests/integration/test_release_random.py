"""Randomised gpu_release trials on the fake GPU kit.

Each trial builds a random process tree mixing pattern matches (`sglang::scheduler_TP3`,
`python3 -m sglang.launch_server ...`), their descendants under unrelated titles, holders
of selected and unselected GPUs (random `gpus`), protected GPU daemons holding GPUs (one of
them carrying the pattern in its arguments), processes of user `nobody` (random
`sweep_users: [root]`), extra `protect` regexes, bystanders with no GPU and no match, and
copies of the releasing process's own command line. After the release exactly the intended
set is gone, everything else is alive, and `killed` is that set (with the reasons).
The oracle and the tree builder are in tests/support/scripts/trial_runner.py.

Speed: the bulk of the trials run the Releaser of plugins/module_utils/_gpu/release.py
IN-PROCESS, in one runner inside one private PID namespace: the same code path as the
module (ReleaseOptions -> Releaser.run(), with the module's defaults), minus Ansible's
wrapper (argument parsing, AnsiballZ, fail_json). The runner is started by
`bash -c '... sglang::scheduler_marker'`: that shell, an ancestor whose command line
matches the pattern, must survive every trial. A few more trials go through the real
`ansible localhost -m gpufleet.serving.gpu_release`.

GPUFLEET_TRIAL_SEED picks the seed (default: a fresh one, printed), GPUFLEET_TRIALS the
count (default 200). The figures are printed and written to tests/output/release-trials.json.
"""
import json
import os
import random
import subprocess
import time

import pytest
from simlib import fakegpu

from tests.support.ansible import run_module
from tests.support.paths import PYTHON, REPO, SCRIPTS

RUNNER = os.path.join(SCRIPTS, "trial_runner.py")
OUTPUT = os.path.join(REPO, "tests", "output", "release-trials.json")
SEED = os.environ.get("GPUFLEET_TRIAL_SEED") or str(random.SystemRandom().randrange(10 ** 9))
COUNT = int(os.environ.get("GPUFLEET_TRIALS", "200"))
ANSIBLE_TRIALS = 3
MARKER = "shell-survived sglang::scheduler_marker"


@pytest.fixture
def trial_root(tmp_path):
    root = str(tmp_path / "gpu")
    # A short release clock: the runner waits for the memory to drain between trials.
    fakegpu.init(root, gpus=8, release_delay_ms=5)
    env = dict(os.environ)
    env.update(fakegpu.env(root))
    return root, env


def _record(section, figures):
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    data = {}
    if os.path.exists(OUTPUT):
        with open(OUTPUT) as handle:
            try:
                data = json.load(handle)
            except ValueError:
                data = {}
    data[section] = figures
    with open(OUTPUT, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)


def test_random_trials_in_process(trial_root, ns, record_property):
    root, env = trial_root
    script = "%s %s batch %s %s 0 %d; echo runner-rc=$? %s" % (PYTHON, RUNNER, root, SEED, COUNT, MARKER)
    t0 = time.monotonic()
    out = ns.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=900)
    wall = round(time.monotonic() - t0, 1)
    reports, summary = [], None
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            if "summary" in rec:
                summary = rec["summary"]
            else:
                reports.append(rec)
    assert summary is not None, "runner gave no summary (seed %s):\n%s\n%s" % (SEED, out.stdout[-3000:], out.stderr[-3000:])
    figures = dict(summary, seed=SEED, wall_seconds=wall)
    _record("in_process", figures)
    record_property("release_trials", json.dumps(figures))
    print("\nrelease trials: %(trials)d in-process, seed %(seed)s, failed %(failed)d, "
          "collateral kills %(collateral)d, processes killed %(killed)d of %(nodes)d, "
          "check-mode %(check_mode)d, expected-unfree %(unfree)d, %(wall_seconds)ss" % figures)
    failed = [r for r in reports if not r["ok"]]
    replay = "replay with GPUFLEET_TRIAL_SEED=%s" % SEED
    assert not failed, "%d of %d trials failed (%s); first: %s" % (
        len(failed), len(reports), replay, json.dumps(failed[:2], indent=1)[:6000])
    assert summary["trials"] == len(reports) == COUNT
    assert summary["collateral"] == 0, replay
    assert summary["killed"] > 0 and summary["unfree"] >= 0
    assert summary["parent_alive"] is True
    assert "runner-rc=0 " + MARKER in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]


@pytest.mark.parametrize("index", range(ANSIBLE_TRIALS))
def test_random_trials_through_ansible(trial_root, ns, index):
    """The same trials through the real module, run by `ansible` in the namespace."""
    root, env = trial_root
    runner = ns.popen([PYTHON, RUNNER, "tree", root, SEED, str(10 ** 6 + index)], env=env,
                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = runner.stdout.readline()
        assert first, "runner failed: %s" % runner.stderr.read()
        args = json.loads(first)["args"]
        res = run_module("gpu_release", args, env=env, ns=ns)
        runner.stdin.write(json.dumps(res) + "\n")
        runner.stdin.flush()
        verdict = json.loads(runner.stdout.readline())
        runner.wait(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()  # the nsenter we started; the namespace's end takes the rest
            runner.wait(timeout=10)
    _record("ansible_%d" % index, {"seed": SEED, "index": 10 ** 6 + index, "ok": verdict["ok"],
                                   "collateral": verdict["collateral"], "expected": verdict["expected"]})
    print("\nansible trial %d (seed %s): ok=%s, collateral kills %d, killed %d of %d"
          % (10 ** 6 + index, SEED, verdict["ok"], verdict["collateral"], verdict["expected"], verdict["nodes"]))
    assert verdict["ok"], "replay with GPUFLEET_TRIAL_SEED=%s: %s" % (SEED, json.dumps(verdict, indent=1)[:6000])
    assert verdict["collateral"] == 0
