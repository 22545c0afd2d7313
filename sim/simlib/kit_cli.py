"""`simctl kit check|build`: what the simulated fleet needs, and a self-contained copy of the kit.

  simctl kit check --python PY
      root, the Debian packages' programs, a C compiler and the Python modules PY must
      import; prints JSON {"ok": ..., "problems": [...]}, each problem with its fix; rc 2
      when something is missing.
  simctl kit build CACHE --python PY [--sglang-real DIR] [--check] [--prune]
      copies this kit into CACHE/kits/KEY (KEY: a digest of the kit's files, the SGLang
      pin and PY), compiles the fake NVML there, writes kit.env (PYTHON=PY) and installs
      the pinned real SGLang (its parser checks the simulator's command line) with
      `PY -m pip install --no-deps --target`, or links DIR, such an install made already.
      Prints JSON {"kit": KIT, "changed": ...}; an existing complete KIT is kept as it is.
      --prune then removes the cache's other copies that no live process uses
      (simlib/kit_prune.py) and adds "pruned" and "in_use" to the JSON.

roles/sim_fleet runs both: an installed collection needs no checkout.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys

from simlib import fakegpu, kit_prune, layout
from simlib.fleet_cli import TOOLS

CC = ("gcc", "gcc")
# module -> distribution, for `PY -m pip install ...`: the hosts' Ansible modules
# (pynvml, psutil), the simulators (setproctitle, yaml) and what real SGLang's parser
# imports (requirements-sglang-deps.txt).
MODULES = (("pynvml", "nvidia-ml-py"), ("psutil", "psutil"), ("yaml", "PyYAML"),
           ("setproctitle", "setproctitle"), ("msgspec", "msgspec"), ("numpy", "numpy"),
           ("orjson", "orjson"), ("packaging", "packaging"), ("PIL", "pillow"),
           ("pydantic_core", "pydantic-core"), ("pybase64", "pybase64"), ("zmq", "pyzmq"),
           ("requests", "requests"), ("starlette", "starlette"))
REQUIREMENT_FILES = ("requirements-common.txt", "requirements-sglang-deps.txt")
SKIP = ("__pycache__", "kit.env", "build", ".complete")


def _pins():
    """distribution (lower case) -> its `name==version` from the repository's pin files."""
    pins = {}
    for name in REQUIREMENT_FILES:
        try:
            with open(os.path.join(layout.ROOT, name), encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if "==" in line:
                pins[line.split("==", 1)[0].strip().lower()] = line
    return pins


def missing_modules(python):
    """The modules of MODULES that PYTHON cannot find (raises OSError if it does not run)."""
    code = ("import importlib.util, json, sys\n"
            "print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]))")
    proc = subprocess.run([python, "-c", code, *[m for m, unused in MODULES]],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False,
                          timeout=60)
    if proc.returncode != 0:
        raise OSError("%s does not run: %s" % (python, proc.stderr.strip()[-300:]))
    return json.loads(proc.stdout)


def problems(python):
    out = []
    if os.geteuid() != 0:
        out.append("the simulated fleet needs root: its hosts are PID and mount namespaces "
                   "(run ansible-playbook as root, or with become on localhost)")
    missing = [(tool, pkg) for tool, pkg in TOOLS + (CC,) if not shutil.which(tool)]
    if missing:
        out.append("missing %s; install them with: apt-get install %s"
                   % (", ".join(t for t, unused in missing),
                      " ".join(sorted({p for unused, p in missing}))))
    if not (os.path.isabs(python) and os.access(python, os.X_OK)):
        out.append("sim_fleet_python %r is not an absolute path to an executable" % python)
        return out
    try:
        absent = missing_modules(python)
    except (OSError, subprocess.SubprocessError) as exc:
        out.append(str(exc))
        return out
    if absent:
        pins = _pins()
        dists = [pins.get(d.lower(), d) for m, d in MODULES if m in absent]
        out.append("%s cannot import %s; install them with: %s -m pip install %s"
                   % (python, ", ".join(absent), python, " ".join(dists)))
    return out


def _files(top):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP)
        for name in sorted(filenames):
            if name not in SKIP and not name.endswith(".pyc"):
                yield os.path.relpath(os.path.join(dirpath, name), top)


