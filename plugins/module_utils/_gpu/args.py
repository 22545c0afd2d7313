# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Argument-spec pieces gpu_release and gpu_info share, and their checks."""

from __future__ import annotations

import math
import pwd
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.nvml import DEFAULT_V1_RESERVE_MIB

COMMON_ARGS = dict(
    gpus=dict(type="raw", default="all"),
    devices=dict(type="path"),
    nvml_timeout=dict(type="float", default=20.0),
    v1_reserve_mib=dict(type="float", default=DEFAULT_V1_RESERVE_MIB),
    protect=dict(type="list", elements="str", default=[]),
)


_OPENERS = {"(": ")", "[": "]", "{": "}"}


def _balanced(text):
    """Whether every (, [ and { in `text` is closed (backslash escapes honoured)."""
    stack, i = [], 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if stack and stack[-1] == "]":
            if char == "]":
                stack.pop()
        elif char in _OPENERS:
            stack.append(_OPENERS[char])
        elif stack and char == stack[-1]:
            stack.pop()
        i += 1
    return not stack


def regex_list(value: list | str | None, option: str) -> list:
    """A list of regexes from a YAML/JSON list, or from a comma-separated string.

    In k=v form (``patterns=a,b``) Ansible hands over one string. A comma inside a
    regex (``{1,2}``, ``[,;]``) must not split it into two wrong regexes: when any
    piece of the split would leave a bracket or brace open, the string is refused.
    """
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        for position, item in enumerate(value):
            if item is None:
                # str(None) is the regex 'None', which would match `python3 None_of_your_business.py`.
                raise InvalidInput(
                    "%s: item %d is null (a YAML null, or an empty '- ' line, or an undefined variable "
                    "rendered as none); an empty pattern matches every process: give a regex for the "
                    "server's command line (or give engine for the engine's own kill set), or remove the item"
                    % (option, position + 1))
        return [v if isinstance(v, str) else str(v) for v in value]
    text = str(value)
    if "," not in text:
        return [text] if text else []
    pieces = [p.strip() for p in text.split(",")]
    if not all(_balanced(p) for p in pieces):
        raise InvalidInput(
            "%s: %r was given as one comma-separated string (k=v form), and splitting it at the commas "
            "would cut the regex into %r; pass %s as a YAML list (%s: ['%s']) or as JSON "
            "(-a '{\"%s\": [\"...\"]}')" % (option, text, pieces, option, option, text, option))
    return [p for p in pieces if p]


def finite(value: float | None, msg: str, strict: bool = False) -> Any:
    """Refuse NaN, infinity and negative values (and 0 when strict) with `msg`.

    NaN compares false with every number, so `nan <= 0` lets it through a plain
    range check: `timeout: nan` would never time out.
    """
    if value is None or not math.isfinite(value) or value < 0 or (strict and value == 0):
        raise InvalidInput("%s (got %r%s)" % (
            msg, value, ", which is not a finite number" if value is not None and not math.isfinite(value) else ""))
    return value


def known_users(names: list, option: str = "sweep_users") -> None:
    """Refuse user names this host does not know: a typo would sweep nobody's processes."""
    unknown = []
    for name in names or []:
        try:
            pwd.getpwnam(name)
        except KeyError:
            unknown.append(name)
    if unknown:
        raise InvalidInput("%s: no such user on this host: %s; give existing user names (see getent passwd)"
                           % (option, ", ".join(repr(n) for n in unknown)))
