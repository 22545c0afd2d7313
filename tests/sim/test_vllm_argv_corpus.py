"""Every `vllm serve` command line server_plan composes (engine=vllm) parses with the
simulator's copy of vLLM 0.33.0's flag set (sim/pypath/vllm/_sim/args.py, derived from
the wheel by flags_gen.py) to the values the role asked for; the API key reaches the server
only through the --config YAML the role writes (mode 0600), never the command line."""
import json
import subprocess

import yaml
from test_vllm_sim import EAGLE, KIMI, VLLM_CLI, VLLM_PYTHON

from ansible_collections.gpufleet.serving.plugins.module_utils._server import plan as pl

# One interpreter parses every case: argv lists on stdin, one JSON result (or the exit code) each.
PARSE_ALL = """\
import json, sys
from vllm._sim import args
out = []
for argv in json.load(sys.stdin):
    try:
        ns = args.parse(argv)
    except SystemExit as exc:
        out.append({"exit": exc.code})
        continue
    out.append({k: getattr(ns, k) for k in ("model", "tp", "port", "api_keys", "served_names", "gpu_util",
                                            "max_num_seqs", "spec", "host")})
print(json.dumps(out))
"""

BASE = {"state": "started", "model_path": KIMI, "served_model_name": "", "tp_size": 8, "host": "127.0.0.1",
        "port": 8000, "api_key": "", "extra_args": [], "env": {}, "gpus": [], "python": VLLM_PYTHON,
        "entry_point": VLLM_CLI, "instance": "vllm-8000", "log_dir": "/var/log/vllm", "supervisor": "process",
        "engine": "vllm"}
SPEC = {"method": "eagle3", "model": EAGLE, "num_speculative_tokens": 3}
CASES = [
    ("base", {}),
    ("key", {"api_key": "sekrit"}),
    ("everything", {"served_model_name": "kimi", "gpu_memory_utilization": 0.85, "max_num_seqs": 64,
                    "tp_size": 2, "port": 8100, "host": "::1"}),
    ("eagle3", {"speculative_config": SPEC}),
    ("eagle3-key-extra", {"speculative_config": SPEC, "api_key": "sekrit-2", "extra_args": ["--enforce-eager"]}),
    # server_plan's speculative settings (the eagle_drafter role's defaults) compose SPEC.
    ("eagle3-settings", {"speculative": {"algorithm": "EAGLE3", "draft_model_path": EAGLE, "num_steps": 3,
                                         "eagle_topk": 1, "num_draft_tokens": 4}}),
]


def _compose(state_dir, more):
    state_dir.mkdir()
    composed = pl.compose(dict(BASE, state_dir=str(state_dir), **more))
    if more.get("api_key"):  # what roles/_server/tasks/launch_files.yml writes: {'api-key': KEY} | to_nice_yaml
        with open(composed["paths"]["secret_config"], "w", encoding="utf-8") as f:
            yaml.safe_dump({"api-key": more["api_key"]}, f)
    return composed


def test_every_composed_vllm_argv_parses_to_what_was_asked(tmp_path):
    composed = [_compose(tmp_path / name, more) for name, more in CASES]
    for one, (name, more) in zip(composed, CASES):
        assert one["argv"][:2] == [VLLM_CLI, "serve"], name
        assert not more.get("api_key") or more["api_key"] not in " ".join(one["launch_argv"]), name
    cp = subprocess.run([VLLM_PYTHON, "-c", PARSE_ALL], input=json.dumps([c["argv"][2:] for c in composed]),
                        capture_output=True, text=True, timeout=60, check=True)
    results = json.loads(cp.stdout)
    for got, (name, more) in zip(results, CASES):
        want = dict(BASE, **more)
        assert "exit" not in got, (name, got, cp.stderr)
        assert (got["model"], got["tp"], got["port"], got["host"]) == (
            KIMI, want["tp_size"], want["port"], want["host"]), name
        assert got["api_keys"] == ([want["api_key"]] if want["api_key"] else []), name
        assert got["served_names"] == [want["served_model_name"] or KIMI], name
        assert got["gpu_util"] == (want.get("gpu_memory_utilization") or 0.9), name
        assert got["max_num_seqs"] == (want.get("max_num_seqs") or 256), name
        assert got["spec"] == (SPEC if "speculative" in more else want.get("speculative_config") or None), name


def test_a_bad_extra_arg_is_refused_like_vllm(tmp_path):
    argv = _compose(tmp_path / "bad", {"extra_args": ["--tp-size", "2"]})["argv"]
    cp = subprocess.run([VLLM_PYTHON, "-c", PARSE_ALL], input=json.dumps([argv[2:]]),
                        capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(cp.stdout) == [{"exit": 2}]
    assert "unrecognized arguments: --tp-size 2" in cp.stderr


PARSE_NODES = """\
import json, sys
from vllm._sim import args
out = []
for argv in json.load(sys.stdin):
    ns = args.parse(argv)
    out.append({k: getattr(ns, k) for k in ("tp", "nnodes", "node_rank", "master_addr", "master_port", "headless",
                                            "distributed_timeout_seconds")})
print(json.dumps(out))
"""


def test_every_node_of_a_planned_vllm_group_parses(tmp_path):
    """Each node's `vllm serve` line of a 2-node group parses with vLLM 0.33.0's flag set to its rank,
    rank 0's address and --headless on the other node only."""
    from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings
    from ansible_collections.gpufleet.serving.plugins.module_utils._server import group
    members = ["gpu-a", "gpu-b"]
    servers = {h: dict(settings.resolve("vllm", {"model_path": KIMI, "tp_size": 16, "nodes": members,
                                                 "dist_timeout": 300}), engine="vllm") for h in members}
    planned = group.plan_groups("vllm", servers, members, {"gpu-a": "10.0.0.1"})
    argvs = [pl.compose(dict(servers[h], python=VLLM_PYTHON, entry_point=VLLM_CLI, supervisor="process",
                             state_dir=str(tmp_path), **group.node_settings(planned[h])))["argv"][2:] for h in members]
    cp = subprocess.run([VLLM_PYTHON, "-c", PARSE_NODES], input=json.dumps(argvs), capture_output=True, text=True,
                        timeout=60, check=True)
    got = json.loads(cp.stdout)
    for rank, one in enumerate(got):
        assert one == {"tp": 16, "nnodes": "2", "node_rank": str(rank), "master_addr": "10.0.0.1",
                       "master_port": "29501", "headless": True if rank else None,
                       "distributed_timeout_seconds": "300"}, one
