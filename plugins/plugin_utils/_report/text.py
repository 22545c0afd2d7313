# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The small formatting rules every fleet line shares: a figure or "-", a trimmed text, a
value deep in a registered result, a killed process's command cut to fit a line."""

from __future__ import annotations

from typing import Any, Mapping

DASH = "-"


def absent(value: Any) -> bool:
    """No value: None, an empty string, or Jinja's "None"."""
    return value is None or (isinstance(value, str) and value.strip() in ("", "None"))


def num(value: Any, digits: int = 1) -> str:
    """VALUE with DIGITS decimals, or "-" when there is none."""
    return DASH if absent(value) else "%.*f" % (digits, float(value))


def text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def dig(data: Any, *keys: str) -> Any:
    """DATA[KEYS[0]][KEYS[1]]..., or None where a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def succeeded(result: Any) -> bool:
    """A registered result of a task that ran and did not fail."""
    return isinstance(result, Mapping) and bool(result) and not result.get("failed") \
        and not result.get("unreachable") and not result.get("skipped")


def cmdlines(items: Any) -> list:
    return [(i.get("cmdline", "?") if isinstance(i, Mapping) else "?") for i in (items or [])]


def truncate(line: str, length: int = 80) -> str:
    # Jinja's truncate(80): cut at a word boundary, leeway 5, "..." appended.
    if len(line) <= length + 5:
        return line
    cut = line[:length - 3].rsplit(" ", 1)[0]
    return cut + "..."


def short_command(command: str) -> str:
    # The interpreter's directory says nothing about what was killed and would push the
    # words that do (e.g. multiprocessing.resource_tracker) past the cut.
    head, sep, rest = command.partition(" ")
    if head.startswith("/"):
        head = head.rsplit("/", 1)[1] or head
    return truncate(head + sep + rest)
