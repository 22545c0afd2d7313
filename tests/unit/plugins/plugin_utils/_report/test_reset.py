# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/reset.py: reset.yml's record of a host (clean, dirty, unreachable) and its table."""

from __future__ import annotations

from jinja2 import Environment

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import reset

RELEASE = {
    "elapsed": 1.5,
    "killed": [{"cmdline": "sglang::scheduler_TP0", "signals": ["SIGTERM"]},
               {"cmdline": "python -m sglang.launch_server " + "x" * 100, "signals": ["SIGTERM", "SIGKILL"]}],
    "gpus": [{"index": 0, "free": True}, {"index": 1, "free": True}],
    "protected_holders": [{"cmdline": "nvidia-persistenced"}],
}


def test_reset_summary_of_a_clean_host():
    r = reset.reset_summary(RELEASE, "h1")
    assert r["outcome"] == "clean" and r["reason"] == ""
    assert (r["killed"], r["sigkilled"], r["gpus_selected"], r["gpus_free"]) == (2, 1, 2, 2)
    assert r["protected_holders"] == ["nvidia-persistenced"]
    assert r["seconds"] == 1.5
    # As Jinja's truncate(80) cut the command lines.
    jinja = Environment().from_string("{{ s | truncate(80) }}")
    assert r["killed_commands"] == [jinja.render(s=k["cmdline"]) for k in RELEASE["killed"]]
    assert "failed_to_kill" not in r


def test_reset_summary_drops_the_interpreters_directory():
    # What was killed must survive the cut, however deep the interpreter lives.
    cmd = "/" + "d/" * 40 + "python3 -c from multiprocessing.resource_tracker import main;main(7)"
    release = dict(RELEASE, killed=[{"cmdline": cmd, "signals": ["SIGKILL"]}])
    (line,) = reset.reset_summary(release, "h1")["killed_commands"]
    assert line == "python3 -c from multiprocessing.resource_tracker import main;main(7)"
    assert reset.reset_summary(dict(RELEASE, killed=[{"cmdline": "/" + "d/" * 60 + "x"}]), "h1")["killed_commands"] == ["x"]


def test_reset_summary_of_a_dirty_host_takes_the_failed_release():
    failed = dict(RELEASE, failed=True, msg="GPU 1: 2048 MiB used\n",
                  gpus=[{"index": 0, "free": True}, {"index": 1, "free": False}, {"index": 2}],
                  failed_to_kill=[{"cmdline": "stuck"}, {}])
    r = reset.reset_summary(failed, "h2", failure=failed)
    assert r["outcome"] == "dirty" and r["reason"] == "GPU 1: 2048 MiB used"
    assert r["gpus_used"] == [1] and r["gpus_free"] == 1 and r["gpus_selected"] == 3
    assert r["failed_to_kill"] == ["stuck", "?"]


def test_reset_summary_of_an_unreachable_host():
    lost = {"unreachable": True, "msg": "ssh: refused"}
    r = reset.reset_summary(lost, "h3", failure={"failed": True, "msg": "unreachable: ssh: refused"}, unreachable=True)
    assert r["outcome"] == "unreachable" and r["reason"] == "unreachable: ssh: refused"
    assert (r["killed"], r["gpus_selected"], r["seconds"]) == (0, 0, None)
    assert reset.reset_summary({}, "h4", failure={"unreachable": True, "msg": "x"})["outcome"] == "unreachable"


def test_reset_table():
    clean = reset.reset_summary(RELEASE, "h1")
    dirty = dict(clean, host="h0", outcome="dirty", reason="GPU 3 busy", gpus_selected=0, seconds=None)
    lines = reset.reset_table([clean, dirty], ["h9"])
    assert lines[0] == reset.RESET_HEADER
    assert lines[1] == "%-14s %-11s %8s %9s %8s  %s" % ("h0", "dirty", 2, "-", "-", "GPU 3 busy")
    row = ("h1", "clean", 2, "2/2", "1.50", "SIGKILL: 1; protected: nvidia-persistenced")
    assert lines[2] == "%-14s %-11s %8s %9s %8s  %s" % row
    assert lines[3].split()[:2] == ["h9", "no"] and lines[3].endswith("the host left the play (see above)")
