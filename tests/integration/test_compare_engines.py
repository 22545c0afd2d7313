"""playbooks/compare_engines.yml end to end: real ansible-playbook, real SSH, a simulated fleet
whose hosts run the simulated SGLang and vLLM servers on their fake GPUs, one after another.

Check mode prints each host's plan and touches nothing. The report has a row per host and variant with positive tok/s; the EAGLE-3 variants' acceptance
comes from the servers' counters; the teardown after every variant verified every GPU free
(the records say so), and nothing runs at the end. A variant that fails is recorded and torn
down while the next one runs; a GPU left in use stops the host's comparison with a clear message.
Benchmarks are short (levels 1 and 4, 32-token outputs).
"""
import json

from _fleet_fixtures import needs_fleet, planned_commands, start_fleet

pytestmark = needs_fleet

SHORT_BENCH = {"compare_bench_levels": [1, 4], "compare_bench_requests_per_level": 4,
               "compare_bench_warmup_requests": 1, "compare_bench_input_len": 64,
               "compare_bench_output_len": 32}
VARIANTS = ["sglang", "vllm", "sglang+eagle3", "vllm+eagle3"]
LEFT = "pgrep -af 'sglang[:.]|VLLM::|vllm serve' | grep -v pgrep || true"


def _run(fleet, tmp_path, args=(), inventories=(), **extra):
    report_dir = tmp_path / "report"
    extra_vars = dict(SHORT_BENCH, compare_report_dir=str(report_dir),
                      compare_bench_progress_file=str(fleet.dir / "bench.progress"),
                      vllm_server_port=fleet.server_port, vllm_server_progress_interval=2,
                      vllm_server_ready_timeout=120)
    extra_vars.update(extra)
    run = fleet.playbook("compare_engines.yml", extra_vars, inventories=inventories, timeout=600, args=args)
    report = None
    if (report_dir / "compare.json").is_file():
        report = json.loads((report_dir / "compare.json").read_text())
    return run, report_dir, report


def _nothing_left(fleet, index):
    assert fleet.ssh(index, LEFT).stdout.strip() == ""
    gpus = fleet.module(fleet.name(index), "gpufleet.serving.gpu_info")["gpus"]
    assert len(gpus) == 8 and all(g["used_mib"] == 0 and not g["holders"] for g in gpus), gpus


def test_compare_engines_with_eagle(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2481)
    # Check mode: each host's plan (the EAGLE-3 variants through eagle_drafter, with the host's
    # drafter), and nothing launched or written.
    run, report_dir, report = _run(fleet, tmp_path, ["--check"], compare_eagle=True)
    assert run.returncode == 0, run.output[-6000:]
    base, eagle = planned_commands(run.output, "sim-h2", "compare_engines", [
        "1. sglang [run] sglang on all GPUs", "2. vllm [run] vllm on all GPUs",
        "3. sglang+eagle3 [run] sglang on all GPUs", "4. vllm+eagle3 [run] vllm on all GPUs"])[::2]
    assert "--speculative-algorithm EAGLE3" in eagle and "--speculative-draft-model-path" in eagle, eagle
    assert "--speculative-algorithm" not in base
    assert report is None and not (report_dir / "records").exists()
    for index in (1, 2):
        _nothing_left(fleet, index)

    run, report_dir, report = _run(fleet, tmp_path, compare_eagle=True)
    assert run.returncode == 0, run.output[-6000:]
    for name in ("compare.json", "compare.md", "compare.png", "compare.html"):
        assert (report_dir / name).is_file(), name
    assert report["variants"] == VARIANTS and report["reference"] == "sglang"
    markdown = (report_dir / "compare.md").read_text()
    for host in ("sim-h1", "sim-h2"):
        rows = report["hosts"][host]
        assert sorted(rows) == sorted(VARIANTS)
        for name in VARIANTS:
            rec = rows[name]
            assert "| %s | %s | ok |" % (host, name) in markdown
            assert rec["outcome"] == "ok", rec
            fig = rec["figures"]
            assert fig["single_stream_tok_s"] > 0 and fig["peak_tok_s"] > 0, (host, name, fig)
            assert fig["ttft_p50_at_1_ms"] > 0 and fig["tpot_p50_at_1_ms"] > 0, fig
            assert fig["failed_requests"] == 0
            # Every GPU verified free (NVML) by the release after the variant's teardown.
            td = rec["teardown"]
            assert td["verified"] is True and td["gpus_selected"] == td["gpus_free"] == 8, td
            assert td["gpus_used"] == [], td
            # Each variant was a fresh launch of its engine.
            assert rec["server"]["relaunched"] is True, rec["server"]
            assert rec["server"]["speculative"] is name.endswith("+eagle3"), rec["server"]
        assert "vllm_version" in rows["vllm"]["server"] and "sglang_version" in rows["sglang"]["server"]
        # Acceptance from the servers' counters: none for the base engines.
        for name in ("sglang+eagle3", "vllm+eagle3"):
            assert rows[name]["figures"]["accept_length"] > 1, rows[name]["figures"]
            assert rows[name]["accept_sources"] == ["metrics"], rows[name]["accept_sources"]
        for name in ("sglang", "vllm"):
            assert rows[name]["figures"]["accept_length"] is None
        # The ratios against base SGLang on the same host.
        ref = rows["sglang"]["figures"]
        assert rows["sglang"]["ratio"]["single_stream"] == 1.0
        vllm = rows["vllm"]
        assert vllm["ratio"]["single_stream"] == round(vllm["figures"]["single_stream_tok_s"]
                                                       / ref["single_stream_tok_s"], 3)
        assert vllm["ratio"]["peak"] == round(vllm["figures"]["peak_tok_s"] / ref["peak_tok_s"], 3)
    assert report["failures"] == []
    assert report["fleet"]["vllm"]["hosts"] == ["sim-h1", "sim-h2"]
    assert "Show the comparison" in run.output and "sim-h2 vllm+eagle3: ok" in run.output
    for index in (1, 2):
        _nothing_left(fleet, index)


