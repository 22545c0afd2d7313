"""playbooks/experiment.yml end to end, on the two worked examples (docs/examples/, the seeds'
campaigns): real ansible-playbook, real SSH, a simulated fleet.

Each example runs with its model paths moved to the simulator's models and short benchmarks
(levels 1 and 4, 32-token outputs); everything else is the file as shipped. Check mode prints
each host's plan and leaves processes and GPU memory as they were, and every command line in it
parses with the engines' own parsers (real SGLang 0.5.23; vLLM 0.33.0's flag set in the
simulator); a drafter its target cannot take, or a speculative method the engine does not know,
stops the host at the plan, naming the variant. The Kimi campaign runs spread over two hosts (four launches, not eight), its gates
checked and a failed gate named; a re-run skips what is recorded. The GLM campaign, interrupted
by SIGINT in the middle of its second variant, resumes with every variant recorded once.
"""
import json
import os
import re
import shlex
import signal
import subprocess

import pytest
import realsglang
import yaml
from _fleet_fixtures import ansible_env, needs_fleet, start_fleet, wait_for

from tests.support import paths

pytestmark = needs_fleet

EXAMPLES = os.path.join(paths.REPO, "docs", "examples")
MODELS = os.path.join(paths.REPO, "sim", "models")
KIMI = os.path.join(MODELS, "kimi-k2.5-int4")
DRAFTER = os.path.join(MODELS, "aq-medai-kimi-k2-eagle3")
MISMATCHED = os.path.join(MODELS, "mismatched-eagle3")  # an EAGLE-3 drafter of another target
LEFT = "pgrep -af 'sglang[:.]|VLLM::|vllm serve' | grep -v pgrep || true"
SHORT_BENCH = {"levels": [1, 4], "requests_per_level": 4, "warmup_requests": 1,
               "input_len": 64, "output_len": 32}
VLLM_PARSE = """\
import json, sys
from vllm._sim import args
try:
    ns = args.parse(json.load(sys.stdin))
except SystemExit as exc:
    print(json.dumps({"exit": exc.code}))
else:
    print(json.dumps({"model": ns.model, "tp": ns.tp, "spec": ns.spec}))
"""


