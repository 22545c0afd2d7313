# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Python libraries the modules need on a target host, and the one message when some are missing.

A module names what it needs before any work starts; every missing one is reported in the same
run (a new host needs one failed run, not one per library), in Ansible's missing_required_lib
words, with the interpreter that lacks them, the pip line for that very interpreter and the
role that installs them (gpufleet.serving.host_setup).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import MissingLibrary

# distribution (what pip and the role install) -> the module it is imported as
LIBRARIES = {"psutil": "psutil", "nvidia-ml-py": "pynvml", "prometheus_client": "prometheus_client"}
SETUP_ROLE = "gpufleet.serving.host_setup"


def missing(*distributions: str) -> list:
    """The distributions of `distributions` whose module does not import, in the order given."""
    absent = []
    for dist in distributions:
        try:
            importlib.import_module(LIBRARIES[dist])
        except ImportError:
            absent.append(dist)
    return absent


def missing_message(absent: list) -> str:
    """Ansible's standard missing-library text for every one of `absent`, and how to get them."""
    from ansible.module_utils.basic import missing_required_lib
    names = ", ".join(absent)
    return (missing_required_lib(names, reason="by this module")
            + ". Set the host up with the %s role (a virtual environment with %s; it sets"
              " ansible_python_interpreter to it), or install them for this interpreter: %s -m pip install %s"
            % (SETUP_ROLE, names, sys.executable, " ".join(absent)))


def check(*distributions: str) -> None:
    """Raise MissingLibrary naming every one of `distributions` that is not installed."""
    absent = missing(*distributions)
    if absent:
        raise MissingLibrary(missing_message(absent), missing_libraries=absent)


def require(module: Any, *distributions: str) -> None:
    """Fail `module` (before any work starts) when any of `distributions` is not installed."""
    try:
        check(*distributions)
    except MissingLibrary as exc:
        module.fail_json(msg=exc.msg, **exc.fail_fields())