def test_a_failed_variant_is_recorded_and_the_next_one_runs(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2482)
    # sim-h2's vLLM exits at once: its command line has a flag vLLM does not know.
    extra_inv = tmp_path / "bad-vllm.yml"
    extra_inv.write_text("all:\n  hosts:\n    sim-h2:\n      vllm_server_extra_args: ['--no-such-flag']\n")
    run, unused, report = _run(fleet, tmp_path, inventories=[extra_inv],
                               compare_variants=["vllm", "sglang"], compare_reference="vllm")
    assert run.returncode != 0, run.output[-6000:]
    assert "compare_engines did not complete: sim-h2 vllm: FAILED at stage launch" in run.output, run.output[-4000:]
    h1, h2 = report["hosts"]["sim-h1"], report["hosts"]["sim-h2"]
    assert h1["vllm"]["outcome"] == h1["sglang"]["outcome"] == "ok"
    assert h2["vllm"]["outcome"] == "failed" and h2["vllm"]["stage"] == "launch"
    assert "no-such-flag" in h2["vllm"]["reason"] or "exited" in h2["vllm"]["reason"], h2["vllm"]["reason"]
    # Torn down and verified anyway, and the next variant ran.
    assert h2["vllm"]["teardown"]["gpus_free"] == 8, h2["vllm"]["teardown"]
    assert h2["sglang"]["outcome"] == "ok" and h2["sglang"]["figures"]["single_stream_tok_s"] > 0
    assert h2["sglang"]["ratio"]["single_stream"] is None  # no vLLM figure on sim-h2
    assert report["fleet"]["sglang"]["ratio"]["peak"] is None  # vLLM measured on sim-h1 only
    for index in (1, 2):
        _nothing_left(fleet, index)


def test_a_gpu_left_in_use_stops_the_host(request, tmp_path):
    fleet = start_fleet(request, tmp_path, 2, 2483)
    # A protected daemon holds memory on sim-h2's GPU 3: no release may kill it, so no
    # teardown there can verify every GPU free.
    fleet.hold_gpu(2, 3, 2048, "nvidia-persistenced", daemon=True)
    quick = {"compare_release_timeout": 3, "sglang_server_release_timeout": 3, "vllm_server_release_timeout": 3}
    # Without the check before the first variant: sim-h2's first variant fails, and the check
    # after its teardown stops the host there.
    run, unused, report = _run(fleet, tmp_path, compare_clean_start=False, **quick)
    assert run.returncode != 0, run.output[-6000:]
    h1, h2 = report["hosts"]["sim-h1"], report["hosts"]["sim-h2"]
    assert h1["sglang"]["outcome"] == h1["vllm"]["outcome"] == "ok"
    assert h2.get("sglang", {}).get("outcome") == "failed", run.output[-6000:]
    assert h2["sglang"]["teardown"]["verified"] is False and h2["sglang"]["teardown"]["gpus_used"] == [3]
    assert h2["vllm"]["outcome"] == "skipped", h2["vllm"]
    assert "GPUs not verified free after sglang, so the next variants were not launched" in h2["vllm"]["reason"]
    assert "sim-h2 vllm: SKIPPED at stage skipped: GPUs not verified free after sglang" in run.output
    _nothing_left(fleet, 1)

    # With it (the default), nothing is launched on sim-h2 at all.
    run, unused, report = _run(fleet, tmp_path, target="sim-h2", **quick)
    assert run.returncode != 0, run.output[-6000:]
    h2 = report["hosts"]["sim-h2"]
    assert [h2[v]["outcome"] for v in ("sglang", "vllm")] == ["skipped", "skipped"], h2
    assert "GPUs not verified free before the first variant, so no variant was launched" in h2["sglang"]["reason"]
    assert "GPU 3" in h2["sglang"]["reason"] and "nvidia-persistenced" in h2["sglang"]["reason"]
    assert "sglang" not in fleet.ssh(2, LEFT).stdout
