# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Names shown in a Markdown report as text (plugin_utils/_report/escape.py): a `|` never splits a
cell, Markdown and HTML never render, snake_case names stay readable."""

from __future__ import annotations

import re

import pytest

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import workload as wl
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.escape import md_text


@pytest.mark.parametrize("name, shown", [
    ("eagle3-tp_size8-mem_fraction_static0.7", "eagle3-tp_size8-mem_fraction_static0.7"),
    ("a|b", r"a\|b"),
    ("<b>x</b>", r"\<b\>x\</b\>"),
    ("**x**", r"\*\*x\*\*"),
    ("_x_", r"\_x\_"),
    ("[l](http://e)", r"\[l\](http://e)"),
    ("![i](http://e/p.png)", r"\!\[i\](http://e/p.png)"),
    ("`code`", r"\`code\`"),
    ("a\\|b", r"a\\\|b"),
    ("line\nbreak\r\x00x", "line break x"),
    ("- item", r"\- item"),
    ("12. item", r"12\. item"),
    ("x &amp; y", r"x \&amp; y"),
    ("h #", r"h \#"),
    ("$x$", r"\$x\$"),
    # A terminal reads ESC and the one-byte CSI as commands; the bidi overrides reorder a line.
    ("a\x1b[31mred\x9b2J", r"a \[31mred 2J"),
    ("ok\u202egnp.exe", "ok gnp.exe"),
])
def test_md_text(name, shown):
    assert md_text(name) == shown


def cells(line):
    """The cells of a Markdown table row, split at the `|` that are not escaped."""
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def test_a_category_table_keeps_its_columns_whatever_the_names():
    fig = {"requests": 4, "accept_length": 2.0, "ttft_p50_ms": 1.0, "tpot_p50_ms": 2.0, "speedup": None}
    table = {"concurrency": 1, "reference": "r|ef", "variants": {
        "r|ef": {"c|at <i>": dict(fig), "**b**": dict(fig)}, "v|2": {"c|at <i>": dict(fig, speedup=1.1)}}}
    lines = wl.category_table(table)
    rows = [line for line in lines if line.startswith("|")]
    assert len({len(cells(row)) for row in rows}) == 1, rows
    assert r"| c\|at \<i\> |" in lines[-1] or any(r"| c\|at \<i\> |" in row for row in rows)
    assert "<i>" not in "\n".join(lines) and "**b**" not in "\n".join(lines)
