"""Where the kit's parts are: in a checkout, or in a kit built by `simctl kit build`.

In a checkout, sim/ sits in the repository: the interpreter is REPO/.venv/bin/python,
the fake NVML and real SGLang are under REPO/build (`make setup`), the SGLang pin is
REPO/requirements-sglang.txt. A built kit (roles/sim_fleet copies sim/ into its cache)
is self-contained: KIT/kit.env names the interpreter (PYTHON=...) and KIT/build,
KIT/requirements-sglang.txt hold the rest. The bin/ wrappers read kit.env the same way.
"""
import os

SIM_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
KIT_ENV = os.path.join(SIM_DIR, "kit.env")
BUILT = os.path.exists(KIT_ENV)
# The directory holding build/ and requirements-sglang.txt.
ROOT = SIM_DIR if BUILT else os.path.dirname(SIM_DIR)
BUILD = os.path.join(ROOT, "build")
FAKENVML_LIB = os.path.join(BUILD, "fakenvml", "libnvidia-ml.so.1")
SGLANG_REAL = os.path.join(BUILD, "sglang-real")
PIN_FILE = os.path.join(ROOT, "requirements-sglang.txt")
SIMCTL = os.path.join(SIM_DIR, "simctl")


def read_env(path=KIT_ENV):
    """KEY=VALUE lines (no quoting) of kit.env."""
    env = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                key, sep, value = line.rstrip("\n").partition("=")
                if sep and not key.startswith("#"):
                    env[key.strip()] = value
    except OSError:
        pass
    return env


def python():
    """The interpreter the simulated hosts run modules and the simulators with."""
    if BUILT:
        return read_env().get("PYTHON") or "python3"
    return os.path.join(ROOT, ".venv", "bin", "python")
