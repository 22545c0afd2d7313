# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Names are data, never paths: for any host, label or variant name, the files the _fleet role and
the experiment name after it (the progress file and per-request records on the host, the records
copied to the controller, the experiment's records) are created in their directory and nowhere
else, with a file name the file system takes (no ENAMETOOLONG after a launch).

The role's own expressions are rendered (roles/_fleet/vars/main.yml, tasks/benchmark.yml), with
the collection's file_name filter, and each file is then created where they point."""

from __future__ import annotations

import os
import pathlib

import jinja2
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.serving.plugins.module_utils._files import file_name, joined_file_name, open_owned
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import store
from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.follow import progress_file
from tests.support.paths import REPO

ROLE = pathlib.Path(REPO) / "roles" / "_fleet"
SHARED = "/var/tmp/gpufleet.serving"
HOSTILE = ["x/../../../../tmp/escaped/pwn", "../", "/", "..", ".", ".hidden", "a" * 222, "é" * 200, "h/..",
           "-", "%2F..%2F"]
NAMES = st.one_of(st.sampled_from(HOSTILE),
                  st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                          min_size=1, max_size=260))


def _expressions():
    variables = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    tasks = yaml.safe_load((ROLE / "tasks" / "benchmark.yml").read_text())
    bench = next(t for t in tasks if "gpufleet.serving.llm_benchmark" in t)["gpufleet.serving.llm_benchmark"]
    return {"progress": variables["_fleet_progress_file"], "records": variables["_fleet_request_records"],
            "records_to": bench["request_records_to"]}


EXPRESSIONS = _expressions()
ENV = jinja2.Environment(undefined=jinja2.StrictUndefined)
ENV.filters.update({"gpufleet.serving.file_name": file_name, "realpath": os.path.realpath})


def render(text, **names):
    for name in ("joined_file_name", "file_name", "progress_file"):
        text = text.replace("gpufleet.serving." + name, name)
    ENV.filters["file_name"] = file_name
    ENV.filters["joined_file_name"] = joined_file_name
    ENV.filters["progress_file"] = progress_file
    return ENV.from_string(text).render(omit="__omit__", fleet_bench_progress_file="", **names).strip()


def test_the_role_names_its_files_through_file_name():
    # The progress file's name goes through file_name inside the progress_file filter.
    assert "gpufleet.serving.progress_file(inventory_hostname, fleet_bench_label" in EXPRESSIONS["progress"]
    for text in (EXPRESSIONS["records"], EXPRESSIONS["records_to"]):
        assert "[inventory_hostname, fleet_bench_label] | gpufleet.serving.joined_file_name" in text


@settings(max_examples=150, deadline=None)
@given(one=st.tuples(NAMES, NAMES), two=st.tuples(NAMES, NAMES))
def test_two_hosts_and_labels_never_share_a_file(one, two):
    """Host 'a' with label 'b-c' and host 'a-b' with label 'c' once shared every file."""
    for text in EXPRESSIONS.values():
        paths = [render(text, inventory_hostname=host, fleet_bench_label=label, fleet_bench_records_dir="/r")
                 for host, label in (one, two, ("a", "b-c"), ("a-b", "c"))]
        assert paths[2] != paths[3], paths
        assert (paths[0] == paths[1]) == (one == two), paths


def _files_under(root):
    return {os.path.join(d, f) for d, _dirs, files in os.walk(root) for f in files}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(host=NAMES, label=NAMES)
def test_no_name_creates_a_file_outside_the_results_and_state_directories(tmp_path, host, label):
    state, results = tmp_path / "state", tmp_path / "results"
    results.mkdir(exist_ok=True)
    before = _files_under(tmp_path)
    names = {"inventory_hostname": host, "fleet_bench_label": label, "fleet_bench_records_dir": str(results)}
    progress, records = render(EXPRESSIONS["progress"], **names), render(EXPRESSIONS["records"], **names)
    copied = render(EXPRESSIONS["records_to"], **names)
    assert os.path.dirname(progress) == os.path.dirname(records) == SHARED
    assert os.path.dirname(copied) == str(results / "requests")
    made = [str(state / os.path.basename(progress)), str(state / os.path.basename(records)), copied,
            store.record_file(str(results), host, label)]
    for path in made:  # the module's open, the action's copy, the experiment_record action's write
        if path == copied or path.startswith(str(results / store.RECORDS)):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "a"):
                pass
        else:
            with open_owned(path, "a"):
                pass
    new = _files_under(tmp_path) - before
    assert new <= set(made)
    for path in new:
        assert os.path.realpath(path).startswith((str(state) + os.sep, str(results) + os.sep)), path
        assert len(os.path.basename(path).encode()) <= 255
