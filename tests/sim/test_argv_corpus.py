"""A corpus of SGLang command lines, good and bad, fed to real SGLang's parser and to the
simulator: both must accept or refuse each one alike, with the same exit code.

The corpus holds every command line the roles compose for the example inventory (base,
EAGLE-3, each with and without a key, rendered from the role files by _role_argv), the
same with `--cuda-graph-max-bs-decode` (the 0.5.23 spelling), and hand-written cases for
the ways a launch goes wrong. Each case also states what real 0.5.23 does with it, so a
new pin that changes the outcome fails here. Parsing runs in this process (about 0.3 s to
import the real parser, then milliseconds a line); a handful of cases start the simulator.
"""
import os
import socket
import subprocess

import _role_argv
import pytest
import realsglang
from _server_fixtures import EAGLE, KIMI, SGLANG_CLI, SGLANG_PYTHON

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as _settings
from ansible_collections.gpufleet.serving.plugins.module_utils._server import group as _group
from ansible_collections.gpufleet.serving.plugins.module_utils._server import plan as _plan

OK, ARGPARSE, EXCEPTION = 0, 2, 1  # exit codes: accepted, argparse refusal, a raised error
MODEL = ["--model-path", "/models/moonshotai/Kimi-K2.5-INT4"]
SPEC = ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/models/eagle3",
        "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4"]
NODES = ["--tp-size", "16", "--nnodes", "2", "--dist-init-addr", "10.0.0.1:20000"]