def digest(python, sglang_real):
    h = hashlib.sha256()
    for rel in _files(layout.SIM_DIR):
        h.update(rel.encode() + b"\0")
        with open(os.path.join(layout.SIM_DIR, rel), "rb") as handle:
            h.update(hashlib.sha256(handle.read()).digest())
    with open(layout.PIN_FILE, "rb") as handle:
        h.update(handle.read())
    h.update(("\0%s\0%s" % (python, sglang_real or "")).encode())
    return h.hexdigest()[:16]


def _pinned():
    with open(layout.PIN_FILE, encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if line.startswith("sglang=="):
                return line
    raise ValueError("no sglang==VERSION line in %s" % layout.PIN_FILE)


def build(cache, python, sglang_real=None, check=False):
    """(KIT, changed): CACHE/kits/KEY, made now or found complete (CHECK: only say which)."""
    if layout.BUILT:
        raise ValueError("%s is a built kit already: run `simctl kit build` from the "
                         "collection's sim/" % layout.SIM_DIR)
    kits = os.path.join(os.path.abspath(cache), "kits")
    kit = os.path.join(kits, digest(python, sglang_real))
    if os.path.exists(os.path.join(kit, ".complete")):
        if not check:
            kit_prune.handed_out(kit)
        return kit, False
    if check:
        return kit, True
    os.makedirs(kits, exist_ok=True)
    tmp = "%s.tmp%d" % (kit, os.getpid())
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        shutil.copytree(layout.SIM_DIR, tmp, symlinks=True,
                        ignore=lambda d, names: [n for n in names if n in SKIP or n.endswith(".pyc")])
        shutil.copyfile(layout.PIN_FILE, os.path.join(tmp, "requirements-sglang.txt"))
        fakegpu.build(os.path.join(tmp, "build", "fakenvml"))
        real = os.path.join(tmp, "build", "sglang-real")
        if sglang_real:
            os.symlink(os.path.abspath(sglang_real), real)
        else:
            proc = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps",
                                   "--disable-pip-version-check", "--target", real, _pinned()],
                                  capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                  check=False)
            if proc.returncode != 0:
                raise ValueError("%s -m pip install --no-deps --target ... %s failed (the "
                                 "simulator checks its command line with real SGLang's parser; "
                                 "or give sim_fleet_sglang_real_root): %s"
                                 % (python, _pinned(), (proc.stderr or proc.stdout).strip()[-600:]))
        with open(os.path.join(tmp, "kit.env"), "w", encoding="utf-8") as handle:
            handle.write("# Written by `simctl kit build`: the interpreter of this kit.\n"
                         "PYTHON=%s\n" % python)
        open(os.path.join(tmp, ".complete"), "w").close()
        try:
            os.rename(tmp, kit)  # KIT appears complete or not at all
        except OSError:
            if not os.path.exists(os.path.join(kit, ".complete")):
                raise
            return kit, False  # a concurrent build (another scenario) was first: use its copy
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return kit, True


def _parser():
    parser = argparse.ArgumentParser(prog="simctl kit", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_check = sub.add_parser("check", help="what the fleet needs and is missing")
    p_check.add_argument("--python", required=True)
    p_build = sub.add_parser("build", help="a self-contained kit in CACHE")
    p_build.add_argument("cache")
    p_build.add_argument("--python", required=True)
    p_build.add_argument("--sglang-real", help="an existing --target install of the pinned sglang")
    p_build.add_argument("--check", action="store_true",
                         help="say whether a build is due; build nothing (simctl: this kit's while it is)")
    p_build.add_argument("--prune", action="store_true",
                         help="then remove the cache's other kit copies that no live process uses")
    return parser


def main(argv):
    args = _parser().parse_args(argv)
    if args.command == "check":
        found = problems(args.python)
        print(json.dumps({"ok": not found, "problems": found}))
        return 2 if found else 0
    try:
        kit, changed = build(args.cache, args.python, args.sglang_real, check=args.check)
    except (ValueError, OSError, subprocess.CalledProcessError) as exc:
        sys.stderr.write("simctl kit build: %s\n" % exc)
        return 1
    # With --check and no kit yet, this (source) kit's simctl answers `fleet up --check`.
    simctl = layout.SIMCTL if args.check and changed else os.path.join(kit, "simctl")
    out = {"kit": kit, "changed": changed, "simctl": simctl}
    if args.prune and not args.check:
        out["pruned"], out["in_use"] = kit_prune.prune(os.path.dirname(kit), kit)
    print(json.dumps(out))
    return 0
