"""The fleet playbooks end to end: real ansible-playbook, real SSH, simulated hosts.

Every test brings up its own simulated fleet (sim/simctl fleet up) on its own
sshd and SGLang ports and takes it down in a finalizer; the only processes a test kills
are a fleet host's namespace init (by its recorded PID) and holders it started.
Benchmarks are kept short (levels [1, 4], 32-token outputs) so the file stays in minutes.
"""
import json
import subprocess

from _fleet_fixtures import REPO, ansible_env, needs_fleet, start_fleet, wait_for

pytestmark = needs_fleet

SHORT_BENCH = {"swap_bench_levels": [1, 4], "swap_bench_requests_per_level": 4,
               "swap_bench_warmup_requests": 1, "swap_bench_input_len": 64,
               "swap_bench_output_len": 32}


def summary_lines(output, host):
    return [line for line in output.splitlines() if '"%s: ' % host in line]


def test_swap_to_eagle_end_to_end(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2401)
    report_dir = tmp_path / "report"
    # No server runs yet: the baseline step launches the base server first.
    run = fleet.playbook("swap_to_eagle.yml", dict(SHORT_BENCH, swap_report_dir=str(report_dir)))
    assert run.returncode == 0, run.output[-6000:]

    for name in ("benchmark.json", "benchmark.md", "benchmark.png", "swap_summary.json"):
        assert (report_dir / name).is_file(), name
    markdown = (report_dir / "benchmark.md").read_text()
    for host in ("sim-h1", "sim-h2"):
        assert "| %s | sglang |" % host in markdown
        assert "| %s | sglang+eagle3 |" % host in markdown
    report = json.loads((report_dir / "benchmark.json").read_text())
    assert sorted(report["hosts"]) == ["sim-h1", "sim-h2"]
    for host, entry in report["hosts"].items():
        base, eagle = entry["baseline"], entry["candidate"]
        assert eagle["single_stream_tok_s"] > 1.5 * base["single_stream_tok_s"], (host, base, eagle)
        assert eagle["accept_length"] and eagle["accept_length"] > 1.5
        assert base["failed"] == 0 and eagle["failed"] == 0
    summary = json.loads((report_dir / "swap_summary.json").read_text())
    assert sorted(h["outcome"] for h in summary["hosts"]) == ["ok", "ok"]
    # The default workload is the built-in natural-text set; every request's record is fetched.
    for host in ("sim-h1", "sim-h2"):
        for label in ("baseline", "candidate"):
            lines = [json.loads(line) for line in (report_dir / "requests" / ("%s-%s.jsonl" % (host, label))).open()]
            counted = [line for line in lines if not line["warmup"]]
            assert len(counted) >= 2 * 4 and all(line["ok"] and line["category"] for line in counted), lines[:2]
    assert "Show the comparison" in run.output and "sglang+eagle3/sglang" in run.output

    for index in (1, 2):
        info = fleet.server_info(index)
        assert info["speculative_algorithm"] == "EAGLE3"
        gpus = fleet.module(fleet.name(index), "gpufleet.serving.gpu_info")["gpus"]
        assert len(gpus) == 8
        for gpu in gpus:
            # The target's static pool alone is exactly mem_fraction_static x total:
            # more than that is the drafter's weights and its KV cache.
            assert gpu["used_mib"] > info["mem_fraction_static"] * gpu["total_mib"], gpu
            titles = [h["cmdline"] for h in gpu["holders"]]
            assert any(t.startswith("sglang::scheduler_TP%d" % gpu["index"]) for t in titles), titles


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


def test_swap_to_base_after_swap_to_eagle(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2403)
    run = fleet.playbook("swap_to_eagle.yml", dict(SHORT_BENCH, swap_baseline=False,
                                                   swap_report_dir=str(tmp_path / "r1")))
    assert run.returncode == 0, run.output[-6000:]
    before = [fleet.server_info(i) for i in (1, 2)]
    assert [i["speculative_algorithm"] for i in before] == ["EAGLE3", "EAGLE3"]

    back = fleet.playbook("swap_to_base.yml", {"swap_benchmark": True, "swap_bench_levels": [1],
                                               "swap_bench_requests_per_level": 2,
                                               "swap_bench_output_len": 32,
                                               "swap_report_dir": str(tmp_path / "r2")})
    assert back.returncode == 0, back.output[-6000:]
    for index in (1, 2):
        info = fleet.server_info(index)
        assert info["speculative_algorithm"] is None
        assert info["speculative_draft_model_path"] is None
        line = summary_lines(back.output, fleet.name(index))[-1]
        assert "ok, base server" in line and "relaunched" in line, line
    report = json.loads((tmp_path / "r2" / "benchmark.json").read_text())
    assert sorted(report["hosts"]) == ["sim-h1", "sim-h2"]


def test_reset_hung_server_and_protected_daemon(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2404)
    # sim-h1's server ignores SIGTERM (only that host: a host variable of the server's env).
    extra_inv = tmp_path / "hang.yml"
    extra_inv.write_text("all:\n  hosts:\n    sim-h1:\n      sglang_server_env:\n"
                         "        SGLANG_SIM_HANG_ON_TERM: '1'\n")
    launched = fleet.playbook("launch.yml", inventories=[extra_inv])
    assert launched.returncode == 0, launched.output[-4000:]
    daemon = fleet.hold_gpu(2, 0, 0, "nvidia-persistenced", daemon=True)

    summary_file = tmp_path / "reset.json"
    run = fleet.playbook("reset.yml", {"reset_term_timeout": 1, "reset_timeout": 30,
                                       "reset_summary_file": str(summary_file)},
                         inventories=[extra_inv])
    assert run.returncode == 0, run.output[-6000:]
    results = {h["host"]: h for h in json.loads(summary_file.read_text())["hosts"]}
    assert results["sim-h1"]["outcome"] == results["sim-h2"]["outcome"] == "clean"
    # TP8: 8 schedulers, a detokenizer and the main process at least. On sim-h1 the main process
    # hangs, so every one of them waits for our own signal.
    assert results["sim-h1"]["killed"] >= 10
    # On sim-h2 the main process's SIGTERM handler takes its children down too, and a child it
    # ended before our signal reached it was not signalled, so is not in "killed" (it lists what
    # gpu_release signalled); the survivors check below proves the whole tree went.
    assert any(" serve --model-path" in c for c in results["sim-h2"]["killed_commands"]), results["sim-h2"]["killed_commands"]
    # The hung server needed SIGKILL; the well-behaved one went on SIGTERM.
    assert results["sim-h1"]["sigkilled"] >= 1
    # ...except multiprocessing's resource tracker, which ignores SIGTERM (its own
    # resource_tracker.main sets SIG_IGN) and so gets SIGKILL at once (issue 11, item 7).
    assert results["sim-h2"]["sigkilled"] == 1
    assert any("resource_tracker" in c for c in results["sim-h2"]["killed_commands"])
    assert results["sim-h2"]["protected_holders"] == ["nvidia-persistenced"]
    assert all(r["gpus_free"] == r["gpus_selected"] == 8 for r in results.values())
    assert "protected: nvidia-persistenced" in run.output

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
