"""The fleet playbooks end to end, for each engine: real ansible-playbook, real SSH, simulated
hosts running the simulated `sglang serve` or `vllm serve` (sim/bin, beside the inventory's
ENGINE_server_python).

Every test brings up its own simulated fleet (sim/simctl fleet up) on its own sshd and server
ports and takes it down in a finalizer; the only processes a test kills are a fleet host's
namespace init (by its recorded PID), an API server by its recorded PID, and holders it started.
Benchmarks are kept short (levels [1, 4], 32-token outputs) so the file stays in minutes.

swap_to_eagle.yml, benchmark.yml and swap_to_base.yml run for both engines; a lost host, the
resets and the hung server with SGLang; launch/keep/teardown, an unknown engine and the
survivors of a killed API server (VLLM::EngineCore and its workers) with vLLM.
"""
import json
import subprocess

import pytest
from _fleet_fixtures import PY, REPO, SIMCTL, ansible_env, needs_fleet, planned_commands, start_fleet, wait_for

pytestmark = needs_fleet

SHORT_BENCH = {"swap_bench_levels": [1, 4], "swap_bench_requests_per_level": 4,
               "swap_bench_warmup_requests": 1, "swap_bench_input_len": 64,
               "swap_bench_output_len": 32}
# The same settings as the one benchmark dict the playbooks take.
BENCH = {"benchmark": {"levels": [1, 4], "requests_per_level": 4, "warmup_requests": 1, "input_len": 64,
                       "output_len": 32}}


def summary_lines(output, host):
    return [line for line in output.splitlines() if '"%s: ' % host in line]


def vllm_vars(fleet, **extra):
    return dict({"engine": "vllm", "vllm_server_port": fleet.server_port,
                 "vllm_server_progress_interval": 2, "vllm_server_ready_timeout": 120}, **extra)


def gpus(fleet, index):
    return fleet.module(fleet.name(index), "gpufleet.serving.gpu_info")["gpus"]


def holder_titles(fleet, index):
    return [h["cmdline"] for g in gpus(fleet, index) for h in g["holders"]]


def all_free(fleet, index):
    found = gpus(fleet, index)
    return len(found) == 8 and all(g["used_mib"] == 0 and not g["holders"] for g in found)


def api_server_pid(fleet, index):
    state = fleet.host_dir(index) / "lib" / "gpufleet-serving" / ("vllm-%d.json" % fleet.server_port)
    return int(json.loads(state.read_text())["pid"])


def sglang_speculative(fleet, index):
    return fleet.server_info(index)["speculative_algorithm"] == "EAGLE3"


def vllm_speculative(fleet, index):
    state = fleet.host_dir(index) / "lib" / "gpufleet-serving" / ("vllm-%d.json" % fleet.server_port)
    return "--speculative-config" in state.read_text()


def sglang_eagle_checks(fleet, run, report):
    """SGLang + EAGLE-3 at least 1.5x single-stream; the drafter's memory on every GPU of the TP8 server."""
    for host, entry in report["hosts"].items():
        base, eagle = entry["baseline"], entry["candidate"]
        assert eagle["single_stream_tok_s"] > 1.5 * base["single_stream_tok_s"], (host, base, eagle)
    assert "Show the comparison" in run.output and "sglang+eagle3/sglang" in run.output
    for index in range(1, fleet.hosts + 1):
        info = fleet.server_info(index)
        gpus = fleet.module(fleet.name(index), "gpufleet.serving.gpu_info")["gpus"]
        assert len(gpus) == 8
        for gpu in gpus:
            # The target's static pool alone is exactly mem_fraction_static x total:
            # more than that is the drafter's weights and its KV cache.
            assert gpu["used_mib"] > info["mem_fraction_static"] * gpu["total_mib"], gpu
            titles = [h["cmdline"] for h in gpu["holders"]]
            assert any(t.startswith("sglang::scheduler_TP%d" % gpu["index"]) for t in titles), titles


