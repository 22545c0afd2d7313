"""The kit as roles/sim_fleet uses it: `simctl kit check|build`, GPU models, faults, SGLang knobs.

Fast and without a fleet (test_fleet.py and tests/integration/test_sim_fleet_installed.py
bring fleets up). The role's argument spec and the kit must name the same choices.
"""
import importlib.util
import json
import os
import subprocess
import time

import pytest
import yaml
from simlib import fakegpu, fleet_cli, fleet_ops, kit_cli, kit_prune, layout

from tests.support import paths

SPEC = os.path.join(paths.REPO, "roles", "sim_fleet", "meta", "argument_specs.yml")


def role_options():
    with open(SPEC, encoding="utf-8") as handle:
        return yaml.safe_load(handle)["argument_specs"]["main"]["options"]


def test_the_role_offers_the_kits_gpu_models_with_their_names_and_memory():
    option = role_options()["sim_fleet_gpu_model"]
    assert set(option["choices"]) == set(fakegpu.GPU_MODELS)
    assert option["default"] == "rtx_pro_6000"
    assert fakegpu.GPU_MODELS["rtx_pro_6000"] == {"name": fakegpu.DEFAULT_NAME, "memory_mib": 97887}
    for model in fakegpu.GPU_MODELS.values():
        assert model["name"] in option["description"]
        assert "{:,}".format(model["memory_mib"]) in option["description"]


def test_the_roles_sglang_knobs_are_the_simulators():
    # sim/pypath/sglang/_sim/args.py by its path: importing `sglang` here would pin the package.
    spec = importlib.util.spec_from_file_location(
        "sim_args", os.path.join(paths.SIM, "pypath", "sglang", "_sim", "args.py"))
    sim_args = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sim_args)
    knobs = set(role_options()["sim_fleet_sglang"]["options"])
    assert knobs - {"profile"} <= set(sim_args.SIM_VALUES)
    assert "accept_length" in knobs and "profile" in knobs
    assert set(role_options()["sim_fleet_sglang"]["options"]["profile"]["choices"]) == set(sim_args.PROFILES)


def test_the_roles_vllm_knobs_are_the_simulators():
    spec = importlib.util.spec_from_file_location(
        "vllm_sim_args", os.path.join(paths.SIM, "pypath", "vllm", "_sim", "args.py"))
    sim_args = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sim_args)
    knobs = role_options()["sim_fleet_vllm"]["options"]
    # fail_warmup is reached through sim_fleet_faults (warmup_crash, one host), not as a knob.
    assert set(knobs) == set(sim_args.SIM_VALUES) | set(sim_args.SIM_SWITCHES) - {"fail_warmup"}
    for name, (unused, default, unused_help) in sim_args.SIM_VALUES.items():
        if name != "seed":
            assert "(default %g" % default in knobs[name]["description"], name
    assert fleet_cli.sglang_env({"accept_length": 3.0, "survivors": True}, "VLLM_SIM_", "--vllm") == {
        "VLLM_SIM_ACCEPT_LENGTH": "3.0", "VLLM_SIM_SURVIVORS": "1"}


def test_the_roles_fault_kinds_are_the_kits():
    option = role_options()["sim_fleet_faults"]["options"]["kind"]
    assert set(option["choices"]) == set(fleet_ops.FAULT_KINDS)


def test_sglang_knobs_become_session_variables():
    env = fleet_cli.sglang_env({"profile": "fast", "accept_length": 3.2, "seed": 7,
                                "hang_on_term": True, "peak_tps": None})
    assert env == {"SGLANG_SIM_PROFILE": "fast", "SGLANG_SIM_ACCEPT_LENGTH": "3.2",
                   "SGLANG_SIM_SEED": "7", "SGLANG_SIM_HANG_ON_TERM": "1"}
    with pytest.raises(ValueError, match="no knob name"):
        fleet_cli.sglang_env({"accept length": 3})


@pytest.mark.parametrize("fault, message", [
    ({"kind": "meltdown", "host": "sim-h1"}, "kind must be one of warmup_crash, gpu_held"),
    ({"kind": "warmup_crash", "host": "sim-h3"}, "host must be one of sim-h1..sim-h2"),
    ({"kind": "gpu_held", "host": "sim-h1", "gpu": 8, "mib": 10}, "gpu must be 0..7"),
    ({"kind": "gpu_held", "host": "sim-h1", "gpu": 0, "mib": 0}, "mib must be a positive integer"),
    ({"kind": "gpu_held", "host": "sim-h1", "gpu": 0}, "exactly the keys gpu, host, kind, mib"),
    ({"kind": "warmup_crash", "host": "sim-h1", "gpu": 1}, "exactly the keys host, kind"),
])
def test_a_wrong_fault_is_refused_before_anything_starts(tmp_path, fault, message):
    with pytest.raises(ValueError, match=message):
        fleet_ops.up(str(tmp_path / "f"), 2, 8, 2222, {}, faults=[fault])
    assert not (tmp_path / "f").exists()