# (id, argv after the entry point, {config file name: text} or None, entry, exit code, message part)
HAND = [
    ("minimal", MODEL, None, "launch_server", OK, ""),
    ("decode-bs", MODEL + ["--cuda-graph-max-bs-decode", "8"], None, "launch_server", OK, ""),
    ("prefill-bs", MODEL + ["--cuda-graph-max-bs-prefill", "8"], None, "launch_server", OK, ""),
    ("old-bs-ambiguous", MODEL + ["--cuda-graph-max-bs", "8"], None, "launch_server", ARGPARSE,
     "ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, "
     "--cuda-graph-max-bs-prefill"),
    ("old-bs-equals", MODEL + ["--cuda-graph-max-bs=8"], None, "launch_server", ARGPARSE,
     "ambiguous option: --cuda-graph-max-bs=8"),
    ("unique-prefix", MODEL + ["--cuda-graph-max-bs-dec", "8"], None, "launch_server", OK, ""),
    ("tp-alias", MODEL + ["--tensor-parallel-size", "2"], None, "launch_server", OK, ""),
    ("tp-short", MODEL + ["--tp", "2"], None, "launch_server", OK, ""),
    ("eagle3", MODEL + SPEC, None, "launch_server", OK, ""),
    ("unknown", MODEL + ["--enable-magic"], None, "launch_server", ARGPARSE,
     "unrecognized arguments: --enable-magic"),
    ("underscore-flag", MODEL + ["--api_key", "k"], None, "launch_server", ARGPARSE,
     "unrecognized arguments: --api_key k"),
    ("bad-int", MODEL + ["--tp-size", "eight"], None, "launch_server", ARGPARSE,
     "argument --tp-size/--tensor-parallel-size: invalid int value: 'eight'"),
    ("bad-choice", MODEL + ["--load-format", "zip"], None, "launch_server", ARGPARSE,
     "argument --load-format: invalid choice: 'zip'"),
    # The algorithm is checked later, in resolution, not by the parser.
    ("spec-unknown-algorithm", MODEL + ["--speculative-algorithm", "MEDUSA"], None, "launch_server", OK, ""),
    ("no-model", ["--tp-size", "2"], None, "launch_server", ARGPARSE,
     "the following arguments are required: --model-path"),
    ("missing-value", MODEL + ["--port"], None, "launch_server", ARGPARSE,
     "argument --port: expected one argument"),
    ("config-dashes", MODEL + ["--config", "{c}"], {"c.yaml": "api-key: k\ntp-size: 2\n"},
     "launch_server", OK, ""),
    ("config-yml", MODEL + ["--config", "{c}"], {"c.yml": "enable-metrics: true\n"},
     "launch_server", OK, ""),
    ("config-underscore-key", MODEL + ["--config", "{c}"], {"c.yaml": "api_key: leaked\n"},
     "launch_server", ARGPARSE, "unrecognized arguments: --api_key leaked"),
    ("config-old-bs", MODEL + ["--config", "{c}"], {"c.yaml": "cuda-graph-max-bs: 8\n"},
     "launch_server", ARGPARSE, "ambiguous option: --cuda-graph-max-bs could match"),
    ("config-json", MODEL + ["--config", "{c}"], {"c.json": '{"api-key": "k"}\n'},
     "launch_server", EXCEPTION, "ValueError: Config file must be YAML format, got: .json"),
    ("config-twice", MODEL + ["--config", "{c}", "--config", "{c}"], {"c.yaml": "tp-size: 2\n"},
     "launch_server", EXCEPTION, "ValueError: Multiple config files specified! Only one allowed."),
    # A server spanning hosts (sglang/srt/arg_groups/fields/parallel.py); the sizes are totals across the nodes.
    ("multinode-rank0", MODEL + NODES + ["--node-rank", "0"], None, "launch_server", OK, ""),
    ("multinode-rank1-timeout", MODEL + NODES + ["--node-rank", "1", "--dist-timeout", "120"], None, "serve", OK, ""),
    ("multinode-alias-ipv6", MODEL + ["--tp-size", "16", "--nnodes", "2", "--node-rank", "1", "--nccl-init-addr",
                                      "[fd00::1]:20000"], None, "launch_server", OK, ""),
    # Divisibility is asserted later (validation_hook.py check_server_args), not by the parser:
    # the group planner refuses it before any host is touched (_server/group.py).
    ("multinode-tp-indivisible-parses", MODEL + ["--tp-size", "15", "--nnodes", "2", "--node-rank", "0"], None,
     "launch_server", OK, ""),
    ("multinode-bad-rank", MODEL + ["--nnodes", "2", "--node-rank", "one"], None, "launch_server", ARGPARSE,
     "argument --node-rank: invalid int value: 'one'"),
    ("serve-positional", ["/models/m", "--tp-size", "2"], None, "serve", OK, ""),
    ("serve-model-type", ["--model-type", "llm", "--model-path", "/models/m"], None, "serve", OK, ""),
    ("serve-unknown", ["/models/m", "--tp-sizes", "2"], None, "serve", ARGPARSE,
     "unrecognized arguments: --tp-sizes 2"),
]


def _roles():
    """Every launch the roles compose for the example inventory, as composed today and with
    the flag spelled as 0.5.23 spells it; their --config file is the role's own."""
    cases = []
    for eagle in (False, True):
        for key in ("", "sekrit"):
            argv, secret = _role_argv.render(eagle=eagle, api_key=key)
            entry, flags = _role_argv.split_entry(argv)
            files = None
            if secret is not None:
                at = flags.index("--config") + 1
                flags = flags[:at] + ["{c}"] + flags[at + 1:]
                files = {"c.yaml": secret}
            name = "role-%s%s" % ("eagle" if eagle else "base", "-key" if key else "")
            old = "--cuda-graph-max-bs" in flags
            cases.append((name, flags, files, entry, ARGPARSE if old else OK,
                          "ambiguous option" if old else ""))
            if old:  # the same launch with the 0.5.23 spelling
                fixed = ["--cuda-graph-max-bs-decode" if f == "--cuda-graph-max-bs" else f for f in flags]
                cases.append((name + "-decode", fixed, files, entry, OK, ""))
    return cases


CORPUS = HAND + _roles()


def _materialize(argv, files, tmp_path):
    if not files:
        return list(argv)
    (name, text), = files.items()
    path = tmp_path / name
    path.write_text(text)
    return [str(path) if a == "{c}" else a for a in argv]


