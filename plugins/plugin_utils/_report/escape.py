# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Names and free text shown in a Markdown report as the text they are.

Variant, host, label and category names, workload paths, failure reasons and notes come from
files and hosts the user did not necessarily write. Printed raw, a `|` splits a table cell and
`<b>`, `**x**`, `[x](y)` or a line break render as markup; md_text() escapes every character that
Markdown (CommonMark, GitHub tables) or inline HTML reads as markup with a backslash, which a
renderer shows as the character itself. The JSON report keeps the names exact.
"""

from __future__ import annotations

import re

# Always markup somewhere inside a line: code, emphasis, links, HTML, entities, table cells,
# strikethrough, heading closers, backslash itself.
_ALWAYS = re.compile(r"([\\`*\[\]<>&|~#!$])")
# `_` opens or closes emphasis only next to a space or punctuation, so snake_case stays readable.
_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
# At the start of a list item's text, a list marker or a number item's marker (followed by a space
# or nothing) opens a nested list.
_LEADING = re.compile(r"^([-+]|[0-9]{1,9}[.)])(?=\s|$)")
# Line breaks and control characters (C0, DEL, C1: a terminal reads ESC and CSI as commands),
# and the bidirectional overrides that make a line read other than it is stored.
_BREAKS = re.compile(r"[\r\n\t\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+")


def md_text(value) -> str:
    """VALUE as Markdown that renders as VALUE, on one line (breaks and control characters as one
    space)."""
    text = _BREAKS.sub(" ", str(value))
    text = _ALWAYS.sub(r"\\\1", text)
    text = _UNDERSCORE.sub(r"\\_", text)
    return _LEADING.sub(lambda m: m.group(1)[:-1] + "\\" + m.group(1)[-1], text)
