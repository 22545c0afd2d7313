"""The fleet playbooks with engine=vllm, end to end: real ansible-playbook, real SSH, simulated
hosts running the simulated `vllm serve` (sim/bin/vllm, beside the inventory's
vllm_server_python).

launch.yml then teardown.yml free every GPU; swap_to_eagle.yml measures vLLM against vLLM +
EAGLE-3 (acceptance from vLLM's spec_decode counters), benchmark.yml and swap_to_base.yml follow;
and the survivor trap: with --sim-survivors the API server, killed by its recorded PID, leaves
VLLM::EngineCore and the workers holding the GPUs, which teardown.yml (and reset.yml) kill and
name. Each test brings up its own fleet (see test_playbooks.py) and only kills what it started.
"""
import json

from _fleet_fixtures import needs_fleet, start_fleet

pytestmark = needs_fleet

SHORT_BENCH = {"swap_bench_levels": [1, 4], "swap_bench_requests_per_level": 4,
               "swap_bench_warmup_requests": 1, "swap_bench_input_len": 64,
               "swap_bench_output_len": 32}


def vllm_vars(fleet, **extra):
    return dict({"engine": "vllm", "vllm_server_port": fleet.server_port,
                 "vllm_server_progress_interval": 2, "vllm_server_ready_timeout": 120}, **extra)


def host_lines(output, host):
    return [line for line in output.splitlines() if '"%s: ' % host in line]


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


def test_launch_keep_teardown_and_an_unknown_engine(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2481)
    refused = fleet.playbook("launch.yml", {"engine": "tgi"})
    assert refused.returncode != 0
    assert "engine must be one of sglang, vllm, not 'tgi'" in refused.output, refused.output[-3000:]

    run = fleet.playbook("launch.yml", vllm_vars(fleet))
    assert run.returncode == 0, run.output[-6000:]
    for index in (1, 2):
        url = "http://%s:%d" % (fleet.address(index), fleet.server_port)
        line = host_lines(run.output, fleet.name(index))[-1]
        assert url in line and "relaunched, ready after" in line, line
        titles = holder_titles(fleet, index)
        assert any(t.startswith("VLLM::Worker_TP") for t in titles), titles
        assert not any(t.startswith("sglang::") for t in titles), titles

    again = fleet.playbook("launch.yml", vllm_vars(fleet))
    assert again.returncode == 0, again.output[-6000:]
    assert "kept running (healthy, same configuration)" in host_lines(again.output, "sim-h1")[-1]

    down = fleet.playbook("teardown.yml", vllm_vars(fleet))
    assert down.returncode == 0, down.output[-6000:]
    for index in (1, 2):
        line = host_lines(down.output, fleet.name(index))[-1]
        assert "stopped vllm-%d (was running: True)" % fleet.server_port in line, line
        assert all_free(fleet, index), gpus(fleet, index)


def test_swap_to_eagle_benchmark_and_back_with_vllm(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 1, 2482)
    report_dir = tmp_path / "report"
    run = fleet.playbook("swap_to_eagle.yml", vllm_vars(fleet, swap_report_dir=str(report_dir), **SHORT_BENCH))
    assert run.returncode == 0, run.output[-6000:]
    markdown = (report_dir / "benchmark.md").read_text()
    assert "| sim-h1 | vllm |" in markdown and "| sim-h1 | vllm+eagle3 |" in markdown, markdown
    assert "vLLM vs vLLM + EAGLE-3" in markdown
    entry = json.loads((report_dir / "benchmark.json").read_text())["hosts"]["sim-h1"]
    base, eagle = entry["baseline"], entry["candidate"]
    # Acceptance comes from vLLM's spec_decode counters (1 + accepted / drafts): none without a drafter.
    assert base["accept_length"] is None, base
    assert eagle["accept_length"] is not None and eagle["accept_length"] > 1.5, eagle
    assert base["failed"] == 0 and eagle["failed"] == 0
    summary = json.loads((report_dir / "swap_summary.json").read_text())
    assert [h["outcome"] for h in summary["hosts"]] == ["ok"], summary
    state = fleet.host_dir(1) / "lib" / "gpufleet-serving" / ("vllm-%d.json" % fleet.server_port)
    assert "--speculative-config" in state.read_text()

    bench = fleet.playbook("benchmark.yml", vllm_vars(fleet, bench_levels=[1], bench_requests_per_level=2,
                                                      bench_output_len=32, bench_label="vllm+eagle3",
                                                      bench_report_dir=str(tmp_path / "bench")))
    assert bench.returncode == 0, bench.output[-6000:]
    line = host_lines(bench.output, "sim-h1")[-1]
    assert "sim-h1: ok, http://%s:%d" % (fleet.address(1), fleet.server_port) in line, line
    measured = json.loads((tmp_path / "bench" / "benchmark.json").read_text())["hosts"]["sim-h1"]["baseline"]
    assert measured["accept_length"] > 1.5, measured

    back = fleet.playbook("swap_to_base.yml", vllm_vars(fleet, swap_report_dir=str(tmp_path / "back")))
    assert back.returncode == 0, back.output[-6000:]
    line = host_lines(back.output, "sim-h1")[-1]
    assert "ok, base server" in line and "relaunched" in line, line
    assert "--speculative-config" not in state.read_text()


def test_survivors_of_a_killed_api_server_through_teardown_and_reset(request, tmp_path):
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
            line = host_lines(down.output, "sim-h1")[-1]
            assert "(was running: False)" in line and "VLLM::EngineCore" in line, line
        else:
            (host,) = json.loads((tmp_path / "reset.json").read_text())["hosts"]
            assert host["outcome"] == "clean", host
            assert any(c.startswith("VLLM::EngineCore") for c in host["killed_commands"]), host