def _sim_parse(argv, entry):
    """The simulator's parse, in this process: (exit code, args or None)."""
    from sglang._sim import args as simargs  # the stand-in package, set up by realsglang
    try:
        return 0, simargs.parse(argv, entry)
    except SystemExit as exc:
        return exc.code, None


@pytest.mark.parametrize("name, argv, files, entry, code, message", CORPUS, ids=[c[0] for c in CORPUS])
def test_real_parser_and_simulator_agree(name, argv, files, entry, code, message, tmp_path, capsys):
    argv = _materialize(argv, files, tmp_path)
    real = realsglang.parse(argv, entry)
    assert (real.code, message in real.message) == (code, True), (name, real.message[-600:])
    sim_code, sim_args = _sim_parse(argv, entry)
    capsys.readouterr()  # the simulator writes SGLang's message to stderr, as real
    assert sim_code == real.code, (name, sim_code, real.code)
    if real.code == 0:  # the simulator runs on what real SGLang parsed
        assert sim_args.tp_size == real.args.tp_size and sim_args.api_key == real.args.api_key
        assert sim_args.cuda_graph_max_bs == real.args.cuda_graph_max_bs_decode


def test_role_examples_parse_with_real_sglang(tmp_path):
    """Every launch the roles compose for the example inventory
    is one real SGLang accepts; a flag real SGLang does not know fails here."""
    refused = []
    for eagle in (False, True):
        for key in ("", "sekrit"):
            argv, secret = _role_argv.render(eagle=eagle, api_key=key)
            entry, flags = _role_argv.split_entry(argv)
            if secret is not None:
                (tmp_path / "secret.yaml").write_text(secret)
                flags = [str(tmp_path / "secret.yaml") if f.endswith(".secret.yaml") else f for f in flags]
            result = realsglang.parse(flags, entry)
            if result.code:
                refused.append((eagle, bool(key), result.message.strip().splitlines()[-1]))
            else:
                assert result.args.api_key == (key or None)
    assert not refused, refused


# server_plan's speculative settings (the eagle_drafter role's defaults), composed in Python.
SETTINGS = {"algorithm": "EAGLE3", "draft_model_path": "/models/eagle3", "num_steps": 3, "eagle_topk": 1,
            "num_draft_tokens": 4}


def test_speculative_settings_compose_what_real_sglang_parses_to_them():
    composed = _plan.compose({"state": "started", "model_path": MODEL[1], "tp_size": 8, "host": "127.0.0.1",
                              "port": 30000, "python": SGLANG_PYTHON, "entry_point": SGLANG_CLI,
                              "instance": "sglang-30000", "log_dir": "/var/log/sglang", "state_dir": "/tmp",
                              "supervisor": "process", "speculative": SETTINGS})
    assert composed["speculative_argv"] == SPEC
    entry, flags = _role_argv.split_entry(composed["argv"])
    real = realsglang.parse(flags, entry)
    assert real.code == 0, real.message[-600:]
    assert (real.args.speculative_algorithm, real.args.speculative_draft_model_path, real.args.speculative_num_steps,
            real.args.speculative_eagle_topk, real.args.speculative_num_draft_tokens) == tuple(SETTINGS.values())


