# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine comparison's and the experiment's plot (compare.py's report) as PNG bytes.

The panels are figure.py's: a colour per variant in the report's order (the reference first),
a marker per host (or per spread group). Each record's GPU count is the GPUs its teardown
released (the server's GPU set: its `gpus`, or every GPU of the host); a record without one
(a server kept running) makes the first panel's y per server. Gate verdicts, where the report
has gates (an experiment's), are in the legend.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import figure


def gpu_count(record):
    """The GPUs of the server that served RECORD (compare.py's record), or None when not known."""
    teardown = record.get("teardown") or {}
    count = teardown.get("gpus_selected")
    return count if isinstance(count, int) and count > 0 and not teardown.get("kept") else None


def series(report):
    """figure.py's series of the report: per variant and host, variants in the report's order."""
    out = []
    for index, name in enumerate(report["variants"]):
        for host in sorted(report["hosts"]):
            rec = report["hosts"][host].get(name)
            if rec and rec.get("summary"):
                out.append({"key": name, "label": name, "host": host, "summary": rec["summary"],
                            "gpus": gpu_count(rec), "index": index, "order": len(out)})
    return out


def build_figure(report):
    """The matplotlib Figure of the report (MissingLibrary without matplotlib)."""
    return figure.build(report["title"], series(report), [(n, n) for n in report["variants"]],
                        sorted(report["hosts"]), gates=figure.verdicts(report.get("gates")),
                        tables=report.get("categories") or {})


def render_png(report):
    """PNG bytes of the comparison; the same report gives the same bytes."""
    with figure.names_as_text():
        return figure.png(build_figure(report))
