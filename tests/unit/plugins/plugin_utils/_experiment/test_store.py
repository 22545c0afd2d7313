# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Resuming an experiment (plugin_utils/_experiment/store.py; plan.py: test_plan.py): a record counts while its
fingerprint is the variant's; a changed or failed variant runs again; fresh moves the records
aside (not in check mode); names unsafe in file names get safe ones."""

from __future__ import annotations

import datetime
import os

import pytest

from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import store
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.plan import plan


@pytest.mark.parametrize("name", ["a/b", "..", ".", ".hidden", "x" * 300, "ep-tp_size4-mem 0.7 %", "ünï"])
def test_unsafe_names_become_one_plain_file_name(tmp_path, name):
    path = store.record_file(tmp_path, "h1", name)
    base = os.path.basename(path)
    assert os.path.dirname(path) == str(tmp_path / "records" / "h1")
    assert "/" not in base[:-5] and not base.startswith(".") and len(base.encode()) <= 255
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write("{}")
    assert os.listdir(os.path.dirname(path)) == [base]
    assert store.record_file(tmp_path, "h1", name + "!") != path


def test_only_records_of_the_current_settings_count(experiment, kit, tmp_path):
    exp = experiment()
    kit.save(tmp_path, kit.record(exp, "h1", "base", kit.level(1, 60.0)))
    kit.save(tmp_path, dict(kit.record(exp, "h1", "eagle/3", kit.level(1, 60.0)), fingerprint="sha256:old"))
    found = store.scan(tmp_path, exp)
    assert list(found["recorded"]["h1"]) == ["base"] and list(found["stale"]["h1"]) == ["eagle/3"]
    assert store.recorded(tmp_path, exp) == found["recorded"]


def test_an_unreadable_record_runs_again_and_says_so(experiment, kit, tmp_path):
    exp = experiment()
    path = kit.save(tmp_path, kit.record(exp, "h1", "base", kit.level(1, 60.0)))
    path.write_text('{"variant": "ba')
    found = store.scan(tmp_path, exp)
    assert found["recorded"]["h1"] == {} and str(path) in found["problems"][0]


@pytest.mark.parametrize("check_mode", [False, True])
def test_fresh_moves_the_records_aside_never_in_check_mode(experiment, kit, tmp_path, check_mode):
    exp = experiment()
    kit.save(tmp_path, kit.record(exp, "h1", "base", kit.level(1, 60.0)))
    out = plan(exp["file"], ["h1"], str(tmp_path), fresh=True, check_mode=check_mode)
    assert out["todo"] == {"h1": ["base", "eagle/3", "other"]}
    assert out["changed"] is not check_mode
    assert os.path.isdir(tmp_path / "records") is check_mode
    if not check_mode:
        moved = [p for p in os.listdir(tmp_path) if p.startswith("records.old-")]
        assert len(moved) == 1 and os.listdir(tmp_path / moved[0] / "h1") == ["base.json"]
        assert out["lines"][0] == "fresh: moved the earlier records to %s" % (tmp_path / moved[0])
    else:
        assert "would move" in out["lines"][0]


def test_without_resume_every_variant_runs_and_nothing_is_read_or_moved(experiment, kit, tmp_path):
    exp = experiment()
    kit.save(tmp_path, kit.record(exp, "h1", "base", kit.level(1, 60.0)))
    out = plan(exp["file"], ["h1"], str(tmp_path), fresh=True, resume=False)
    assert out["todo"] == {"h1": ["base", "eagle/3", "other"]} and out["recorded"] == {"h1": []}
    assert out["changed"] is False and not [p for p in os.listdir(tmp_path) if p.startswith("records.old-")]
    assert os.listdir(tmp_path / "records" / "h1") == ["base.json"]


def test_start_fresh_never_overwrites_an_earlier_move(tmp_path):
    now = datetime.datetime(2026, 5, 1, 10, 0, 0, tzinfo=datetime.timezone.utc)
    for unused in range(2):
        (tmp_path / "records").mkdir()
        store.start_fresh(tmp_path, now=now)
    assert sorted(os.listdir(tmp_path)) == ["records.old-20260501T100000", "records.old-20260501T100000-2"]
    assert store.start_fresh(tmp_path) is None


def test_a_written_record_is_whole_and_counts_on_the_next_run(experiment, kit, tmp_path):
    exp = experiment()
    record = kit.record(exp, "h1", "eagle/3", kit.level(1, 60.0))
    record.pop("finished_at", None)
    path = store.record_file(tmp_path, "h1", "eagle/3")
    when = datetime.datetime(2026, 5, 1, 10, 0, tzinfo=datetime.timezone.utc)
    written = store.write_record(path, record, now=when)
    assert written == dict(record, finished_at="2026-05-01T10:00:00+00:00")
    # Only the record is left in the directory (no temporary file), readable by all, written by root.
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"
    assert store.scan(tmp_path, exp)["recorded"]["h1"] == {"eagle/3": written}
    # Written again (a variant run again): replaced whole.
    again = store.write_record(path, dict(record, outcome="failed"), now=when)
    assert store.scan(tmp_path, exp)["recorded"]["h1"] == {"eagle/3": again} and again["outcome"] == "failed"
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]


@pytest.mark.parametrize("bench", [None, {"changed": False}, {"changed": False, "levels": []},
                                   {"failed": True, "levels": [{"concurrency": 1}]}])
def test_an_ok_record_without_a_measurement_runs_again(experiment, kit, tmp_path, bench):
    exp = experiment()
    rec = kit.record(exp, "h1", "base")
    if bench is not None:
        rec["bench"] = bench
    kit.save(tmp_path, rec)
    kit.save(tmp_path, kit.record(exp, "h1", "other", kit.level(1, 60.0)))
    out = plan(exp["file"], ["h1"], str(tmp_path))
    assert out["todo"] == {"h1": ["base", "eagle/3"]} and out["recorded"] == {"h1": ["other"]}
    assert "base (recorded as ok without a benchmark measurement: runs again)" in out["lines"][0]
