# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A report as one self-contained HTML file: the Markdown report's every section (workload, tables,
significance in words, per-category, gates, notes) and the plot, to send to anyone. The plot comes
first, after the title and introduction (the Markdown has it after the tables).

Made from the Markdown report itself, so both always say the same: headings, paragraphs, lists
and tables of the small Markdown the report writers emit (markdown.py, compare.py, the
experiment's gates), with **bold** and `code`. The plot is inlined as a data: URI and the CSS
in a <style>; a Content-Security-Policy forbids every fetch, so the file opens offline in any
browser and reaches no network. Every text is HTML-escaped (html.escape) after the Markdown
escapes (escape.md_text's backslashes) are read back: a hostile name shows as the text it is.
"""

from __future__ import annotations

import base64
import html
import re

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em auto;
       max-width: 110em; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.1em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f3f3f3; } tr:nth-child(even) td { background: #fafafa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
code { background: #f3f3f3; padding: 0 0.2em; }
""".strip()

_HEADING = re.compile(r"^(#{1,6}) (.*)$")
_IMAGE = re.compile(r"^!\[(?P<alt>[^\]]*)\]\((?P<src>[^)]*)\)$")
_ITEM = re.compile(r"^(\s*)[-*] (.*)$")


def inline(text):
    """One line of the report's Markdown as HTML: backslash escapes read as the character,
    **bold** and `code` as tags, everything else escaped."""
    out, tags, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(html.escape(text[i + 1]))
            i += 2
            continue
        if text.startswith("**", i):
            _toggle(out, tags, "strong")
            i += 2
            continue
        if ch == "`":
            _toggle(out, tags, "code")
            i += 1
            continue
        out.append(html.escape(ch))
        i += 1
    out.extend("</%s>" % tag for tag in reversed(tags))  # an unclosed tag ends with the line
    return "".join(out)


def _toggle(out, tags, tag):
    if tags and tags[-1] == tag:
        tags.pop()
        out.append("</%s>" % tag)
    else:
        tags.append(tag)
        out.append("<%s>" % tag)


def cells(row):
    """The cells of a Markdown table row, split at the '|' not escaped with a backslash."""
    parts, cur, i = [], [], 0
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    while i < len(row):
        if row[i] == "\\" and i + 1 < len(row):
            cur.append(row[i:i + 2])
            i += 2
            continue
        if row[i] == "|":
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(row[i])
        i += 1
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _table(rows):
    head, aligns = cells(rows[0]), cells(rows[1])
    cls = [' class="num"' if a.endswith(":") else "" for a in aligns]
    out = ["<table>", "<thead><tr>" + "".join("<th%s>%s</th>" % (cls[i] if i < len(cls) else "", inline(c))
                                              for i, c in enumerate(head)) + "</tr></thead>", "<tbody>"]
    for row in rows[2:]:
        out.append("<tr>" + "".join("<td%s>%s</td>" % (cls[i] if i < len(cls) else "", inline(c))
                                    for i, c in enumerate(cells(row))) + "</tr>")
    return out + ["</tbody>", "</table>"]


def _image(match, images):
    data = images.get(match.group("src"))
    alt = html.escape(match.group("alt"))
    if data is None:
        return ["<p><em>%s: %s (not embedded)</em></p>" % (alt, html.escape(match.group("src")))]
    return ['<p><img alt="%s" src="data:image/png;base64,%s"></p>' % (alt, base64.b64encode(data).decode("ascii"))]


def plot_first(lines, images):
    """LINES with the embedded plot moved up to just before the first section (## heading): the
    page opens with the title, the introduction and the picture, then the tables."""
    shown = [line for line in lines if _IMAGE.match(line.strip()) and _IMAGE.match(line.strip()).group("src") in images]
    rest = [line for line in lines if line not in shown]
    first = next((i for i, line in enumerate(rest) if line.startswith("## ")), len(rest))
    return rest[:first] + [line for image in shown for line in (image, "")] + rest[first:]


def body(markdown, images=None):
    """The HTML of MARKDOWN's blocks; IMAGES: {file name in an image line: PNG bytes}."""
    images = images or {}
    lines = plot_first(markdown.splitlines(), images)
    out, para, i = [], [], 0

    def flush():
        if para:
            out.append("<p>%s</p>" % " ".join(inline(p) for p in para))
            del para[:]

    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush()
            i += 1
        elif _HEADING.match(line):
            flush()
            level, text = _HEADING.match(line).groups()
            out.append("<h%d>%s</h%d>" % (len(level), inline(text), len(level)))
            i += 1
        elif _IMAGE.match(line.strip()):
            flush()
            out += _image(_IMAGE.match(line.strip()), images)
            i += 1
        elif line.lstrip().startswith("|") and i + 1 < len(lines) and set(lines[i + 1].strip()) <= set("|-: "):
            flush()
            rows = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(lines[i])
                i += 1
            out += _table(rows)
        elif _ITEM.match(line):
            flush()
            out.append("<ul>")
            while i < len(lines) and _ITEM.match(lines[i]):
                indent, text = _ITEM.match(lines[i]).groups()
                style = ' style="margin-left: %.1fem"' % (len(indent) * 0.75) if indent else ""
                out.append("<li%s>%s</li>" % (style, inline(text)))
                i += 1
            out.append("</ul>")
        else:
            para.append(line.strip())
            i += 1
    flush()
    return "\n".join(out)


def render(title, markdown, images=None):
    """The whole HTML document: TITLE in <title>, MARKDOWN's body, IMAGES inlined."""
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="%s">' % CSP,
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>%s</title>" % html.escape(str(title)),
        "<style>%s</style>" % STYLE,
        "</head>",
        "<body>",
        "<main>",
        body(markdown, images),
        "</main>",
        "</body>",
        "</html>",
        "",
    ])
