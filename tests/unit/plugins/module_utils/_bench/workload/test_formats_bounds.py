# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Workload files within bounds (module_utils/_bench/workload/formats.py): only a regular file is
read (/dev/zero, a FIFO or a socket is refused at once, without blocking), within a size, a line
length and a read deadline; a lone surrogate is refused naming the file, the line and the field."""

from __future__ import annotations

import json
import os
import socket
import threading

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload import formats
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.items import WorkloadError
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.sample import load_workload


def load(path, fmt="auto"):
    return load_workload({"source": "file", "path": str(path), "format": fmt}, 1)


def refused_within(seconds, path):
    """The message loading PATH is refused with; fails if it took longer than SECONDS (or blocked)."""
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(pytest.raises(WorkloadError, load, path)), daemon=True)
    reader.start()
    reader.join(seconds)
    assert not reader.is_alive(), "reading %s blocked" % path
    assert outcome, "no WorkloadError"
    return outcome[0].value.msg


def test_a_device_is_refused_not_read():
    assert "workload /dev/zero: not a regular file" in refused_within(5, "/dev/zero")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "w.jsonl"
    os.mkfifo(fifo)
    try:
        assert "not a regular file" in refused_within(5, fifo)
    finally:  # a reader still blocked in open() gets its writer, so the run ends
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "w.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        assert "not a regular file" in refused_within(5, path)


def test_a_file_over_the_size_bound_is_refused_unread(tmp_path, monkeypatch):
    path = tmp_path / "w.jsonl"
    path.write_text('{"prompt": "hello"}\n' * 10)
    monkeypatch.setattr(formats, "MAX_BYTES", 100)
    assert "%d bytes, more than 100" % path.stat().st_size in refused_within(5, path)


def test_a_line_over_the_length_bound_names_its_line(tmp_path, monkeypatch):
    path = tmp_path / "w.jsonl"
    path.write_text('{"prompt": "hello"}\n{"prompt": "%s"}\n' % ("x" * 200))
    monkeypatch.setattr(formats, "MAX_LINE_BYTES", 100)
    assert "workload %s line 2: a line of 214 characters, more than 100" % path in refused_within(5, path)
    path.write_text('{"prompt": "%s"}\n' % ("x" * 200))  # the first line, read to tell the format
    assert "workload %s line 1: a line of" % path in refused_within(5, path)


def test_a_read_past_the_deadline_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "w.jsonl"
    path.write_text('{"prompt": "hello"}\n')
    monkeypatch.setattr(formats, "READ_SECONDS", -1.0)
    assert "reading took more than" in refused_within(5, path)


@pytest.mark.parametrize("rows, fmt, where", [
    ([{"prompt": "ok"}, {"prompt": "bad \ud800 text"}], "jsonl", "line 2.prompt"),
    ([{"prompt": "ok", "category": "c\udfff"}], "jsonl", "line 1.category"),
    ([{"messages": [{"role": "user", "content": "x\ud83d"}], "max_tokens": 4}], "openai", "line 1.messages[0].content"),
    ([{"conversations": [{"value": "q"}, {"value": "a"}]},
      {"conversations": [{"value": "q"}, {"value": "\udc00"}]}], "sharegpt", "[1].conversations[1].value"),
])
def test_a_lone_surrogate_is_refused_naming_file_line_and_field(tmp_path, rows, fmt, where):
    path = tmp_path / "w.json"
    text = json.dumps(rows) if fmt == "sharegpt" else "".join(json.dumps(r) + "\n" for r in rows)
    assert "\\ud" in text  # written as JSON escapes, as a careless converter writes them
    path.write_text(text)
    with pytest.raises(WorkloadError) as info:
        load(path, fmt)
    assert "workload %s %s: holds a lone surrogate" % (path, where) in info.value.msg, info.value.msg


def test_a_paired_surrogate_escape_is_one_character(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text('{"prompt": "smile \\ud83d\\ude00"}\n')
    assert load(path, "jsonl").items[0].messages[0]["content"] == "smile \U0001f600"


def test_the_controller_refuses_a_device_before_copying_it():
    assert formats.regular_file_problem(os.stat("/dev/zero")).startswith("not a regular file")
