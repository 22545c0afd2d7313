"""The collection as AWX and AAP run it: jobs of ansible-runner (process isolation off).

ansible-runner's own command line carries the module's arguments, the pattern with them;
the release kills the server, spares the runner and says so in `spared_ansible`. The job's
result is read from the runner's artifacts (job_events), as AWX reads it. A playbook of the
collection (teardown.yml) runs as a runner job against a simulated host.
"""
import json
import os
import shutil
import subprocess

import pytest
from _fleet_fixtures import ansible_env as fleet_env
from _fleet_fixtures import needs_fleet, start_fleet

from tests.support.ansible import ansible_env
from tests.support.gpu import hold
from tests.support.paths import PYTHON, REPO, VENV_BIN

RUNNER = shutil.which("ansible-runner", path=VENV_BIN) or shutil.which("ansible-runner")


def job_results(private_data_dir, event="runner_on_ok"):
    results = []
    for path in sorted(private_data_dir.glob("artifacts/*/job_events/*.json")):
        data = json.loads(path.read_text())
        if data.get("event") == event:
            results.append(data["event_data"]["res"])
    return results


def test_a_runner_job_releases_the_gpu_and_reports_the_runner_it_spared(gpu_root, ns, tmp_path):
    if not RUNNER:
        pytest.skip("ansible-runner is not installed (requirements-common.txt pins it; make setup installs it)")
    root, env = gpu_root
    server = hold(root, 0, 1000, "sglang::scheduler_TP0", ns, env)
    data = tmp_path / "job"
    (data / "inventory").mkdir(parents=True)
    (data / "inventory" / "hosts").write_text("localhost ansible_connection=local ansible_python_interpreter=%s\n" % PYTHON)
    # The checkout's ansible first on PATH: the runner starts `ansible` from there.
    run_env = ansible_env(dict(env, PATH=VENV_BIN + os.pathsep + env.get("PATH", "")))
    argv = ns.cmd([RUNNER, "run", str(data), "--hosts", "localhost", "-m", "gpufleet.serving.gpu_release",
                   "-a", "patterns=sglang:: term_timeout=5"])
    proc = subprocess.run(argv, cwd=REPO, env=run_env, capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = job_results(data)
    assert len(results) == 1, proc.stdout
    res = results[0]
    assert [k["pid"] for k in res["killed"]] == [server] and not ns.alive(server)
    assert res["gpus"][0]["free"] is True
    runners = [s for s in res["spared_ansible"] if "ansible-runner" in s["cmdline"]]
    assert runners and all(s["protected"] in ("ansible", "ancestor") for s in runners), res["spared_ansible"]


@needs_fleet
def test_a_runner_job_runs_a_playbook_of_the_collection_on_the_simulated_fleet(request, tmp_path):
    if not RUNNER:
        pytest.skip("ansible-runner is not installed (requirements-common.txt pins it; make setup installs it)")
    fleet = start_fleet(request, tmp_path, 1, 2491)
    server = fleet.hold_gpu(1, 0, 2048, "sglang::scheduler_TP0")
    data = tmp_path / "job"
    (data / "project").mkdir(parents=True)
    shutil.copy(os.path.join(REPO, "playbooks", "teardown.yml"), data / "project" / "teardown.yml")
    run_env = fleet_env()
    run_env["PATH"] = VENV_BIN + os.pathsep + run_env.get("PATH", "")
    proc = subprocess.run([RUNNER, "run", str(data), "-p", "teardown.yml", "--inventory", str(fleet.inventory),
                           "--cmdline", "-e sglang_server_port=%d" % fleet.server_port],
                          cwd=REPO, env=run_env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    status = (next(data.glob("artifacts/*/status"))).read_text().strip()
    assert status == "successful", status
    assert not job_results(data, "runner_on_failed")
    # The stranger holding GPU 0 matched the engine's kill set: gone, and the GPU free.
    gone = fleet.ssh(1, "kill -0 %d" % server, check=False)
    assert gone.returncode != 0, "the holder %d survived the teardown" % server
