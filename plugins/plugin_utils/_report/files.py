# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the merged report (JSON, Markdown, PNG, and one self-contained HTML file holding the
Markdown's sections and the plot: html_report.py) where it differs from what is there.

The files hold no timestamp, so the same results give the same bytes and a
rerun reports changed=false.
"""

from __future__ import annotations

import json
import os

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import MissingLibrary
from ansible_collections.gpufleet.serving.plugins.module_utils._files import write_atomic
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import html_report
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.compare import compare, host_lines
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.compare import render as render_comparison
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.compare_plot import (
    render_png as render_comparison_png,
)
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.markdown import render
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.merge import merge
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.plot import render_png


def _plain(data):
    """Plain JSON types (controller values may be tagged or lazy containers)."""
    return json.loads(json.dumps(data))


def _differs(path, data):
    try:
        with open(path, "rb") as fh:
            return fh.read() != data
    except OSError:
        return True


def build_report(results, dest_dir, title, baseline_label, candidate_label, basename="benchmark",
                 check_mode=False, gpus_per_server=None):
    """The baseline/candidate report (merge.py) written as JSON, Markdown, PNG and HTML; GPUS_PER_SERVER
    (the results carry none) makes the plot's first panel per GPU."""
    report = merge(_plain(results), title, baseline_label, candidate_label)
    if gpus_per_server:
        report["gpus_per_server"] = int(gpus_per_server)
    return write_report(report, dest_dir, basename, render, render_png, check_mode=check_mode)


def build_comparison(records, dest_dir, title, reference=_registry.DEFAULT, variants=None, basename="compare",
                     check_mode=False):
    """The engine comparison (compare.py) written as JSON, Markdown, PNG and HTML; `lines` and
    `failures` added for the playbook's closing output."""
    report = compare(_plain(records), title, reference, variants)
    out = write_report(report, dest_dir, basename, render_comparison, render_comparison_png,
                       check_mode=check_mode)
    out["lines"] = host_lines(report)
    out["failures"] = list(report["failures"])
    return out


def write_report(report, dest_dir, basename, render_markdown, render_plot, check_mode=False):
    """Write REPORT (a plain dict) as BASENAME.json, .md (render_markdown), .png (render_plot; none
    without matplotlib) and .html (the Markdown and the PNG in one file) under DEST_DIR, each only
    where it differs."""
    dest_dir = os.path.abspath(os.path.expanduser(dest_dir))
    paths = {
        "json": os.path.join(dest_dir, basename + ".json"),
        "markdown": os.path.join(dest_dir, basename + ".md"),
        "plot": os.path.join(dest_dir, basename + ".png"),
        "html": os.path.join(dest_dir, basename + ".html"),
    }
    plot_note = None
    try:
        png = render_plot(report)
    except MissingLibrary as exc:
        png, plot_note = None, exc.msg
        paths["plot"] = None
    markdown = render_markdown(report, plot_note=plot_note,
                               plot_name=os.path.basename(paths["plot"]) if paths["plot"] else None)
    contents = {
        "json": (json.dumps(report, indent=2, sort_keys=True) + "\n").encode("utf-8"),
        "markdown": markdown.encode("utf-8"),
        "plot": png,
        "html": html_report.render(report["title"], markdown,
                                   {os.path.basename(paths["plot"]): png} if png else None).encode("utf-8"),
    }
    changed = [k for k, data in contents.items() if data is not None and _differs(paths[k], data)]
    if changed and not check_mode:
        if not os.path.isdir(dest_dir):
            os.makedirs(dest_dir)
        for key in changed:
            write_atomic(paths[key], contents[key])
    notes = list(report["notes"]) + ([plot_note] if plot_note else [])
    return {
        "changed": bool(changed),
        "json_path": paths["json"],
        "markdown_path": paths["markdown"],
        "plot_path": paths["plot"],
        "html_path": paths["html"],
        "markdown": markdown,
        "notes": notes,
        "report": report,
    }
