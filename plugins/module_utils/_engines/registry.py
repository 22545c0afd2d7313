# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The inference engines the collection drives, one file each in this package.

Every module's `choices`, the plan, the log reader, the readiness check, the drafter check,
acceptance, the benchmark, the kill patterns and the reports read the engines from here.
The imports are written out (not discovered) because Ansible ships a module only the
module_utils files its imports name.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import sglang as _sglang
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import vllm as _vllm
from ansible_collections.gpufleet.serving.plugins.module_utils._engines.engine import Engine
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput

# In this order everywhere an order shows (choices, kill sets, variants); the first is the default.
ENGINES = (_sglang.ENGINE, _vllm.ENGINE)
DEFAULT = ENGINES[0].name


def engines() -> tuple[Engine, ...]:
    return ENGINES


def names() -> list[str]:
    return [e.name for e in ENGINES]


def find(name: str | None) -> Engine | None:
    """The engine called NAME, or None."""
    return next((e for e in ENGINES if e.name == name), None)


def get(name: str | None) -> Engine:
    """The engine called NAME (empty: the default); InvalidInput naming the choices otherwise."""
    found = find(name or DEFAULT)
    if found is None:
        raise InvalidInput("unknown engine %r; known engines: %s" % (name, ", ".join(names())))
    return found
