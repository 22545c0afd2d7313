# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Xid events since boot, from the kernel log, classified as DCGM's health watches do.

NVML's Xid event set only reports Xids after registration; the ones already raised are
in the kernel log as "NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus."
Sources, first readable wins: a file given by the caller (a saved log, the fake kit's),
else `journalctl -k -b 0` (this boot's kernel messages), else `dmesg` (the ring buffer,
which may have wrapped). A source that cannot be read is named with why.
"""

from __future__ import annotations

import re
import subprocess
from typing import Any

# DCGM 4.6.0 modules/health/DcgmHealthWatch.cpp BuildXidMappings(): the "devastating" Xids,
# judged whatever health systems are watched ...
DEVASTATING = {
    48: ("fail", "double bit ECC error"),
    74: ("fail", "NVLink critical error"),
    79: ("fail", "GPU has fallen off the bus"),
    94: ("warn", "contained ECC error"),
    95: ("fail", "uncontained ECC error"),
    119: ("fail", "GSP RPC timeout"),
    120: ("fail", "GSP error"),
    140: ("fail", "ECC unrecovered error"),
}
# ... and the subsystem Xids, judged when that subsystem is watched (`dcgmi health -s a`: all).
SUBSYSTEM = {
    31: ("warn", "memory: MMU error"),
    32: ("warn", "memory: PBDMA error"),
    43: ("warn", "memory: reset channel verification error"),
    63: ("warn", "memory: pending page retirement or row remap"),
    64: ("fail", "memory: row remap failure"),
    38: ("warn", "PCIe: bus error"),
    39: ("warn", "PCIe: fabric error"),
    42: ("warn", "PCIe: replay error"),
    60: ("warn", "thermal: clocks event (thermal)"),
    61: ("warn", "thermal: EDPP power brake thermal limit"),
    62: ("warn", "thermal: thermal violation"),
    54: ("warn", "power: power state change"),
    56: ("warn", "power: clock change"),
    57: ("warn", "power: clock change due to power"),
    58: ("warn", "power: clock change due to thermal"),
    78: ("warn", "power: power state forced change"),
    67: ("warn", "NVLink: error"),
    73: ("warn", "NVLink: flow control error"),
    121: ("warn", "NVLink: C2C link corrected error"),
    137: ("warn", "NVLink: FLA privilege error"),
    93: ("warn", "InfoROM: corrupt (DCGM judges it on Volta only)"),
}

_XID = re.compile(r"NVRM: Xid \(PCI:(?P<pci>[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+)(?:\.[0-9A-Fa-f]+)?\): "
                  r"(?P<xid>\d+)(?:, (?P<detail>.*))?")
COMMAND_TIMEOUT = 3.0  # seconds for journalctl or dmesg; a huge journal must not eat the 5 s budget


def classify(xid: int) -> tuple:
    """(verdict, reason) for one Xid: DCGM's class, else pass (DCGM's watches ignore it)."""
    if xid in DEVASTATING:
        return DEVASTATING[xid]
    if xid in SUBSYSTEM:
        return SUBSYSTEM[xid]
    return "pass", "not judged by DCGM's health watches"


def pci_key(bus_id: str | None) -> tuple | None:
    """(domain, bus, device) of "0000:18:00", "00000000:18:00.0" or "PCI:0000:18:00"; None if unreadable."""
    if not bus_id:
        return None
    parts = bus_id.replace("PCI:", "").split(".")[0].split(":")
    try:
        return tuple(int(p, 16) for p in parts[-3:]) if len(parts) >= 3 else None
    except ValueError:
        return None


def parse(text: str) -> list:
    """Every Xid line of a kernel log: pci (as logged), pci_key, xid, verdict, reason, line."""
    events = []
    for line in text.splitlines():
        found = _XID.search(line)
        if not found:
            continue
        xid = int(found.group("xid"))
        verdict, reason = classify(xid)
        events.append({"xid": xid, "pci": found.group("pci"), "pci_key": pci_key(found.group("pci")),
                       "verdict": verdict, "reason": reason, "line": line.strip()[:500]})
    return events


def _run(argv: list) -> tuple:
    """(text, None) or (None, why) for a log command, bounded in time."""
    try:
        # Bounded in time and called from module_utils code that has no AnsibleModule (run_command
        # has no timeout): journalctl on a large journal, or dmesg, must not hang the health check.
        done = subprocess.run(argv, capture_output=True, timeout=COMMAND_TIMEOUT, check=False)  # pylint: disable=ansible-bad-function
    except FileNotFoundError:
        return None, "not installed"
    except subprocess.TimeoutExpired:
        return None, "no answer within %.0f s" % COMMAND_TIMEOUT
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace").strip()
    if done.returncode != 0:
        return None, "exit %d: %s" % (done.returncode, err.splitlines()[-1] if err else "no message")
    # This boot's kernel log is never empty on a host that booted; empty means we may not see it
    # (journalctl prints a hint and exits 0 for a user outside the systemd-journal/adm groups).
    if not out.strip():
        return None, "no kernel messages visible%s" % (": " + err.splitlines()[-1] if err else "")
    return out, None


def read_log(path: str | None = None) -> dict:
    """{"source": what was read or None, "text": str or None, "unreadable": ["source: why", ...]}."""
    if path:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return {"source": path, "text": handle.read(), "unreadable": []}
        except OSError as exc:
            return {"source": None, "text": None, "unreadable": ["%s: %s" % (path, exc.strerror or exc)]}
    unreadable = []
    for argv in (["journalctl", "-k", "-b", "0", "--no-pager", "-o", "short-monotonic"], ["dmesg"]):
        text, why = _run(argv)
        if text is not None:
            return {"source": " ".join(argv), "text": text, "unreadable": unreadable}
        unreadable.append("%s: %s" % (" ".join(argv), why))
    return {"source": None, "text": None, "unreadable": unreadable}


def since_boot(path: str | None = None) -> dict:
    """The kernel log's Xid events: {"source", "unreadable", "events"} (events None when unread)."""
    log = read_log(path)
    return {"source": log["source"], "unreadable": log["unreadable"],
            "events": None if log["text"] is None else parse(log["text"])}


def public(event: dict) -> dict:
    """An event as the module returns it (the parse key stays inside)."""
    return {k: v for k, v in event.items() if k != "pci_key"}


def worst(events: list) -> Any:
    """The strongest of the events' verdicts (fail, warn, pass), or pass for none."""
    order = {"pass": 0, "warn": 1, "fail": 2}
    return max((e["verdict"] for e in events), key=order.get, default="pass")