def sglang_base_checks(fleet):
    for index in range(1, fleet.hosts + 1):
        info = fleet.server_info(index)
        assert info["speculative_algorithm"] is None
        assert info["speculative_draft_model_path"] is None


def vllm_eagle_checks(fleet, run, report):
    """Acceptance from vLLM's spec_decode counters (1 + accepted / drafts): none without a drafter."""
    for entry in report["hosts"].values():
        assert entry["baseline"]["accept_length"] is None, entry["baseline"]


# Per engine: the fleet (SGLang on two hosts also swaps them in parallel), the variables that
# select the engine, how a host shows that its server runs the drafter, and the checks only one
# engine's server can answer.
ENGINES = {
    "sglang": {"hosts": 2, "ssh_port": 2401, "vars": lambda fleet: {}, "title": "SGLang",
               "speculative": sglang_speculative, "eagle_checks": sglang_eagle_checks,
               "base_checks": sglang_base_checks},
    "vllm": {"hosts": 1, "ssh_port": 2482, "vars": vllm_vars, "title": "vLLM",
             "speculative": vllm_speculative, "eagle_checks": vllm_eagle_checks,
             "base_checks": lambda fleet: None},
}


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_swap_to_eagle_benchmark_and_back_to_base(request, tmp_path, engine):
    spec = ENGINES[engine]
    fleet = start_fleet(request, tmp_path, spec["hosts"], spec["ssh_port"])
    hosts = [fleet.name(i) for i in range(1, spec["hosts"] + 1)]
    report_dir = tmp_path / "report"
    # No server runs yet: the baseline step launches the base server first.
    run = fleet.playbook("swap_to_eagle.yml", dict(spec["vars"](fleet), swap_report_dir=str(report_dir),
                                                   **SHORT_BENCH))
    assert run.returncode == 0, run.output[-6000:]
    for name in ("benchmark.json", "benchmark.md", "benchmark.png", "benchmark.html", "swap_summary.json"):
        assert (report_dir / name).is_file(), name
    markdown = (report_dir / "benchmark.md").read_text()
    for host in hosts:
        assert "| %s | %s |" % (host, engine) in markdown and "| %s | %s+eagle3 |" % (host, engine) in markdown
    assert "%s vs %s + EAGLE-3" % (spec["title"], spec["title"]) in markdown
    # The default workload is named, compared per category, and not warned about as random prompts; a short
    # benchmark's categories are too small to compare, and the report says so.
    assert ": built-in set builtin-v1, 80 items, seed 0" in markdown and "random prompts" not in markdown
    assert "WARNING: fewer than 10 requests at concurrency" in markdown
    assert "### %s: by category" % hosts[0] in markdown and "%s+eagle3 speed-up" % engine in markdown
    report = json.loads((report_dir / "benchmark.json").read_text())
    assert sorted(report["hosts"]) == hosts
    for entry in report["hosts"].values():
        base, eagle = entry["baseline"], entry["candidate"]
        assert eagle["accept_length"] is not None and eagle["accept_length"] > 1.5, eagle
        assert base["failed"] == 0 and eagle["failed"] == 0
    summary = json.loads((report_dir / "swap_summary.json").read_text())
    assert [h["outcome"] for h in summary["hosts"]] == ["ok"] * len(hosts), summary
    # The default workload is the built-in natural-text set; every request's record is fetched.
    for host in hosts:
        for label in ("baseline", "candidate"):
            lines = [json.loads(line) for line in (report_dir / "requests" / ("%s+%s.jsonl" % (host, label))).open()]
            counted = [line for line in lines if not line["warmup"]]
            assert len(counted) >= 2 * 4 and all(line["ok"] and line["category"] for line in counted), lines[:2]
    assert all(spec["speculative"](fleet, i) for i in range(1, len(hosts) + 1))
    spec["eagle_checks"](fleet, run, report)

    bench = fleet.playbook("benchmark.yml", dict(spec["vars"](fleet), bench_levels=[1], bench_requests_per_level=2,
                                                 bench_output_len=32, bench_label=engine + "+eagle3",
                                                 bench_report_dir=str(tmp_path / "bench")))
    assert bench.returncode == 0, bench.output[-6000:]
    line = summary_lines(bench.output, "sim-h1")[-1]
    assert "sim-h1: ok, http://%s:%d" % (fleet.address(1), fleet.server_port) in line, line
    measured = json.loads((tmp_path / "bench" / "benchmark.json").read_text())["hosts"]["sim-h1"]["baseline"]
    assert measured["accept_length"] > 1.5, measured

    back = fleet.playbook("swap_to_base.yml", dict(spec["vars"](fleet), swap_benchmark=True, swap_bench_levels=[1],
                                                   swap_bench_requests_per_level=2, swap_bench_output_len=32,
                                                   swap_report_dir=str(tmp_path / "back")))
    assert back.returncode == 0, back.output[-6000:]
    for index, host in enumerate(hosts, 1):
        line = summary_lines(back.output, host)[-1]
        assert "ok, base server" in line and "relaunched" in line, line
        assert not spec["speculative"](fleet, index)
    spec["base_checks"](fleet)
    report = json.loads((tmp_path / "back" / "benchmark.json").read_text())
    assert sorted(report["hosts"]) == hosts


