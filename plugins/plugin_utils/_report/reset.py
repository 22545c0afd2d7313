# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""reset.yml's record of a host (clean, dirty or unreachable, from gpu_release's result; in
check mode what a real run would do) and its fixed-width table, with the commands killed.

The table shows every host name, reason and command through md_text (one line, no control
character, no Markdown or HTML markup); the record (reset_summary_file's JSON) keeps them exact."""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.escape import md_text
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.text import DASH, cmdlines, num, short_command, text

RESET_ROW = "%-14s %-11s %8s %9s %8s  %s"
RESET_HEADER = RESET_ROW % ("host", "outcome", "killed", "GPUs free", "seconds",
                            "reason / protected holders (SIGKILL: processes that needed it)")
# Check mode's outcomes: nothing was signalled, so none of them says "clean".
WOULD_KILL = "would kill"
NO_CHANGE = "no change"
WOULD_FAIL = "would fail"
# The outcomes after which reset.yml reports success (a preview succeeds unless it predicts a failure).
OK_OUTCOMES = ("clean", WOULD_KILL, NO_CHANGE)
# A title with a trailing number (sglang::scheduler_TP3, VLLM::Worker_TP5): one of a family.
_NUMBERED_TITLE = re.compile(r"^(\S*?\D)\d+$")


def reset_summary(release: Any, host: str, failure: Any = None, unreachable: bool = False,
                  check: bool = False) -> dict:
    """reset.yml's record of a host. RELEASE is gpu_release's result; with FAILURE (the
    rescue's ansible_failed_result) the host is dirty, or unreachable when UNREACHABLE or
    FAILURE says so. The release's figures come from FAILURE when it is gpu_release's own.
    CHECK (check mode): RELEASE is a preview, so the outcome says what a real run would do
    (would kill, no change, would fail) and the GPUs free are those free now."""
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
    if check:
        # Nothing was released: a GPU is in use when memory was used at the scan.
        in_use = [g.get("index") for g in gpus if _used_now(g)]
        out.update(check=True, gpus_in_use=in_use, gpus_free=len(gpus) - len(in_use))
    if failure is None:
        if check:
            out.update(outcome=WOULD_KILL if killed else NO_CHANGE, reason="")
            return out
        out.update(outcome="clean", reason="")
        return out
    lost = unreachable or (isinstance(failure, Mapping) and bool(failure.get("unreachable")))
    msg = failure.get("msg", "failed") if isinstance(failure, Mapping) else "failed"
    out.update(outcome="unreachable" if lost else (WOULD_FAIL if check else "dirty"), reason=text(msg),
               failed_to_kill=cmdlines(release.get("failed_to_kill")),
               gpus_used=[g.get("index") for g in gpus if "free" in g and not g["free"]])
    return out


def _used_now(gpu: Mapping[str, Any]) -> bool:
    # Memory, not device-file holders: a daemon such as nvidia-persistenced holds every GPU's
    # file with no memory, and a real run would leave it there and count the GPU free.
    before = gpu.get("before") if isinstance(gpu.get("before"), Mapping) else {}
    return float(before.get("used_mib") or 0) > 0


def gpu_ranges(indices: Iterable[Any]) -> str:
    """GPU indices as runs: [0, 1, 2, 5] -> "0-2,5"."""
    nums = sorted({int(i) for i in indices if i is not None})
    runs = []
    for i in nums:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in runs)


def grouped_commands(commands: Iterable[str]) -> list:
    """The killed commands, one entry per command in first-seen order; a numbered family of
    titles (sglang::scheduler_TP0..TP7) as one entry "8 x sglang::scheduler_TP*"."""
    members: dict = {}
    for command in commands:
        match = _NUMBERED_TITLE.match(command)
        members.setdefault(match.group(1) + "*" if match else command, []).append(command)
    return [found[0] if len(found) == 1 else "%d x %s" % (len(found), key) for key, found in members.items()]


def _killed_line(r: Mapping[str, Any]) -> str:
    """The line under a host's row that names what was (or would be) killed; "" when nothing."""
    commands = r.get("killed_commands") or []
    if not commands:
        return ""
    verb = "would kill" if r.get("check") else "killed"
    return "  %s %d: %s" % (verb, len(commands), "; ".join(grouped_commands(md_text(c) for c in commands)))


def reset_table(results: Iterable[Mapping[str, Any]], missing: Iterable[str] = ()) -> list:
    """reset.yml's fixed-width table: a header, one row per host (by host), each followed by
    a line naming the commands killed (in check mode: that would be), one per host without a
    result."""
    out = [RESET_HEADER]
    for r in sorted(results, key=lambda r: r["host"]):
        protected = ", ".join(md_text(h) for h in r.get("protected_holders") or [])
        if r.get("outcome") not in OK_OUTCOMES:
            detail = md_text(r.get("reason", ""))
        elif r.get("check"):
            in_use = r.get("gpus_in_use") or []
            detail = ("GPUs in use now: " + gpu_ranges(in_use) if in_use else "every GPU free now") + (
                "; protected: " + protected if protected else "")
        else:
            sigkilled = int(r.get("sigkilled") or 0)
            detail = ("SIGKILL: %d; " % sigkilled if sigkilled > 0 else "") + (
                "protected: " + protected if protected else "")
        selected = int(r.get("gpus_selected") or 0)
        out.append(RESET_ROW % (md_text(r["host"]), md_text(r.get("outcome")), r.get("killed"),
                                "%s/%s" % (r.get("gpus_free"), selected) if selected > 0 else DASH,
                                num(r.get("seconds"), 2), detail))
        killed = _killed_line(r)
        if killed:
            out.append(killed)
    for host in missing:
        out.append(RESET_ROW % (md_text(host), "no result", DASH, DASH, DASH, "the host left the play (see above)"))
    return out
