"""A new engine needs its registry file and nothing else: a copy of the collection gets
toyserve (the test-only engine of tests/support/engines) as plugins/module_utils/_engines/
toyserve.py plus its line in registry.ENGINES, and the unchanged playbooks launch, benchmark
and tear it down on a simulated host with `-e engine=toyserve`.

The copy is compared with the checkout file by file first, so the test also counts what the
new engine cost: one new file and the registry's import and tuple lines.
"""
import difflib
import filecmp
import json
import os
import re
import shutil
import urllib.request

from _fleet_fixtures import REPO, needs_fleet, start_fleet

from tests.support import paths

pytestmark = needs_fleet

ENGINE_FILE = REPO / "tests" / "support" / "engines" / "toyserve_engine.py"
TOYSERVE_PYTHON = REPO / "tests" / "support" / "engines" / "bin" / "toyserve-python"
COPIED = ("galaxy.yml", "meta", "plugins", "playbooks", "roles")
REGISTRY = "plugins/module_utils/_engines/registry.py"
IMPORT_LINE = ("from ansible_collections.gpufleet.serving.plugins.module_utils._engines "
               "import vllm as _vllm\n")


def collection_with_toyserve(root):
    """ROOT/ansible_collections/gpufleet/serving: the checkout's collection files, plus toyserve."""
    dest = root / "ansible_collections" / "gpufleet" / "serving"
    dest.mkdir(parents=True)
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, dest / name)
    shutil.copy2(ENGINE_FILE, dest / "plugins/module_utils/_engines/toyserve.py")
    registry = dest / REGISTRY
    text = registry.read_text()
    assert IMPORT_LINE in text and "ENGINES = (_sglang.ENGINE, _vllm.ENGINE)\n" in text
    text = text.replace(IMPORT_LINE, IMPORT_LINE + IMPORT_LINE.replace("vllm", "toyserve"))
    registry.write_text(text.replace("_vllm.ENGINE)", "_vllm.ENGINE, _toyserve.ENGINE)"))
    return dest


def differences(left, right, copied=COPIED):
    """Files only in RIGHT, and files that differ, under the two trees' COPIED paths (relative paths)."""
    added, changed = [], []

    def walk(cmp, rel):
        added.extend(os.path.join(rel, n) for n in cmp.right_only)
        changed.extend(os.path.join(rel, n) for n in cmp.diff_files)
        for name, sub in cmp.subdirs.items():
            walk(sub, os.path.join(rel, name))
    for name in copied:
        if (left / name).is_dir():
            walk(filecmp.dircmp(left / name, right / name, ignore=["__pycache__"]), name)
        elif not filecmp.cmp(left / name, right / name, shallow=False):
            changed.append(name)
    return sorted(added), sorted(changed)


def metric(url, name):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return sum(float(v) for v in re.findall(r"^%s_total\{[^}]*\} (\S+)$" % re.escape(name), text, re.M))


def holders(fleet):
    return [h["cmdline"] for g in fleet.module(fleet.name(1), "gpufleet.serving.gpu_info")["gpus"]
            for h in g["holders"]]


def test_a_new_engine_runs_through_the_playbooks_with_its_registry_file_only(request, tmp_path):
    collection = collection_with_toyserve(tmp_path / "collections")
    added, changed = differences(REPO, collection)
    assert added == ["plugins/module_utils/_engines/toyserve.py"], added
    assert changed == [REGISTRY], changed
    diff = [line for line in difflib.unified_diff((REPO / REGISTRY).read_text().splitlines(),
                                                  (collection / REGISTRY).read_text().splitlines(), n=0)
            if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert len([line for line in diff if line.startswith("+")]) == 2, diff

    fleet = start_fleet(request, tmp_path, 1, 2494)
    url = "http://%s:%d" % (fleet.address(1), fleet.server_port)
    toy = {"engine": "toyserve", "toyserve_server_python": str(TOYSERVE_PYTHON),
           "toyserve_server_host": fleet.address(1), "toyserve_server_port": fleet.server_port,
           "toyserve_server_model_path": os.path.join(paths.SIM_MODELS, "kimi-k2.5-int4")}
    run = {"playbooks": collection / "playbooks",
           "env": {"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections")}}

    # Check mode composes the command line and starts nothing.
    check = fleet.playbook("launch.yml", toy, args=("--check",), **run)
    assert check.returncode == 0, check.output[-6000:]
    assert holders(fleet) == []

    launch = fleet.playbook("launch.yml", toy, **run)
    assert launch.returncode == 0, launch.output[-6000:]
    assert re.search(r"sim-h1: %s relaunched, ready after [\d.]+ s" % re.escape(url), launch.output), launch.output[-3000:]
    workers = sorted(t.strip() for t in holders(fleet))
    assert workers == ["toyserve::worker_TP%d" % r for r in range(8)], workers

    before = metric(url, "toyserve:generation_tokens")
    bench = fleet.playbook("benchmark.yml", dict(toy, benchmark={"levels": [1], "requests_per_level": 3,
                                                                 "output_len": 24, "warmup_requests": 0},
                                                 bench_report_dir=str(tmp_path / "bench")), **run)
    assert bench.returncode == 0, bench.output[-6000:]
    assert "sim-h1: ok, %s: single-stream" % url in bench.output, bench.output[-3000:]
    measured = json.loads((tmp_path / "bench" / "benchmark.json").read_text())["hosts"]["sim-h1"]["baseline"]
    # The server's own counter, read by the benchmark through the registry's metric name and by
    # this test around the run: every requested token (toyserve draws no EOS by default) counted.
    [level] = measured["levels"]
    assert level["completed"] == 3 and level["server_tok_s"] > 0 and abs(level["server_ratio"] - 1) < 0.005, level
    assert metric(url, "toyserve:generation_tokens") - before == 3 * 24
    assert measured["accept_length"] is None, measured

    down = fleet.playbook("teardown.yml", toy, **run)
    assert down.returncode == 0, down.output[-6000:]
    assert re.search(r"sim-h1: stopped toyserve-%d \(was running: True\); GPUs verified free after [\d.]+ s"
                     % fleet.server_port, down.output), down.output[-3000:]
    assert holders(fleet) == []
    # The same playbook in the checkout itself does not know the engine, and says which it knows.
    unknown = fleet.playbook("teardown.yml", toy)
    assert unknown.returncode != 0 and "engine must be one of sglang, vllm, not 'toyserve'" in unknown.output, \
        unknown.output[-3000:]
