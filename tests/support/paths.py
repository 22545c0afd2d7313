# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where things are in the checkout, and which ansible-core the tests drive.

`make setup` creates .venv and links build/collections/ansible_collections/gpufleet/serving
to the repository root; tests import the collection through that link, as Ansible does. Paths are str (they go
into argv, JSON and YAML as they are); wrap them in pathlib.Path where a test wants one.
"""
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(REPO, "tests")
SIM = os.path.join(REPO, "sim")  # the simulator kit (shipped with the collection)
SUPPORT = os.path.join(TESTS, "support")
SCRIPTS = os.path.join(SUPPORT, "scripts")
SERVERS = os.path.join(SUPPORT, "servers")
COLLECTIONS = os.path.join(REPO, "build", "collections")
VENV_BIN = os.path.join(REPO, ".venv", "bin")
PYTHON = os.path.join(VENV_BIN, "python")
SIMCTL = os.path.join(SIM, "simctl")
SIM_PYTHON = os.path.join(SIM, "bin", "sglang-python")  # python with the simulated sglang package
SIM_MODELS = os.path.join(SIM, "models")

# GPUFLEET_ANSIBLE_BIN names a venv's bin/ folder (tests/run_all.sh's *-newest stages set
# it to .venv-newest/bin); unset, the checkout's .venv/bin, the oldest supported
# ansible-core. The simulated hosts keep .venv's Python as their interpreter either way:
# only the controller side (ansible, ansible-playbook) changes.
ANSIBLE_BIN_ENV = "GPUFLEET_ANSIBLE_BIN"


def ansible_bin_dir():
    return os.environ.get(ANSIBLE_BIN_ENV) or VENV_BIN


def ansible_tool(name):
    """Path of an ansible command-line tool (ansible, ansible-playbook, ...)."""
    return os.path.join(ansible_bin_dir(), name)
