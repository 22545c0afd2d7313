# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Xid lines of a kernel log: parsed, matched to a PCI address and classified as DCGM does."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import xid

LOG = """\
[    5.123456] nvidia: loading out-of-tree module taints kernel.
[ 1234.5] NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.
Dec 05 07:00:01 gpu01 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
[ 99.1] NVRM: Xid (PCI:0000:2a:00.0): 13, Graphics Exception: ESR 0x405840=0x0
[ 99.2] NVRM: Xid (PCI:0000:2a:00): 94, pid=7, Contained: SM (0x1). RST: No, D-RST: No
[ 99.3] NVRM: GPU at PCI:0000:2a:00: GPU-1234
"""


def test_parse_reads_every_xid_line_and_classifies_it():
    events = xid.parse(LOG)
    assert [(e["xid"], e["pci"], e["verdict"]) for e in events] == [
        (63, "0000:10:1c", "warn"), (79, "0000:18:00", "fail"), (13, "0000:2a:00", "pass"), (94, "0000:2a:00", "warn")]
    assert events[0]["pci_key"] == (0, 0x10, 0x1c)
    assert events[1]["reason"] == "GPU has fallen off the bus"
    assert events[2]["reason"] == "not judged by DCGM's health watches"
    assert events[1]["line"].startswith("Dec 05 07:00:01 gpu01 kernel: NVRM: Xid")


@pytest.mark.parametrize("number, verdict", [
    (48, "fail"), (64, "fail"), (74, "fail"), (79, "fail"), (95, "fail"), (119, "fail"), (120, "fail"), (140, "fail"),
    (94, "warn"), (31, "warn"), (43, "warn"), (63, "warn"), (13, "pass"), (45, "pass"), (68, "pass"),
])
def test_classes_follow_dcgm_build_xid_mappings(number, verdict):
    assert xid.classify(number)[0] == verdict


@pytest.mark.parametrize("text, key", [
    ("00000000:18:00.0", (0, 0x18, 0)), ("0000:18:00", (0, 0x18, 0)), ("PCI:0000:10:1c", (0, 0x10, 0x1c)),
    ("", None), (None, None), ("zz:yy:xx", None), ("18:00", None),
])
def test_pci_key(text, key):
    assert xid.pci_key(text) == key


def test_a_given_file_is_read_and_a_missing_one_named(tmp_path):
    log = tmp_path / "kern.log"
    log.write_text(LOG)
    got = xid.since_boot(str(log))
    assert got["source"] == str(log) and got["unreadable"] == [] and len(got["events"]) == 4
    missing = xid.since_boot(str(tmp_path / "nope.log"))
    assert missing == {"source": None, "events": None,
                       "unreadable": ["%s: No such file or directory" % (tmp_path / "nope.log")]}


def test_without_journalctl_or_dmesg_each_source_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # neither command can be found
    got = xid.since_boot()
    assert got["events"] is None
    assert got["unreadable"] == ["journalctl -k -b 0 --no-pager -o short-monotonic: not installed",
                                 "dmesg: not installed"]


def test_a_refusing_or_silent_source_is_named_and_the_next_one_read(monkeypatch, tmp_path):
    (tmp_path / "journalctl").write_text("#!/bin/sh\necho 'Hint: You are currently not seeing messages' >&2\n")
    (tmp_path / "dmesg").write_text("#!/bin/sh\nprintf '%s'\n" % LOG.splitlines()[1].replace("%", "%%"))
    for name in ("journalctl", "dmesg"):
        os.chmod(tmp_path / name, 0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    got = xid.since_boot()
    assert got["source"] == "dmesg"
    assert got["unreadable"] == ["journalctl -k -b 0 --no-pager -o short-monotonic: no kernel messages visible: "
                                 "Hint: You are currently not seeing messages"]
    assert [e["xid"] for e in got["events"]] == [63]


def test_a_failing_source_gives_its_last_error_line(monkeypatch, tmp_path):
    (tmp_path / "dmesg").write_text("#!/bin/sh\necho 'dmesg: read kernel buffer failed: Operation not permitted' >&2\n"
                                    "exit 1\n")
    os.chmod(tmp_path / "dmesg", 0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    got = xid.since_boot()
    assert got["unreadable"][-1] == "dmesg: exit 1: dmesg: read kernel buffer failed: Operation not permitted"


def test_worst():
    assert xid.worst([]) == "pass"
    assert xid.worst([{"verdict": "pass"}, {"verdict": "warn"}]) == "warn"
    assert xid.worst([{"verdict": "fail"}, {"verdict": "warn"}]) == "fail"
