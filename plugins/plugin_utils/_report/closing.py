# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How a fleet play ends for its hosts: why a host failed (the rescue's reason), the closing
lines (where the report is, one line per host) and the hosts that did not complete."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.escape import md_text
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.text import text

NO_RESULT = "NO RESULT, the host left the play before recording an outcome (see above)"


def failure_reason(failed_result: Any, failed_task: Any = None, ping: Any = None) -> str:
    """Why a host failed: "unreachable: MSG" when it stops answering (PING, the rescue's
    ping result), else "TASK NAME: MSG" of the failed task."""
    if isinstance(ping, Mapping) and ping.get("unreachable"):
        return "unreachable: " + text(ping.get("msg", ""))
    name = failed_task.get("name") if isinstance(failed_task, Mapping) else None
    msg = failed_result.get("msg", "failed") if isinstance(failed_result, Mapping) else "failed"
    return "%s: %s" % (name or "?", text(msg))


def report_lines(results: Iterable[Mapping[str, Any]], missing: Iterable[str] = (),
                 report: Any = None, summary_file: str | None = None) -> list:
    """The controller's closing lines: where the report is (with REPORT, the benchmark_report
    result, or None to leave the line out), the summary file, then one line per host (each
    result's `line`, by host) and one per host without a result (MISSING)."""
    out = []
    if report is not None:
        paths = []
        if isinstance(report, Mapping):
            paths = [report.get(key) for key in ("json_path", "markdown_path", "plot_path", "html_path")]
        out.append("report: " + (", ".join(p for p in paths if p) or "none (no host completed)"))
    if summary_file:
        out.append("summary: %s" % summary_file)
    out.extend(r.get("line", "?") for r in sorted(results, key=lambda r: r["host"]))
    out.extend("%s: %s" % (md_text(host), NO_RESULT) for host in missing)
    return out


def not_ok(results: Iterable[Mapping[str, Any]], missing: Iterable[str] = (), ok: Any = "ok") -> list:
    """Hosts whose outcome is not OK (one outcome, or a list of them; in play order), then the
    MISSING ones."""
    good = [ok] if isinstance(ok, str) else list(ok)
    return [r["host"] for r in results if r.get("outcome") not in good] + list(missing)
