"""playbooks/experiment.yml end to end: real ansible-playbook, real SSH, a simulated fleet.

An experiment file of three variants (base SGLang, SGLang + EAGLE-3, base vLLM) runs spread
over two hosts; check mode prints each host's plan and changes nothing on the hosts; a re-run
skips what is recorded; an experiment interrupted by SIGINT in the middle of a variant resumes
with every variant recorded once; a gate that fails makes the playbook fail naming it.
Benchmarks are short (levels 1 and 4, 32-token outputs).
"""
import json
import os
import signal
import subprocess

import yaml
from _fleet_fixtures import ansible_env, needs_fleet, start_fleet, wait_for

from tests.support import paths

pytestmark = needs_fleet

LEFT = "pgrep -af 'sglang[:.]|VLLM::|vllm serve' | grep -v pgrep || true"
SHORT_BENCH = {"levels": [1, 4], "requests_per_level": 4, "warmup_requests": 1,
               "input_len": 64, "output_len": 32}


def _experiment(fleet, tmp_path, gates=None, spread=False, names=("base", "eagle", "vllm")):
    """An experiment file on the simulated models, with short benchmarks."""
    models = os.path.join(paths.REPO, "sim", "models")
    kimi = os.path.join(models, "kimi-k2.5-int4")
    variants = {
        "base": {"name": "base", "engine": "sglang", "server": {"model_path": kimi, "port": fleet.server_port}},
        "eagle": {"name": "eagle", "engine": "sglang",
                  "server": {"model_path": kimi, "port": fleet.server_port},
                  "speculative": {"algorithm": "EAGLE3", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4,
                                  "draft_model_path": os.path.join(models, "aq-medai-kimi-k2-eagle3")}},
        "vllm": {"name": "vllm", "engine": "vllm",
                 "server": {"model_path": kimi, "port": fleet.server_port + 1, "ready_timeout": 120}},
    }
    doc = {"reference": "base", "spread": spread, "benchmark": SHORT_BENCH,
           "variants": [variants[n] for n in names]}
    if gates:
        doc["gates"] = gates
    path = tmp_path / "campaign.experiment.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _run(fleet, path, results, *args, **extra):
    extra_vars = dict(experiment_file=str(path), experiment_results_dir=str(results),
                      experiment_bench_progress_file=str(fleet.dir / "bench.progress"), **extra)
    return fleet.playbook("experiment.yml", extra_vars, timeout=600, args=args)


def _records(results):
    return sorted(str(p.relative_to(results / "records")) for p in (results / "records").rglob("*.json"))


def _snapshot(fleet, index):
    procs = fleet.ssh(index, "ps -eo pid=,args= | grep -v ' ps -eo' | grep -v grep | grep -v sshd || true").stdout
    gpus = fleet.module(fleet.name(index), "gpufleet.serving.gpu_info")["gpus"]
    return sorted(procs.split("\n")), [(g["index"], g["used_mib"]) for g in gpus]


def test_check_mode_prints_the_plan_and_changes_nothing(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 1, 2491)
    fleet.hold_gpu(1, 2, 1024, "some-other-job")
    before = _snapshot(fleet, 1)
    results = tmp_path / "results"
    run = _run(fleet, _experiment(fleet, tmp_path), results, "--check")
    assert run.returncode == 0, run.output[-6000:]
    assert "sim-h1: 3 variant(s) of campaign, 3 to run" in run.output, run.output[-6000:]
    assert "--speculative-algorithm EAGLE3" in run.output and "vllm serve" in run.output, run.output[-6000:]
    assert "1. base [run] sglang on all GPUs" in run.output
    assert _snapshot(fleet, 1) == before
    assert not (results / "records").exists() or _records(results) == []


def test_spread_runs_each_variant_once_and_a_rerun_skips_them(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2492)
    results = tmp_path / "results"
    path = _experiment(fleet, tmp_path, spread=True, gates={"min_speedup": {"levels": [1], "value": 50}})
    run = _run(fleet, path, results)
    # The gate cannot pass (50x): the playbook fails naming it, after every variant ran.
    assert run.returncode != 0, run.output[-6000:]
    assert "the experiment did not pass" in run.output and "min_speedup" in run.output, run.output[-6000:]
    # Spread: three launches over two hosts, not six; host i runs every second variant.
    assert _records(results) == ["sim-h1/base.json", "sim-h1/vllm.json", "sim-h2/eagle.json"]
    for rel in _records(results):
        rec = json.loads((results / "records" / rel).read_text())
        assert rec["outcome"] == "ok", rec
        assert rec["server"]["relaunched"] is True and rec["teardown"]["verified"] is True, rec
        assert rec["speculative"] is (rec["variant"] == "eagle"), rec
    report = json.loads((results / "experiment.json").read_text())
    assert report["gates"], report
    for index in (1, 2):
        assert fleet.ssh(index, LEFT).stdout.strip() == ""

    # The same file again: everything is recorded, nothing is launched.
    stamp = {rel: (results / "records" / rel).stat().st_mtime_ns for rel in _records(results)}
    run = _run(fleet, path, results, experiment_clean_start=False)
    assert "skip, recorded" in run.output, run.output[-6000:]
    assert {rel: (results / "records" / rel).stat().st_mtime_ns for rel in _records(results)} == stamp
    assert "Launch base" not in run.output.replace("Launch base SGLang", "")


def test_an_interrupted_experiment_resumes(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 1, 2493)
    results = tmp_path / "results"
    path = _experiment(fleet, tmp_path)
    cmd = fleet.playbook_cmd("experiment.yml", dict(
        experiment_file=str(path), experiment_results_dir=str(results),
        experiment_bench_progress_file=str(fleet.dir / "bench.progress")))
    with open(tmp_path / "first.log", "w") as log:
        # Unbuffered: the test reads the log while the playbook runs.
        proc = subprocess.Popen(cmd, cwd=paths.REPO, env=dict(ansible_env(), PYTHONUNBUFFERED="1"),
                                stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            # Interrupt while the second variant (eagle) launches or runs: the first is recorded.
            assert wait_for(lambda: (results / "records" / "sim-h1" / "base.json").is_file(), timeout=300), \
                (tmp_path / "first.log").read_text()[-4000:]
            assert wait_for(lambda: "Launch eagle and wait until it is ready" in (tmp_path / "first.log").read_text(),
                            timeout=120)
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert _records(results) == ["sim-h1/base.json"], (tmp_path / "first.log").read_text()[-4000:]

    run = _run(fleet, path, results)
    assert run.returncode == 0, run.output[-6000:]
    assert "1. base [skip, recorded]" in run.output and "2. eagle [run]" in run.output, run.output[-6000:]
    assert _records(results) == ["sim-h1/base.json", "sim-h1/eagle.json", "sim-h1/vllm.json"]
    report = json.loads((results / "experiment.json").read_text())
    assert report["failures"] == [], report["failures"]
    assert fleet.ssh(1, LEFT).stdout.strip() == ""
