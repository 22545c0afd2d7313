# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""reset.yml's record of a host (clean, dirty or unreachable, from gpu_release's result) and
its fixed-width table."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.text import DASH, cmdlines, num, short_command, text

RESET_ROW = "%-14s %-11s %8s %9s %8s  %s"
RESET_HEADER = RESET_ROW % ("host", "outcome", "killed", "GPUs free", "seconds",
                            "reason / protected holders (SIGKILL: processes that needed it)")


def reset_summary(release: Any, host: str, failure: Any = None, unreachable: bool = False) -> dict:
    """reset.yml's record of a host. RELEASE is gpu_release's result; with FAILURE (the
    rescue's ansible_failed_result) the host is dirty, or unreachable when UNREACHABLE or
    FAILURE says so. The release's figures come from FAILURE when it is gpu_release's own."""
    if failure is not None:
        release = failure if isinstance(failure, Mapping) and "gpus" in failure else {}
    release = release if isinstance(release, Mapping) else {}
    killed = release.get("killed") or []
    gpus = release.get("gpus") or []
    out = {
        "host": host,
        "killed": len(killed),
        "sigkilled": len([k for k in killed if "SIGKILL" in (k.get("signals") or [])]),
        "killed_commands": [short_command(str(c)) for c in cmdlines(killed)],
        "gpus_selected": len(gpus),
        "gpus_free": len([g for g in gpus if g.get("free")]),
        "protected_holders": cmdlines(release.get("protected_holders")),
        "seconds": release.get("elapsed"),
    }
    if failure is None:
        out.update(outcome="clean", reason="")
        return out
    lost = unreachable or (isinstance(failure, Mapping) and bool(failure.get("unreachable")))
    msg = failure.get("msg", "failed") if isinstance(failure, Mapping) else "failed"
    out.update(outcome="unreachable" if lost else "dirty", reason=text(msg),
               failed_to_kill=cmdlines(release.get("failed_to_kill")),
               gpus_used=[g.get("index") for g in gpus if "free" in g and not g["free"]])
    return out


def reset_table(results: Iterable[Mapping[str, Any]], missing: Iterable[str] = ()) -> list:
    """reset.yml's fixed-width table: a header, one row per host (by host), one per host
    without a result."""
    out = [RESET_HEADER]
    for r in sorted(results, key=lambda r: r["host"]):
        if r.get("outcome") != "clean":
            detail = r.get("reason", "")
        else:
            sigkilled = int(r.get("sigkilled") or 0)
            detail = ("SIGKILL: %d; " % sigkilled if sigkilled > 0 else "") + (
                "protected: " + ", ".join(r["protected_holders"]) if r.get("protected_holders") else "")
        selected = int(r.get("gpus_selected") or 0)
        out.append(RESET_ROW % (r["host"], r.get("outcome"), r.get("killed"),
                                "%s/%s" % (r.get("gpus_free"), selected) if selected > 0 else DASH,
                                num(r.get("seconds"), 2), detail))
    for host in missing:
        out.append(RESET_ROW % (host, "no result", DASH, DASH, DASH, "the host left the play (see above)"))
    return out
