# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/html_report.py: the report's Markdown as one self-contained HTML file (tables, lists,
headings, the plot as a data: URI, no external reference), hostile names shown as text; and the
file as headless Chromium renders it: the text in its DOM, the plot drawn."""

from __future__ import annotations

import re

import pytest
from matplotlib.image import imread

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import files as rf
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import html_report
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.escape import md_text
from tests.support import chromium
from tests.support.report_results import RESULTS

HOSTILE = "<script>alert(1)</script> a|b **x** $x^2$ &amp;"


def test_inline_reads_the_markdown_escapes_back_and_escapes_for_html():
    assert html_report.inline(md_text(HOSTILE)) == \
        "&lt;script&gt;alert(1)&lt;/script&gt; a|b **x** $x^2$ &amp;amp;"
    assert html_report.inline("**fleet** (2 hosts) `code`") == "<strong>fleet</strong> (2 hosts) <code>code</code>"
    assert html_report.inline("**open") == "<strong>open</strong>"


def test_table_cells_split_only_at_unescaped_bars():
    assert html_report.cells("| %s | 1.0 |" % md_text("a|b")) == ["a\\|b", "1.0"]


def test_the_document_holds_every_block_and_no_external_reference():
    md = "\n".join(["# T", "", "intro", "", "## S", "", "para one", "continued", "", "- item", "  - nested", "",
                    "| h | n |", "| --- | ---: |", "| a | 1 |", "", "![plot](r.png)", "", "![other](x.png)"])
    doc = html_report.render("T <b>", md, {"r.png": b"\x89PNG fake"})
    assert "<title>T &lt;b&gt;</title>" in doc and "<h1>T</h1>" in doc
    assert "<p>para one continued</p>" in doc
    assert '<li>item</li>' in doc and '<li style="margin-left: 1.5em">nested</li>' in doc
    assert '<th class="num">n</th>' in doc and '<td class="num">1</td>' in doc
    assert '<img alt="plot" src="data:image/png;base64,iVBORyBmYWtl">' in doc
    assert "x.png (not embedded)" in doc
    assert doc.index("<img") < doc.index("<p>para one")  # the plot first, before the first section
    assert not re.search(r"""(src|href)=["'](?!data:)""", doc)  # nothing fetched from anywhere


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    rf.build_report(RESULTS, str(out / "rep"), HOSTILE, "base <b>", "eagle|3")
    return out


def test_chromium_shows_the_text_and_draws_the_plot(report_dir):
    page = (report_dir / "rep" / "benchmark.html").as_uri()
    dom = chromium.run(report_dir / "profile", "--dump-dom", page)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))
    assert "<script>alert(1)</script>" not in dom and "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    for expected in ("Summary", "Workload", "Fleet throughput by concurrency", "gpu01: latency by level",
                     "base &lt;b&gt;", "eagle|3", "2370.0"):
        assert expected in text, expected
    assert dom.count("<table>") >= 4 and 'src="data:image/png;base64,' in dom
    shot = report_dir / "shot.png"
    chromium.run(report_dir / "profile", "--window-size=1200,3000", "--screenshot=%s" % shot, page)
    pixels = (imread(str(shot))[:, :, :3] * 255).round().astype(int)
    assert pixels.std() > 10, "the page is blank"
    # The plot is the only thing on the page drawn in the palette's blue (#0072B2): its markers showed.
    blue = (abs(pixels - [0x00, 0x72, 0xB2]) <= 8).all(axis=2).sum()
    assert blue > 50, "no pixel of the plot's blue on the page (%d)" % blue