def _on_the_simulator(name, fleet, tmp_path, gates=None, drafter=DRAFTER):
    """docs/examples/NAME.experiment.yml with the simulator's models, its ports and short benchmarks."""
    with open(os.path.join(EXAMPLES, name + ".experiment.yml"), encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    doc["benchmark"] = dict(doc.get("benchmark") or {}, **SHORT_BENCH)
    for variant in doc["variants"]:
        variant["server"].update(model_path=KIMI, port=fleet.server_port, ready_timeout=120)
        if variant.get("speculative"):
            variant["speculative"]["draft_model_path"] = drafter
        variant.pop("gates", None)
    if gates is not None:
        doc["gates"] = gates
    path = tmp_path / (name + ".experiment.yml")
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


def _planned_argvs(output):
    """The command lines of the plan lines ("   ARGV" under "N. VARIANT [...]"), by variant, from
    the debug task's JSON list of strings."""
    lines = []
    for line in output.splitlines():
        line = line.strip().rstrip(",")
        if line.startswith('"') and line.endswith('"'):
            lines.append(json.loads(line))
    out = {}
    for head, argv in zip(lines, lines[1:]):
        if head[:1].isdigit() and ". " in head and " [" in head and argv.startswith("   /"):
            out[head.split(". ", 1)[1].split(" [", 1)[0]] = shlex.split(argv)
    return out


def _follow_lines_run_as_printed(output, fleet):
    """Each variant's printed follow command, run as printed (a shell, the controller's ssh),
    shows that variant's own progress file: numbered, and never another variant's."""
    marker = "follow the benchmark with: "
    follows = {}
    for line in output.splitlines():
        if marker in line and '"msg": ' in line:
            msg = json.loads(line.split('"msg": ', 1)[1])
            head, command = msg.split(marker, 1)
            follows[head] = command
    assert sorted(follows) == ["sim-h1: variant 1/2 sglang-base: ", "sim-h1: variant 2/2 vllm-base: ",
                               "sim-h2: variant 1/2 sglang-eagle3: ", "sim-h2: variant 2/2 vllm-eagle3: "], output[-6000:]
    for head, command in follows.items():
        assert command.startswith("ssh -p %d -i " % fleet.ssh_port), command
        proc = subprocess.run(["timeout", "20", "sh", "-c", command], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL, check=False)
        assert proc.returncode == 124, (command, proc.returncode, proc.stderr)  # tail -f ran until stopped
        lines = proc.stdout.splitlines()
        assert lines[0].endswith("llm_benchmark: 2 levels"), (command, proc.stdout)
        # What a start line says it sends agrees with its end line's count (a conversation's turns each count).
        for start, end in ((lines[1], lines[2]), (lines[3], lines[4])):
            counted = re.search(r"requests sent \(1 warm-up, (\d+) counted\)\.\.\.$", start)
            assert counted and " %s/%s ok, " % (counted.group(1), counted.group(1)) in end, proc.stdout
        name = head.split(" ")[-2].rstrip(":")
        assert command.endswith("bench+%s.progress'" % name), command


def test_check_mode_prints_a_plan_the_engines_parse_and_changes_nothing(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 1, 2491)
    fleet.hold_gpu(1, 2, 1024, "some-other-job")
    before = _snapshot(fleet, 1)
    results = tmp_path / "results"
    run = _run(fleet, _on_the_simulator("kimi-k25-eagle3", fleet, tmp_path), results, "--check")
    assert run.returncode == 0, run.output[-6000:]
    assert "sim-h1: 4 variant(s) of kimi-k25-eagle3, 4 to run" in run.output, run.output[-6000:]
    assert "1. sglang-base [run] sglang on all GPUs" in run.output, run.output[-6000:]
    # Printed once, at the end, in one block.
    assert run.output.count("1. sglang-base [run]") == 1, run.output[-6000:]
    assert "Show every host's plan (nothing ran)" in run.output.split("1. sglang-base [run]")[0].rsplit("TASK [", 1)[1]
    assert _snapshot(fleet, 1) == before
    assert not (results / "records").exists() or _records(results) == []

    argvs = _planned_argvs(run.output)
    assert sorted(argvs) == ["sglang-base", "sglang-eagle3", "vllm-base", "vllm-eagle3"], run.output[-6000:]
    try:
        realsglang.server_args_module()
    except realsglang.NotInstalled as exc:
        pytest.fail("real sglang is needed for this check: %s" % exc)
    for name in ("sglang-base", "sglang-eagle3"):
        argv = argvs[name]
        assert argv[1] == "serve", argv
        parsed = realsglang.parse(argv[2:], entry="serve")
        assert parsed.code == 0, "real sglang refuses %s:\n%s" % (argv, parsed.message[-3000:])
        args = realsglang.as_dict(parsed.args)
        assert (args["model_path"], args["tp_size"], args["trust_remote_code"]) == (KIMI, 8, True)
        assert args["speculative_algorithm"] == ("EAGLE3" if name.endswith("eagle3") else None)
    for name in ("vllm-base", "vllm-eagle3"):
        cp = subprocess.run([os.path.join(paths.REPO, "sim", "bin", "sglang-python"), "-c", VLLM_PARSE],
                            input=json.dumps(argvs[name][2:]), capture_output=True, text=True, timeout=60,
                            check=True)
        got = json.loads(cp.stdout)
        assert "exit" not in got and (got["model"], got["tp"]) == (KIMI, 8), (name, got, cp.stderr)
        assert (got["spec"] or {}).get("method") == ("eagle3" if name.endswith("eagle3") else None), got

    # A drafter its target cannot take stops the host at the plan, before any teardown.
    bad = tmp_path / "bad"
    bad.mkdir()
    run = _run(fleet, _on_the_simulator("kimi-k25-eagle3", fleet, bad, drafter=MISMATCHED), results)
    assert run.returncode != 0, run.output[-6000:]
    assert "variant sglang-eagle3: hidden_size differs: drafter hidden_size=4096, target hidden_size=" in run.output, \
        run.output[-6000:]
    assert _snapshot(fleet, 1) == before

    # A method the engine does not know: the one server_plan call of the host refuses it, naming the variant.
    unknown = tmp_path / "unknown"
    unknown.mkdir()
    path = _on_the_simulator("kimi-k25-eagle3", fleet, unknown)
    doc = yaml.safe_load(path.read_text())
    next(v for v in doc["variants"] if v["name"] == "sglang-eagle3")["speculative"]["algorithm"] = "EAGLE4"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    run = _run(fleet, path, results)
    assert run.returncode != 0, run.output[-6000:]
    assert "variant sglang-eagle3: batch item 2: speculative.algorithm 'EAGLE4'" in run.output, run.output[-6000:]
    assert _snapshot(fleet, 1) == before


def test_spread_halves_the_launches_gates_fail_by_name_and_a_rerun_skips(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2492)
    results = tmp_path / "results"
    path = _on_the_simulator("kimi-k25-eagle3", fleet, tmp_path,
                             gates={"max_failed_requests": 0, "min_speedup": {"levels": [1], "value": 50},
                                    "min_goodput_fraction": 0.5})
    text = yaml.safe_load(path.read_text())
    text["spread"] = True
    # A goodput SLO every request meets on the simulator, and the per-category table at concurrency 4.
    text["benchmark"]["slo_ttft_ms"] = 60000
    text["category_level"] = 4
    # A flag the simulator does not read: the report says so, naming it.
    text["variants"][0]["server"]["extra_args"] = text["variants"][0]["server"].get("extra_args", []) + [
        "--chunked-prefill-size", "4096"]
    path.write_text(yaml.safe_dump(text, sort_keys=False))
    run = _run(fleet, path, results)
    # A 50x speed-up cannot be: the playbook fails naming the gate, after every variant ran.
    assert run.returncode != 0, run.output[-6000:]
    assert "the experiment did not pass" in run.output and "min_speedup at concurrency 1" in run.output, \
        run.output[-6000:]
    # Nothing a task name reads is undefined when Ansible loads the variant's file (test_import_names.py).
    assert "template error" not in run.output, run.output[:6000]
    # Spread: host i runs every second variant, four launches in all instead of eight.
    assert _records(results) == ["sim-h1/sglang-base.json", "sim-h1/vllm-base.json",
                                 "sim-h2/sglang-eagle3.json", "sim-h2/vllm-eagle3.json"], run.output[-6000:]
    for rel in _records(results):
        rec = json.loads((results / "records" / rel).read_text())
        assert rec["outcome"] == "ok", rec
        assert rec["server"]["relaunched"] is True and rec["teardown"]["verified"] is True, rec
        assert rec["speculative"] is rel.endswith("eagle3.json"), rec
        # The stop's own NVML check is the teardown's evidence: every GPU read free.
        assert rec["teardown"]["gpus_free"] == rec["teardown"]["gpus_selected"] > 0, rec
        assert rec["teardown"]["gpus_used"] == [], rec
        # The per-request records came to the controller with the benchmark's own task.
        host, name = rel[:-len(".json")].split("/")
        requests = (results / "requests" / ("%s+%s.jsonl" % (host, name))).read_text().splitlines()
        assert sorted({json.loads(line)["concurrency"] for line in requests}) == [1, 4], requests[:2]
    report = json.loads((results / "experiment.json").read_text())
    assert report["failures"] == [], report["failures"]
    goodput = [g for g in report["gates"] if g["gate"] == "min_goodput_fraction"]
    assert len(goodput) == 4 and all(g["passed"] and g["value"] == 1.0 for g in goodput), goodput
    assert all(c is None or c["concurrency"] == 4 for c in report["categories"].values()), report["categories"]
    md = (results / "experiment.md").read_text()
    assert "sglang-base: the simulated fleet does not model --chunked-prefill-size" in md, md[-3000:]
    assert "sglang-eagle3: the simulated fleet does not model" not in md, md[-3000:]
    # Four requests a level: categories with fewer than 10, said in the play's closing lines (spread: one
    # group for the fleet).
    assert "fleet (spread over 2 hosts): WARNING: fewer than 10 requests at concurrency 4 in " in run.output, \
        run.output[-6000:]
    for index in (1, 2):
        assert fleet.ssh(index, LEFT).stdout.strip() == ""
    _follow_lines_run_as_printed(run.output, fleet)

    # The same file again: every variant is recorded, nothing is launched or rewritten.
    stamps = {rel: (results / "records" / rel).stat().st_mtime_ns for rel in _records(results)}
    run = _run(fleet, path, results, experiment_clean_start=False)
    assert "1. sglang-base [skip, recorded]" in run.output, run.output[-6000:]
    assert "sim-h1: 0 of 2 variants to run" in run.output, run.output[-6000:]
    assert {rel: (results / "records" / rel).stat().st_mtime_ns for rel in _records(results)} == stamps
    for index in (1, 2):
        assert fleet.ssh(index, LEFT).stdout.strip() == ""


def test_an_interrupted_experiment_resumes(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 1, 2493)
    results = tmp_path / "results"
    path = _on_the_simulator("glm5-tp8-vs-ep8", fleet, tmp_path)
    cmd = fleet.playbook_cmd("experiment.yml", dict(
        experiment_file=str(path), experiment_results_dir=str(results),
        experiment_bench_progress_file=str(fleet.dir / "bench.progress")))
    log_path = tmp_path / "first.log"
    with open(log_path, "w") as log:
        # Unbuffered: the test reads the log while the playbook runs.
        proc = subprocess.Popen(cmd, cwd=paths.REPO, env=dict(ansible_env(), PYTHONUNBUFFERED="1"),
                                stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            # Interrupt while the second variant (ep8) launches: the first is recorded.
            first = results / "records" / "sim-h1" / "tp8.json"
            assert wait_for(first.is_file, timeout=300), log_path.read_text()[-4000:]
            # The progress line printed as ep8's launch begins ("HOST: ep8 (2/N): launching ...").
            assert wait_for(lambda: ": ep8 (2/" in log_path.read_text(), timeout=120)
            # Ctrl-C, and again when the playbook runs on: a SIGINT that lands while Ansible forks
            # a worker is raised in logging's at-fork hook, where CPython drops it ("Exception
            # ignored in: <function _releaseLock>"); Ansible's handler has already reset SIGINT to
            # its default by then, so the second one ends the playbook, as a person's second press.
            for unused in range(3):
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    proc.wait(timeout=2)
                    break
                except subprocess.TimeoutExpired:
                    continue
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert _records(results) == ["sim-h1/tp8.json"], log_path.read_text()[-4000:]

    run = _run(fleet, path, results)
    assert run.returncode == 0, run.output[-6000:]
    assert "1. tp8 [skip, recorded]" in run.output and "2. ep8 [run]" in run.output, run.output[-6000:]
    assert _records(results) == ["sim-h1/ep8.json", "sim-h1/tp8.json"]
    report = json.loads((results / "experiment.json").read_text())
    assert report["failures"] == [], report["failures"]
    assert fleet.ssh(1, LEFT).stdout.strip() == ""


def test_hostile_variant_names_stay_file_names_and_text(request, tmp_path):
    """Names are data (issue 37): a variant named with '/..' and one of 222 characters with a '|' run like
    any other; every file named after them lands in the results directory (on the host: under
    /var/tmp/gpufleet.serving) as one quoted file name, and the report shows them as text."""
    fleet = start_fleet(request, tmp_path, 1, 2495)
    results = tmp_path / "results"
    path = _on_the_simulator("glm5-tp8-vs-ep8", fleet, tmp_path)
    doc = yaml.safe_load(path.read_text())
    escape, long_name = "x/../../../escaped/pwn", "p|" + "a" * 220
    doc["variants"][0]["name"], doc["variants"][1]["name"] = escape, long_name
    doc["reference"] = escape
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    run = _run(fleet, path, results)
    assert run.returncode == 0, run.output[-6000:]
    report = json.loads((results / "experiment.json").read_text())
    assert report["failures"] == [] and sorted(report["hosts"]["sim-h1"]) == sorted([escape, long_name])
    made = {str(p.relative_to(results)) for p in results.rglob("*") if p.is_file()}
    assert "requests/sim-h1+x%2F..%2F..%2F..%2Fescaped%2Fpwn.jsonl" in made, made
    assert "records/sim-h1/x%2F..%2F..%2F..%2Fescaped%2Fpwn.json" in made, made
    assert any(m.startswith("requests/sim-h1+p%7Caaa") and len(os.path.basename(m)) <= 255 for m in made), made
    assert not (tmp_path / "escaped").exists() and not os.path.exists("/var/escaped")
    assert fleet.ssh(1, "ls /var/escaped 2>/dev/null || true").stdout.strip() == ""
    markdown = (results / "experiment.md").read_text()
    assert "p\\|aaa" in markdown and "| p|aaa" not in markdown
    assert fleet.ssh(1, LEFT).stdout.strip() == ""