def test_swap_to_eagle_gates_and_the_rollback_to_the_base_server(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 1, 2487)
    # A gate or a benchmark key that does not exist fails before anything runs, naming it.
    run = fleet.playbook("swap_to_eagle.yml", dict(BENCH, swap_gates={"min_accept_len": 2}))
    assert run.returncode != 0 and "swap_gates.min_accept_len: unknown gate" in run.output, run.output[-4000:]
    run = fleet.playbook("swap_to_eagle.yml", {"benchmark": {"level": [1]}})
    assert run.returncode != 0 and "benchmark.level: unknown key; the valid keys are levels," in run.output, \
        run.output[-4000:]
    assert fleet.ssh(1, "pgrep -f 'sglang[:.]' || true").stdout.strip() == ""

    # Check mode: the plan of both steps (the EAGLE-3 one with the host's drafter), nothing
    # launched, nothing written.
    report_dir = tmp_path / "report"
    run = fleet.playbook("swap_to_eagle.yml", dict(BENCH, swap_report_dir=str(report_dir)), args=["--check"])
    assert run.returncode == 0, run.output[-6000:]
    base, eagle = planned_commands(run.output, "sim-h1", "swap_to_eagle", [
        "1. baseline [run] sglang on all GPUs", "2. candidate [run] sglang on all GPUs"])
    assert "--speculative-algorithm EAGLE3" in eagle and "--speculative-draft-model-path" in eagle, eagle
    assert "--speculative-algorithm" not in base
    assert not report_dir.exists()
    assert fleet.ssh(1, "pgrep -f 'sglang[:.]' || true").stdout.strip() == ""

    # A drafter the engine cannot load fails the host at stage eagle in the plan, before the base
    # server is launched or benchmarked.
    run = fleet.playbook("swap_to_eagle.yml", dict(
        BENCH, swap_report_dir=str(tmp_path / "bad-drafter"),
        eagle_drafter_model_path="{{ sglang_server_model_path | dirname }}/mismatched-eagle3"))
    assert run.returncode != 0, run.output[-6000:]
    line = summary_lines(run.output, "sim-h1")[-1]
    assert "sim-h1: FAILED at stage eagle: " in line and "hidden_size differs" in line, line
    assert line.rstrip('",').endswith("server left: base server (not touched)"), line
    assert fleet.ssh(1, "pgrep -f 'sglang[:.]' || true").stdout.strip() == ""

    # An acceptance length of 99 cannot be reached: the EAGLE-3 server fails its gate, and the
    # base server is relaunched and waited for until ready.
    run = fleet.playbook("swap_to_eagle.yml", dict(BENCH, swap_report_dir=str(report_dir),
                                                   swap_gates={"min_acceptance_length": 99, "max_failed_requests": 0}))
    assert run.returncode != 0 and "DEPRECATION" not in run.output, run.output[-6000:]
    line = summary_lines(run.output, "sim-h1")[-1]
    assert "sim-h1: FAILED at stage gates" in line and "min_acceptance_length" in line, line
    assert "server left: base server (restored, ready in" in line, line
    assert not sglang_speculative(fleet, 1) and fleet.server_info(1)["speculative_algorithm"] is None
    summary = json.loads((report_dir / "swap_summary.json").read_text())
    (host,) = summary["hosts"]
    assert host["rolled_back"] is True and host["stage"] == "gates", host
    failed = [g for g in host["gates"] if not g["passed"]]
    assert [g["gate"] for g in failed] == ["min_acceptance_length"] and failed[0]["value"] > 1.5, host["gates"]

    # swap_rollback: false leaves the EAGLE-3 server as it is.
    run = fleet.playbook("swap_to_eagle.yml", dict(BENCH, swap_report_dir=str(report_dir), swap_rollback=False,
                                                   swap_gates={"min_acceptance_length": 99}))
    assert run.returncode != 0, run.output[-6000:]
    assert "server left: EAGLE-3 server" in summary_lines(run.output, "sim-h1")[-1]
    assert sglang_speculative(fleet, 1)