def test_a_warmup_crash_fault_sets_only_its_hosts_switch():
    faults = fleet_ops.check_faults([{"kind": "warmup_crash", "host": "sim-h2"}], 2, 8)
    hosts = [fleet_ops.Host("/nonexistent", i, 2222) for i in (1, 2)]
    assert [fleet_ops._host_env(h, {"A": "1"}, faults) for h in hosts] == [  # pylint: disable=protected-access
        {"A": "1"}, {"A": "1", "SGLANG_SIM_FAIL_WARMUP": "1", "VLLM_SIM_FAIL_WARMUP": "1"}]


def test_check_names_root_the_apt_get_line_and_the_pip_line(monkeypatch, tmp_path):
    real_which = kit_cli.shutil.which
    monkeypatch.setattr(kit_cli.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(kit_cli.shutil, "which",
                        lambda tool: None if tool in ("gcc", "tini") else real_which(tool))
    bare = tmp_path / "python"  # an interpreter that has none of the modules
    bare.write_text("#!/bin/sh\nexec env PYTHONNOUSERSITE=1 /usr/bin/python3 -S \"$@\"\n")
    bare.chmod(0o755)
    problems = kit_cli.problems(str(bare))
    assert problems[0].startswith("the simulated fleet needs root")
    assert problems[1] == "missing tini, gcc; install them with: apt-get install gcc tini"
    assert "cannot import pynvml" in problems[2]
    assert "%s -m pip install nvidia-ml-py==" % bare in problems[2]
    assert kit_cli.problems("python3") == [
        "the simulated fleet needs root: its hosts are PID and mount namespaces (run ansible-playbook "
        "as root, or with become on localhost)",
        "missing tini, gcc; install them with: apt-get install gcc tini",
        "sim_fleet_python 'python3' is not an absolute path to an executable"]


def test_check_passes_with_the_checkouts_venv():
    if os.geteuid() != 0:
        pytest.skip("needs root")
    out = subprocess.run([paths.PYTHON, paths.SIMCTL, "kit", "check", "--python", paths.PYTHON],
                         capture_output=True, text=True, check=False)
    assert (out.returncode, json.loads(out.stdout)) == (0, {"ok": True, "problems": []})


def test_build_makes_a_self_contained_kit_once(tmp_path):
    real = tmp_path / "sglang-real"
    real.mkdir()
    cache = tmp_path / "cache"
    kit, changed = kit_cli.build(str(cache), paths.PYTHON, str(real))
    assert changed and os.path.dirname(kit) == str(cache / "kits")
    assert kit_cli.build(str(cache), paths.PYTHON, str(real)) == (kit, False)
    assert os.path.isfile(os.path.join(kit, "build", "fakenvml", fakegpu.LIB_NAME))
    assert os.path.realpath(os.path.join(kit, "build", "sglang-real")) == str(real)
    assert layout.read_env(os.path.join(kit, "kit.env")) == {"PYTHON": paths.PYTHON}
    # The kit's wrappers run the interpreter kit.env names, with the kit's own packages.
    out = subprocess.run([os.path.join(kit, "bin", "sglang-python"), "-c",
                          "import sys, sglang; print(sys.executable); print(sglang.__file__)"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [paths.PYTHON, os.path.join(kit, "pypath", "sglang", "__init__.py")]
    # ... and it knows it is a built kit: its own build/ and interpreter.
    probe = "from simlib import layout; print(layout.BUILT, layout.ROOT, layout.python())"
    out = subprocess.run([paths.PYTHON, "-c", probe], cwd=kit, capture_output=True, text=True,
                         check=True, env=dict(os.environ, PYTHONPATH=kit)).stdout.split()
    assert out == ["True", kit, paths.PYTHON]
    # Another interpreter (or another collection version) is another kit.
    other, changed = kit_cli.build(str(cache), "/usr/bin/python3", str(real))
    assert changed and other != kit


def test_build_installs_the_pinned_sglang_with_pip_into_the_kit(tmp_path):
    """Without --sglang-real: `PY -m pip install --no-deps --target KIT/build/sglang-real sglang==PIN`
    (a stand-in interpreter records the call and makes the dist-info pip would)."""
    log = tmp_path / "calls"
    python = tmp_path / "python"
    python.write_text('#!/bin/sh\necho "$*" >> %s\n'
                      'while [ $# -gt 0 ]; do [ "$1" = --target ] && mkdir -p "$2/sglang-0.5.23.dist-info"; '
                      'shift; done\n' % log)
    python.chmod(0o755)
    kit, changed = kit_cli.build(str(tmp_path / "cache"), str(python))
    assert changed
    real = os.path.join(kit, "build", "sglang-real")
    with open(paths.REPO + "/requirements-sglang.txt", encoding="utf-8") as handle:
        pin = next(line.strip() for line in handle if line.startswith("sglang=="))
    # Into the copy being made (KIT.tmpPID), renamed to KIT once complete.
    staged = os.path.join("%s.tmp%d" % (kit, os.getpid()), "build", "sglang-real")
    assert log.read_text().splitlines() == [
        "-m pip install -q --no-deps --disable-pip-version-check --target %s %s" % (staged, pin)]
    assert os.listdir(real) == ["sglang-0.5.23.dist-info"]


def test_a_failed_pip_install_says_what_to_do_and_leaves_no_kit(tmp_path):
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'ERROR: No matching distribution found for sglang' >&2\nexit 1\n")
    python.chmod(0o755)
    with pytest.raises(ValueError) as info:
        kit_cli.build(str(tmp_path / "cache"), str(python))
    assert "sim_fleet_sglang_real_root" in str(info.value) and "No matching distribution" in str(info.value)
    assert os.listdir(tmp_path / "cache" / "kits") == []


def _aged(kit, seconds=2 * kit_prune.GRACE):
    """KIT as if no build had handed it out for SECONDS."""
    then = time.time() - seconds
    os.utime(os.path.join(kit, ".complete"), (then, then))
    return kit


def _ended_pid():
    proc = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    return int(proc.stdout)


@pytest.mark.parametrize("use", ["cwd", "environ", "maps"])
def test_prune_removes_only_old_copies_that_nothing_uses(tmp_path, use):
    real = tmp_path / "sglang-real"
    real.mkdir()
    cache = str(tmp_path / "cache")
    used, unused, recent, current = (kit_cli.build(cache, python, str(real))[0] for python in (
        "/usr/bin/python3", "/bin/python3", "/usr/local/bin/python3", paths.PYTHON))
    for kit in (used, unused):
        _aged(kit)
    kits = os.path.dirname(current)
    # Not ours to judge: a file, another directory, a half-made copy whose builder still runs.
    building = "%s.tmp%d" % (os.path.basename(used), os.getpid())
    (tmp_path / "cache" / "kits" / "notes.txt").write_text("keep")
    for name in ("mine", building):
        os.mkdir(os.path.join(kits, name))
    dead = "%s.tmp%d" % (os.path.basename(unused), _ended_pid())
    os.mkdir(os.path.join(kits, dead))
    lib = os.path.join(used, "build", "fakenvml", fakegpu.LIB_NAME)
    code = {"cwd": "import sys; print('ready', flush=True); sys.stdin.read()",
            "environ": "import sys; print('ready', flush=True); sys.stdin.read()",
            "maps": "import ctypes, sys; ctypes.CDLL(%r); print('ready', flush=True); sys.stdin.read()" % lib}[use]
    user = subprocess.Popen([paths.PYTHON, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=used if use == "cwd" else "/",
                            env=dict(os.environ, GF_TOOL=used + "/bin") if use == "environ" else None)
    try:
        assert user.stdout.readline().strip() == "ready"
        removed, in_use = kit_prune.prune(kits, current)
        assert sorted(removed) == sorted([os.path.basename(unused), dead])
        assert in_use == {os.path.basename(used): [user.pid]}
        kept = [os.path.basename(k) for k in (used, recent, current)] + ["notes.txt", "mine", building]
        assert sorted(os.listdir(kits)) == sorted(kept)
    finally:
        user.stdin.close()
        user.wait(10)
    # Once its user is gone, the old copy goes too; a rebuild would make it again.
    assert kit_prune.prune(kits, current) == ([os.path.basename(used)], {})


def test_build_with_prune_reports_what_it_removed(tmp_path):
    real = tmp_path / "sglang-real"
    real.mkdir()
    cache = str(tmp_path / "cache")
    old = kit_cli.build(cache, "/usr/bin/python3", str(real))[0]
    _aged(old)
    out = subprocess.run([paths.PYTHON, paths.SIMCTL, "kit", "build", cache, "--python", paths.PYTHON,
                          "--sglang-real", str(real), "--prune"], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert result["pruned"] == [os.path.basename(old)] and result["in_use"] == {}
    assert os.listdir(os.path.dirname(result["kit"])) == [os.path.basename(result["kit"])]
    # A copy handed out again is young again: the next build keeps it.
    _aged(result["kit"])
    assert kit_cli.build(cache, paths.PYTHON, str(real)) == (result["kit"], False)
    assert time.time() - os.path.getmtime(os.path.join(result["kit"], ".complete")) < 60