@pytest.mark.parametrize("members, tp, address", [
    (["gpu-a", "gpu-b"], 16, "10.0.0.1"), (["gpu-a", "gpu-b", "gpu-c", "gpu-d"], 32, "fd00::1"),
], ids=["tp16-2-nodes", "tp32-4-nodes-ipv6"])
def test_every_node_of_a_planned_group_parses_with_real_sglang(members, tp, address):
    """The group planner's command line of each node is one real SGLang accepts, with the rank,
    the node count and rank 0's address where real SGLang reads them."""
    servers = {h: dict(_settings.resolve("sglang", {"model_path": MODEL[1], "tp_size": tp, "nodes": members,
                                                    "dist_timeout": 300}), engine="sglang") for h in members}
    planned = _group.plan_groups("sglang", servers, members, {members[0]: address})
    for rank, host in enumerate(members):
        p = dict(servers[host], **_group.node_settings(planned[host]))
        p.update(python=SGLANG_PYTHON, entry_point=SGLANG_CLI, supervisor="process")
        entry, flags = _role_argv.split_entry(_plan.compose(p)["argv"])
        real = realsglang.parse(flags, entry)
        assert real.code == 0, (host, real.message[-600:])
        assert (real.args.tp_size, real.args.nnodes, real.args.node_rank, real.args.dist_timeout) == (
            tp, len(members), rank, 300), host
        assert real.args.dist_init_addr == ("[%s]:20000" % address if ":" in address else "%s:20000" % address)


# A handful run as processes: the exit code and SGLang's last line, as a host would see them.
PROCESS = [("old-bs-ambiguous", "launch_server"), ("config-underscore-key", "serve"),
           ("config-json", "launch_server"), ("unknown", "serve")]


@pytest.mark.parametrize("name, entry", PROCESS, ids=["%s-%s" % p for p in PROCESS])
def test_simulator_process_refuses_as_real(name, entry, tmp_path):
    case = next(c for c in CORPUS if c[0] == name)
    argv = _materialize(case[1], case[2], tmp_path)
    argv = ["--model-path", KIMI] + argv[2:] if argv[:1] == ["--model-path"] else argv
    real = realsglang.parse(argv, entry)
    head = [SGLANG_CLI, "serve"] if entry == "serve" else [SGLANG_PYTHON, "-m", "sglang.launch_server"]
    env = dict(os.environ, SGLANG_SIM_PROFILE="fast")
    proc = subprocess.run(head + argv, capture_output=True, text=True, timeout=60, env=env, check=False)
    assert proc.returncode == real.code != 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stderr.strip().splitlines()[-1] == real.message.strip().splitlines()[-1]
    assert "Init parallel begin." not in proc.stderr


def test_simulator_process_starts_on_a_role_launch(tmp_path):
    """The EAGLE-3 launch with a key, as the roles compose it with the 0.5.23 flag, starts the
    simulator through `sglang serve` and through launch_server alike (up to the first phase)."""
    argv, secret = _role_argv.render(eagle=True, api_key="sekrit")
    unused, flags = _role_argv.split_entry(argv)
    (tmp_path / "secret.yaml").write_text(secret)
    swap = {"/models/moonshotai/Kimi-K2.5-INT4": KIMI, "/models/AQ-MedAI/Kimi-K2-Instruct-eagle3": EAGLE,
            "--cuda-graph-max-bs": "--cuda-graph-max-bs-decode", "8": "8"}
    flags = [str(tmp_path / "secret.yaml") if f.endswith(".secret.yaml") else swap.get(f, f) for f in flags]
    env = dict(os.environ, SGLANG_SIM_PROFILE="fast")
    env.pop("FAKE_NVML_ROOT", None)
    with socket.socket() as holder:  # a taken port: the launch stops at uvicorn's bind, after every phase
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        flags[flags.index("--port") + 1] = str(holder.getsockname()[1])
        runs = [(head, subprocess.run(head + flags + ["--tp-size", "2"], capture_output=True, text=True,
                                      timeout=60, env=env, check=False))
                for head in ([SGLANG_CLI, "serve"], [SGLANG_PYTHON, "-m", "sglang.launch_server"])]
    for head, proc in runs:
        log = proc.stderr
        assert "Init parallel begin." in log and "Capture target verify CUDA graph end." in log, log[-3000:]
        assert "'api_key': 'sekrit'" in log  # real SGLang logs the key in its server_args line
        assert ("'sglang serve' is the recommended entrypoint" in log) == (head[0] == SGLANG_PYTHON)
        assert proc.returncode == 1 and "error while attempting to bind on address" in log, log[-2000:]
