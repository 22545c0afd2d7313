# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Results Ansible can read whatever a process calls itself.

psutil decodes /proc/PID/cmdline and comm with surrogateescape, so a command line
holding bytes that are not UTF-8 becomes a str with lone surrogates, which Ansible
refuses to deserialize ("Refusing to deserialize an invalid UTF8 string"), after
the kill has happened. Every string of a result goes through clean(): such bytes
come out as \\xNN escapes.
"""

from __future__ import annotations

from typing import Any


def clean_text(text: str) -> str:
    """`text` as valid UTF-8: bytes that were not UTF-8 become \\xNN."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogateescape") if _escapable(text) else \
            text.encode("utf-8", "surrogatepass")
        return raw.decode("utf-8", "backslashreplace")


def _escapable(text):
    try:
        text.encode("utf-8", "surrogateescape")
        return True
    except UnicodeEncodeError:
        return False


def clean(value: Any) -> Any:
    """A copy of a result (dicts, lists, tuples, strings) with every string clean_text()ed."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value
