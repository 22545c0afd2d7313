"""The vLLM 0.33.0 simulator (tests/sim/pypath/vllm): flag set, parse errors, process shape,
log lines, HTTP routes, metrics and the survivor trap, against the collection's modules."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

SIM = pathlib.Path(__file__).resolve().parent
VLLM_CLI = str(SIM / "bin" / "vllm")
VLLM_PYTHON = str(SIM / "bin" / "sglang-python")  # the project python with tests/sim/pypath
FLAGS_DIR = SIM / "pypath" / "vllm" / "_sim"
KIMI = str(SIM / "models" / "kimi-k2.5-int4")
EAGLE = str(SIM / "models" / "aq-medai-kimi-k2-eagle3")

sys.path.insert(0, str(FLAGS_DIR))
import flags_gen  # noqa: E402  pylint: disable=wrong-import-position


def _real_vllm():
    root = os.environ.get("GPUFLEET_REAL_VLLM")
    if not root or not (pathlib.Path(root) / flags_gen.ARG_UTILS).is_file():
        pytest.skip("GPUFLEET_REAL_VLLM does not point at unpacked vLLM 0.33.0 sources (a dir holding vllm/)")
    return root


def test_flag_copy_matches_the_wheel():
    """flags.json is what flags_gen.py derives from the pinned wheel (regenerate it if not)."""
    derived, aliases = flags_gen.derive(_real_vllm())
    with open(FLAGS_DIR / "flags.json", encoding="utf-8") as f:
        stored = json.load(f)
    assert stored["flags"] == derived
    assert stored["aliases"] == aliases


def test_flag_copy_has_what_the_roles_use():
    with open(FLAGS_DIR / "flags.json", encoding="utf-8") as f:
        stored = json.load(f)
    flags = stored["flags"]
    for flag in ("--tensor-parallel-size", "--host", "--port", "--api-key", "--served-model-name",
                 "--gpu-memory-utilization", "--max-num-seqs", "--speculative-config", "--config"):
        assert flag in flags, flag
    assert stored["aliases"]["-tp"] == "--tensor-parallel-size"
    assert flags["--enforce-eager"] == "bool" and "--no-enforce-eager" in flags


def _serve(*argv, env=None, timeout=30):
    return subprocess.run([VLLM_CLI, "serve"] + list(argv), capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **(env or {})), check=False)


@pytest.mark.parametrize("argv, needle", [
    (["--bogus-flag", "1"], "unrecognized arguments: --bogus-flag 1"),
    (["--tensor-parallel-size", "two"], "argument --tensor-parallel-size/-tp: invalid int value: 'two'"),
    (["--tp-size", "8"], "unrecognized arguments: --tp-size 8"),  # SGLang's spelling
    (["--speculative-config", "{not json"], "argument --speculative-config/-sc:"),
])
def test_parse_errors_exit_2_with_argparse_message(argv, needle):
    cp = _serve(KIMI, *argv)
    assert cp.returncode == 2, cp.stderr
    assert "usage: vllm serve [model_tag] [options]" in cp.stderr
    assert needle in cp.stderr


def test_config_file_must_be_yaml(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text("{}")
    cp = _serve(KIMI, "--config", str(bad))
    assert cp.returncode == 1
    assert "Config file must be of a yaml/yml type. json supplied" in cp.stderr


def test_config_yaml_flag_unknown_exits_2(tmp_path):
    conf = tmp_path / "c.yaml"
    conf.write_text("tp-size: 2\n")
    cp = _serve(KIMI, "--config", str(conf))
    assert cp.returncode == 2 and "unrecognized arguments: --tp-size 2" in cp.stderr


def test_module_entry_point_parses_too():
    cp = subprocess.run([VLLM_PYTHON, "-m", "vllm.entrypoints.cli.main", "serve", KIMI, "--nope"],
                        capture_output=True, text=True, timeout=30, check=False)
    assert cp.returncode == 2 and "unrecognized arguments: --nope" in cp.stderr
