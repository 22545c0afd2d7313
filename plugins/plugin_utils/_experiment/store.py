# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The experiment's results on the controller, one file per host and variant, for resuming.

Layout: RESULTS_DIR/records/HOST/VARIANT.json, written (write_record, through the
experiment_record action) as each variant finishes: the variant record (_fleet's experiment_variant.yml: variant, outcome, stage, reason, bench,
server, teardown) plus `fingerprint`, `host` and `finished_at`. Host and variant names are
quoted into file names (record_file), since a variant name may hold '/' or start with '.'.

A record counts only while its fingerprint is the variant's current one on its host (the
experiment's `host_fingerprints`, host_fingerprint.py: its own settings and the host's; without
them the variant's own): a variant whose settings changed since is run again. Starting fresh moves records/ aside, never deletes it.
"""

from __future__ import annotations

import datetime
import json
import os

from ansible_collections.gpufleet.serving.plugins.module_utils._files import file_name

RECORDS = "records"
# Longest quoted name kept whole; longer ones end in a digest (file names stop at 255 bytes).
MAX_NAME = 200


def safe_name(name):
    """NAME as one file name: percent-quoted, never '.', '..' or hidden, at most MAX_NAME + 17 bytes."""
    return file_name(name, MAX_NAME)


def records_dir(results_dir):
    return os.path.join(os.path.abspath(os.path.expanduser(str(results_dir))), RECORDS)


def record_file(results_dir, host, variant):
    """Where the record of VARIANT on HOST is kept."""
    return os.path.join(records_dir(results_dir), safe_name(host), safe_name(variant) + ".json")


def _read(path):
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, "%s: unreadable (%s), so that variant runs again" % (path, exc)
    if not isinstance(data, dict):
        return None, "%s: not a JSON object, so that variant runs again" % path
    return data, None


def current_fingerprint(experiment, host, name):
    """Variant NAME's fingerprint on HOST: the host's (`host_fingerprints`) where known, else its own."""
    on_host = (experiment.get("host_fingerprints") or {}).get(host) or {}
    if name in on_host:
        return on_host[name]
    return next(v["fingerprint"] for v in experiment["variants"] if v["name"] == name)


def scan(results_dir, experiment):
    """{"recorded": {host: {variant: record}} (fingerprint matches), "stale": {host: {variant: record}}
    (recorded with other settings), "problems": [str]} over the experiment's assignments."""
    out = {"recorded": {}, "stale": {}, "problems": []}
    for host, names in experiment["assignments"].items():
        prints = {name: current_fingerprint(experiment, host, name) for name in names}
        out["recorded"][host], out["stale"][host] = {}, {}
        for name in names:
            record, problem = _read(record_file(results_dir, host, name))
            if problem:
                out["problems"].append(problem)
            if record is None:
                continue
            key = "recorded" if record.get("fingerprint") == prints[name] else "stale"
            out[key][host][name] = record
    return out


def recorded(results_dir, experiment):
    """{host: {variant: record}} of the records whose fingerprint is the variant's current one."""
    return scan(results_dir, experiment)["recorded"]


def write_record(path, record, now=None):
    """RECORD with finished_at (UTC, ISO 8601) as PATH, its directory created: written to a
    temporary file beside it, then renamed, so an interruption never leaves half a record (a
    re-run would read it as unreadable and run the variant again). The record as written."""
    out = dict(record, finished_at=(now or datetime.datetime.now(datetime.timezone.utc)).isoformat())
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o755, exist_ok=True)
    partial = os.path.join(directory, ".%s.partial" % os.path.basename(path))
    with open(partial, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=4, sort_keys=True)
        fh.write("\n")
    os.chmod(partial, 0o644)
    os.replace(partial, path)
    return out


def start_fresh(results_dir, now=None):
    """Move RESULTS_DIR/records aside to records.old-YYYYmmddTHHMMSS (UTC); the new path, or None
    when there was nothing to move."""
    src = records_dir(results_dir)
    if not os.path.isdir(src):
        return None
    stamp = (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y%m%dT%H%M%S")
    dest = "%s.old-%s" % (src, stamp)
    n = 1
    while os.path.exists(dest):
        n += 1
        dest = "%s.old-%s-%d" % (src, stamp, n)
    os.rename(src, dest)
    return dest