def test_swap_to_eagle_host_lost_mid_run(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2402)
    report_dir = tmp_path / "report"
    launched = fleet.playbook("launch.yml")
    assert launched.returncode == 0, launched.output[-4000:]

    proc = subprocess.Popen(
        fleet.playbook_cmd("swap_to_eagle.yml", dict(SHORT_BENCH, swap_report_dir=str(report_dir))),
        cwd=str(REPO), env=ansible_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, stdin=subprocess.DEVNULL)
    request.addfinalizer(lambda: proc.poll() is None and proc.kill())

    # After its baseline, sim-h2's base server is torn down and the EAGLE-3 server is
    # started: server_process records the new command line at once. Lose the host then,
    # while its EAGLE-3 server is starting.
    state = fleet.server_state_file(2)

    def eagle_launched():
        try:
            return "--speculative-algorithm" in state.read_text()
        except OSError:
            return False

    found = wait_for(eagle_launched, timeout=240)
    if not found:
        proc.kill()
    assert found, "sim-h2 never started its EAGLE-3 server:\n" + proc.communicate()[0][-4000:]
    fleet.kill_host(2)
    output = proc.communicate(timeout=300)[0]
    assert proc.returncode != 0, output[-4000:]

    h1, h2 = summary_lines(output, "sim-h1"), summary_lines(output, "sim-h2")
    assert h1 and "sim-h1: ok" in h1[-1], output[-4000:]
    assert h2 and "sim-h2: FAILED at stage eagle" in h2[-1] and "unreachable" in h2[-1], output[-4000:]
    summary = {h["host"]: h for h in json.loads((report_dir / "swap_summary.json").read_text())["hosts"]}
    assert summary["sim-h1"]["outcome"] == "ok"
    assert summary["sim-h2"]["outcome"] == "failed"
    assert summary["sim-h2"]["unreachable"] is True
    assert summary["sim-h2"]["stage"] in ("eagle", "eagle_benchmark")
    report = json.loads((report_dir / "benchmark.json").read_text())
    assert sorted(report["hosts"]) == ["sim-h1"]
    assert fleet.server_info(1)["speculative_algorithm"] == "EAGLE3"
    assert "swap_to_eagle did not complete on ['sim-h2']" in output


