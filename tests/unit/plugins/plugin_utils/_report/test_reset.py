# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/reset.py: reset.yml's record of a host (clean, dirty, unreachable) and its table."""

from __future__ import annotations

from pathlib import Path

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
    dirty = dict(clean, host="h0", outcome="dirty", reason="GPU 3 busy", gpus_selected=0, seconds=None,
                 killed_commands=[])
    lines = reset.reset_table([clean, dirty], ["h9"])
    assert lines[0] == reset.RESET_HEADER
    assert lines[1] == "%-14s %-11s %8s %9s %8s  %s" % ("h0", "dirty", 2, "-", "-", "GPU 3 busy")
    row = ("h1", "clean", 2, "2/2", "1.50", "SIGKILL: 1; protected: nvidia-persistenced")
    assert lines[2] == "%-14s %-11s %8s %9s %8s  %s" % row
    # The commands killed, under the row.
    assert lines[3] == "  killed 2: sglang::scheduler_TP0; " + clean["killed_commands"][1]
    assert lines[4].split()[:2] == ["h9", "no"] and lines[4].endswith("the host left the play (see above)")


PREVIEW = {
    "elapsed": 0.4, "changed": True,
    "killed": [{"cmdline": "sglang::scheduler_TP%d" % i, "signals": []} for i in range(3)]
    + [{"cmdline": "/usr/bin/python3 -m sglang.launch_server --tp 8", "signals": []}],
    # Check mode: no "after", no "free"; GPU 3 holds no memory, only a daemon's open file.
    "gpus": [{"index": i, "before": {"used_mib": 0 if i == 3 else 70000}, "after": None,
              "holders": [{"cmdline": "nvidia-persistenced"}]} for i in range(5)],
}


def test_a_preview_says_what_a_real_run_would_kill_never_clean():
    r = reset.reset_summary(PREVIEW, "h1", check=True)
    assert r["outcome"] == reset.WOULD_KILL and r["check"] is True
    assert r["gpus_in_use"] == [0, 1, 2, 4] and (r["gpus_free"], r["gpus_selected"]) == (1, 5)
    row, killed = reset.reset_table([r])[1:]
    assert row == "%-14s %-11s %8s %9s %8s  %s" % ("h1", "would kill", 4, "1/5", "0.40", "GPUs in use now: 0-2,4")
    assert killed == "  would kill 4: 3 x sglang::scheduler_TP*; python3 -m sglang.launch_server --tp 8"
    assert "clean" not in row + killed


def test_a_preview_of_a_free_host_and_of_one_that_would_stay_dirty():
    free = dict(PREVIEW, killed=[], gpus=[{"index": 0, "before": {"used_mib": 0}}])
    r = reset.reset_summary(free, "h1", check=True)
    assert (r["outcome"], r["gpus_in_use"], r["gpus_free"]) == (reset.NO_CHANGE, [], 1)
    assert reset.reset_table([r])[1:] == ["%-14s %-11s %8s %9s %8s  %s" % ("h1", "no change", 0, "1/1", "0.40",
                                                                           "every GPU free now")]
    failed = dict(PREVIEW, failed=True, msg="GPU 4 would still have 2048 MiB used after a real run (check mode)")
    r = reset.reset_summary(failed, "h2", failure=failed, check=True)
    assert r["outcome"] == reset.WOULD_FAIL and r["reason"].startswith("GPU 4 would")
    assert reset.reset_table([r])[2].startswith("  would kill 4:")


def test_the_ok_outcomes_are_those_reset_yml_passes():
    # reset.yml spells the list out for not_ok; the two must agree.
    playbook = (Path(__file__).resolve().parents[5] / "playbooks" / "reset.yml").read_text()
    assert "ok=%s" % list(reset.OK_OUTCOMES) in playbook.replace('"', "'")


def test_grouped_commands_and_gpu_ranges():
    assert reset.grouped_commands(["VLLM::Worker_TP1", "a b1", "VLLM::Worker_TP0", "x"]) == [
        "2 x VLLM::Worker_TP*", "a b1", "x"]
    assert reset.grouped_commands(["VLLM::Worker_TP1", "x"]) == ["VLLM::Worker_TP1", "x"]
    assert reset.gpu_ranges([5, 0, 1, 2, 7, 6]) == "0-2,5-7"
    assert reset.gpu_ranges([]) == ""


def test_the_table_shows_names_and_commands_as_text_and_the_record_keeps_them():
    hostile = "h|1 `x` *b*\n\x1b[31m<b>"
    release = {"killed": [{"cmdline": hostile}], "gpus": [{"index": 0, "free": True}],
               "protected_holders": [{"cmdline": hostile}]}
    clean = reset.reset_summary(release, hostile)
    dirty = reset.reset_summary(release, hostile + "2", failure={"msg": hostile})
    assert clean["host"] == hostile and clean["killed_commands"] == [hostile] and dirty["reason"] == hostile
    table = reset.reset_table([clean, dirty], missing=[hostile + "3"])
    assert len(table) == 1 + 2 + 1 + 1  # header, two hosts, the killed line under the clean one, the missing one
    for line in table[1:]:
        assert "\n" not in line and "\x1b" not in line and "<b>" not in line and "`x`" not in line, line
        assert r"h\|1 \`x\` \*b\* \[31m\<b\>" in line, line
