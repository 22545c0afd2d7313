"""Which ansible-core the tests drive: the one place that reads GPUFLEET_ANSIBLE_BIN.

GPUFLEET_ANSIBLE_BIN names a venv's bin/ folder (tests/run_all.sh's *-newest stages set
it to .venv-newest/bin); unset, the checkout's .venv/bin, the oldest supported
ansible-core. The simulated hosts keep .venv's Python as their interpreter either way:
only the controller side (ansible, ansible-playbook) changes.
"""
import os
from pathlib import Path

ENV = "GPUFLEET_ANSIBLE_BIN"
REPO = Path(__file__).resolve().parents[1]


def bin_dir():
    return Path(os.environ.get(ENV) or REPO / ".venv" / "bin")


def tool(name):
    """Path of an ansible command-line tool (ansible, ansible-playbook, ...)."""
    return bin_dir() / name