def test_vllm_launch_keep_teardown_and_an_unknown_engine(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2481)
    refused = fleet.playbook("launch.yml", {"engine": "tgi"})
    assert refused.returncode != 0
    assert "engine must be one of sglang, vllm, not 'tgi'" in refused.output, refused.output[-3000:]

    run = fleet.playbook("launch.yml", vllm_vars(fleet))
    assert run.returncode == 0, run.output[-6000:]
    for index in (1, 2):
        url = "http://%s:%d" % (fleet.address(index), fleet.server_port)
        line = summary_lines(run.output, fleet.name(index))[-1]
        assert url in line and "relaunched, ready after" in line, line
        titles = holder_titles(fleet, index)
        assert any(t.startswith("VLLM::Worker_TP") for t in titles), titles
        assert not any(t.startswith("sglang::") for t in titles), titles

    again = fleet.playbook("launch.yml", vllm_vars(fleet))
    assert again.returncode == 0, again.output[-6000:]
    assert "kept running (healthy, same configuration)" in summary_lines(again.output, "sim-h1")[-1]

    down = fleet.playbook("teardown.yml", vllm_vars(fleet))
    assert down.returncode == 0, down.output[-6000:]
    for index in (1, 2):
        line = summary_lines(down.output, fleet.name(index))[-1]
        assert "stopped vllm-%d (was running: True)" % fleet.server_port in line, line
        assert all_free(fleet, index), gpus(fleet, index)

    # The health gate: a row remap pending on host 2's GPU 3 (DCGM fails it) refuses that host's start
    # after the release, naming the check and the setting; the other host launches. The setting launches
    # anyway, and the verdict is in the role's result.
    fleet.ssh(2, '%s %s gpu health "$FAKE_NVML_ROOT" 3 remap_pending' % (PY, SIMCTL))
    gated = fleet.playbook("launch.yml", vllm_vars(fleet))
    assert gated.returncode != 0, gated.output[-6000:]
    refusal = (summary_lines(gated.output, fleet.name(2)) or [gated.output[-8000:]])[-1]
    assert "GPU health is fail, so nothing is started: GPU 3 row_remap_pending" in refusal, refusal
    assert "Set vllm_server_allow_unhealthy_gpus to true to launch anyway" in refusal, refusal
    assert "relaunched, ready after" in summary_lines(gated.output, fleet.name(1))[-1]
    assert all_free(fleet, 2), gpus(fleet, 2)
    allowed = fleet.playbook("launch.yml", vllm_vars(fleet, vllm_server_allow_unhealthy_gpus=True))
    assert allowed.returncode == 0, allowed.output[-6000:]
    assert "relaunched, ready after" in summary_lines(allowed.output, fleet.name(2))[-1]


def test_vllm_survivors_of_a_killed_api_server_through_teardown_and_reset(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 1, 2483)
    survivors = vllm_vars(fleet, vllm_server_extra_args=["--sim-survivors"])
    for playbook, extra in (("teardown.yml", {}), ("reset.yml", {"reset_summary_file": str(tmp_path / "reset.json")})):
        run = fleet.playbook("launch.yml", survivors)
        assert run.returncode == 0, run.output[-6000:]
        fleet.ssh(1, "kill -9 %d" % api_server_pid(fleet, 1))
        titles = holder_titles(fleet, 1)
        assert any(t.startswith("VLLM::Worker_TP") for t in titles), titles  # the survivors keep the GPUs

        down = fleet.playbook(playbook, dict(survivors, **extra))
        assert down.returncode == 0, down.output[-6000:]
        assert all_free(fleet, 1), gpus(fleet, 1)
        if playbook == "teardown.yml":
            line = summary_lines(down.output, "sim-h1")[-1]
            assert "(was running: False)" in line and "VLLM::EngineCore" in line, line
        else:
            (host,) = json.loads((tmp_path / "reset.json").read_text())["hosts"]
            assert host["outcome"] == "clean", host
            assert any(c.startswith("VLLM::EngineCore") for c in host["killed_commands"]), host


