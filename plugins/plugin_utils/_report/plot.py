# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The swap report's plot (merge.py's report: baseline against candidate) as PNG bytes.

The panels are figure.py's: baseline and candidate are its two variants, each host its own
series. The llm_benchmark results carry no GPU count, so tok/s is per GPU only where the report
has `gpus_per_server` (benchmark_report's option of that name), per server otherwise.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import figure

SIDES = ("baseline", "candidate")


def series(report):
    """figure.py's series of the report: per side (variant) and host."""
    hosts = sorted(report["hosts"])
    gpus = report.get("gpus_per_server")
    out = []
    for index, side in enumerate(SIDES):
        for host in hosts:
            summary = report["hosts"][host].get(side)
            if summary:
                out.append({"key": side, "label": report["labels"][side], "host": host, "summary": summary,
                            "gpus": gpus, "index": index, "order": len(out)})
    return out


def build_figure(report):
    """The matplotlib Figure of the report (MissingLibrary without matplotlib)."""
    hosts = sorted(report["hosts"])
    drawn = series(report)
    sides = [s for s in SIDES if any(x["key"] == s for x in drawn)] or list(SIDES)
    return figure.build(report["title"], drawn, [(s, report["labels"][s]) for s in sides], hosts,
                        tables={h: report["hosts"][h].get("categories") for h in hosts}, titles=report["labels"])


def render_png(report):
    """PNG bytes; the same report gives the same bytes."""
    with figure.names_as_text():
        return figure.png(build_figure(report))