def test_reset_hung_server_and_protected_daemon(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2404)
    # sim-h1's server ignores SIGTERM (only that host: a host variable of the server's env).
    extra_inv = tmp_path / "hang.yml"
    extra_inv.write_text("all:\n  hosts:\n    sim-h1:\n      sglang_server_env:\n"
                         "        SGLANG_SIM_HANG_ON_TERM: '1'\n")
    launched = fleet.playbook("launch.yml", inventories=[extra_inv])
    assert launched.returncode == 0, launched.output[-4000:]
    daemon = fleet.hold_gpu(2, 0, 0, "nvidia-persistenced", daemon=True)

    # The preview says what a real run would kill and which GPUs are in use, and signals nothing.
    preview = fleet.playbook("reset.yml", {"reset_term_timeout": 1}, inventories=[extra_inv], args=["--check"])
    assert preview.returncode == 0, preview.output[-6000:]
    rows = [line for line in preview.output.splitlines() if "sim-h" in line and "would kill" in line]
    assert len(rows) == 2 and all("GPUs in use now: 0-7" in r for r in rows), preview.output[-6000:]
    assert not [line for line in preview.output.splitlines() if "sim-h" in line and " clean " in line], preview.output[-6000:]
    assert "would kill" in preview.output and "x sglang::scheduler_TP*" in preview.output, preview.output[-6000:]
    assert all(not all_free(fleet, index) for index in (1, 2))

    summary_file = tmp_path / "reset.json"
    run = fleet.playbook("reset.yml", {"reset_term_timeout": 1, "reset_timeout": 30,
                                       "reset_summary_file": str(summary_file)},
                         inventories=[extra_inv])
    assert run.returncode == 0, run.output[-6000:]
    results = {h["host"]: h for h in json.loads(summary_file.read_text())["hosts"]}
    assert results["sim-h1"]["outcome"] == results["sim-h2"]["outcome"] == "clean"
    # TP8: 8 schedulers, a detokenizer and the main process at least. On sim-h1 the main process
    # hangs, so every one of them waits for our own signal.
    assert results["sim-h1"]["killed"] >= 10, (results["sim-h1"], run.output[-6000:])
    # On sim-h2 the main process's SIGTERM handler takes its children down too, and a child it
    # ended before our signal reached it was not signalled, so is not in "killed" (it lists what
    # gpu_release signalled); the survivors check below proves the whole tree went.
    assert any(" serve --model-path" in c for c in results["sim-h2"]["killed_commands"]), results["sim-h2"]["killed_commands"]
    # The hung server needed SIGKILL; the well-behaved one went on SIGTERM.
    assert results["sim-h1"]["sigkilled"] >= 1
    # ...except multiprocessing's resource tracker, which ignores SIGTERM (its own
    # resource_tracker.main sets SIG_IGN) and so gets SIGKILL at once.
    assert results["sim-h2"]["sigkilled"] == 1
    assert any("resource_tracker" in c for c in results["sim-h2"]["killed_commands"])
    assert results["sim-h2"]["protected_holders"] == ["nvidia-persistenced"]
    assert all(r["gpus_free"] == r["gpus_selected"] == 8 for r in results.values())
    assert "protected: nvidia-persistenced" in run.output
    assert "killed %d: " % results["sim-h1"]["killed"] in run.output, run.output[-6000:]

    fleet.ssh(2, "kill -0 %d" % daemon)  # the daemon survived
    for index in (1, 2):
        left = fleet.ssh(index, "pgrep -f 'sglang[:.]' || true").stdout.split()
        assert left == [], left
        gpus = fleet.module(fleet.name(index), "gpufleet.serving.gpu_info")["gpus"]
        assert all(g["used_mib"] == 0 for g in gpus), gpus


def test_reset_exits_nonzero_when_a_host_stays_dirty(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2405)
    # A protected daemon holding memory: the reset may not kill it, so GPU 3 stays used.
    fleet.hold_gpu(2, 3, 2048, "nvidia-persistenced", daemon=True)
    summary_file = tmp_path / "reset.json"
    run = fleet.playbook("reset.yml", {"reset_timeout": 3, "reset_summary_file": str(summary_file)})
    assert run.returncode != 0, run.output[-4000:]
    results = {h["host"]: h for h in json.loads(summary_file.read_text())["hosts"]}
    assert results["sim-h1"]["outcome"] == "clean"
    assert results["sim-h2"]["outcome"] == "dirty"
    assert results["sim-h2"]["gpus_used"] == [3]
    assert results["sim-h2"]["gpus_free"] == 7
    assert "GPU 3" in results["sim-h2"]["reason"] and "2048 MiB" in results["sim-h2"]["reason"]
    assert "GPUs not verified free on sim-h2" in run.output
