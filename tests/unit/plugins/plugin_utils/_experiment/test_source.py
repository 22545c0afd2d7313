# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading an experiment file someone else wrote (plugin_utils/_experiment/source.py): an alias
bomb, a recursive alias, a python tag, a huge, endless or blocking file and deep nesting are each
refused with the file, the line and the reason, within a bounded time, never a bare RecursionError
or ConstructorError."""

from __future__ import annotations

import os
import textwrap
import threading
import time

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import source
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.source import Source, path_text

# The "billion laughs": nine levels of nine aliases, 9^9 values from a few hundred bytes.
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    "%s: &%s [%s]\n" % (c, c, ", ".join(["*" + p] * 9)) for p, c in zip("abcdefgh", "bcdefghi"))
MERGE_BOMB = "a: &a {k0: 1, k1: 1, k2: 1, k3: 1, k4: 1, k5: 1, k6: 1, k7: 1, k8: 1}\n" + "".join(
    "%s: &%s {<<: [%s]}\n" % (c, c, ", ".join(["*" + p] * 9)) for p, c in zip("abcdefgh", "bcdefghi"))


def write(tmp_path, text, name="exp.experiment.yml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def refused(file, *words):
    """The message Source(FILE) is refused with, asserted to hold every one of WORDS; quickly."""
    start = time.monotonic()
    with pytest.raises(InvalidInput) as info:
        Source(file)
    assert time.monotonic() - start < 5, "refused only after %.1f s" % (time.monotonic() - start)
    for word in words:
        assert word in info.value.msg, info.value.msg
    return info.value.msg


@pytest.mark.parametrize("text, line", [(BOMB, 5), (MERGE_BOMB, 4)])
def test_an_alias_bomb_is_refused_at_its_line(tmp_path, text, line):
    assert len(text) < 600
    file = write(tmp_path, text)
    refused(file, "%s:%d: aliases expand this to" % (file, line), "more than %d" % source.MAX_ALIAS_NODES)


def test_aliases_within_the_budget_read_as_written(tmp_path):
    text = "b: &b {levels: [1, 8], input_len: 16}\nv: [*b, *b, *b]\n"
    assert Source(write(tmp_path, text)).data["v"] == [{"levels": [1, 8], "input_len": 16}] * 3


@pytest.mark.parametrize("text, line", [
    ("x: 1\na: &a [1, *a]\n", 2),
    ("x: 1\na: &a {k: *a}\n", 2),
    ("x: 1\na: &a\n  <<: *a\n  k: 1\n", 2),
])
def test_a_recursive_alias_is_refused_at_its_line(tmp_path, text, line):
    file = write(tmp_path, text)
    refused(file, "%s:%d: the list or mapping anchored here holds an alias to itself" % (file, line))


@pytest.mark.parametrize("text, line, tag", [
    ("x: 1\ny: !!python/object/apply:os.system [echo pwned]\n", 2, "!!python/object/apply:os.system"),
    ("x: !!python/name:os.system ''\n", 1, "!!python/name:os.system"),
    ("x: 1\ny: !!python/object:collections.OrderedDict {a: 1}\n", 2, "!!python/object:collections.OrderedDict"),
    ("x: !!binary aGk=\n", 1, "!!binary"),
    ("x: !!set {a, b}\n", 1, "!!set"),
    ("x: !!omap [a: 1]\n", 1, "!!omap"),
    ("x: !local 1\n", 1, "!local"),
    ("? !!python/tuple [a, b]\n: 1\n", 1, "!!python/tuple"),
])
def test_every_tag_but_a_plain_values_is_refused(tmp_path, text, line, tag):
    file = write(tmp_path, text)
    refused(file, "%s:%d:" % (file, line), "the tag %s is refused" % tag)


def test_a_tagged_value_that_is_not_what_its_tag_says_names_its_line(tmp_path):
    file = write(tmp_path, "x: 1\ny: !!int twelve\n")
    refused(file, "%s:2: y: 'twelve' is not a valid !!int" % file)


def test_a_date_stays_the_text_written(tmp_path):
    assert Source(write(tmp_path, "name: 2026-05-01\n")).data == {"name": "2026-05-01"}


def test_deep_nesting_is_refused(tmp_path):
    file = write(tmp_path, "x: " + "[" * 40 + "]" * 40 + "\n")
    refused(file, "%s:1: lists or mappings nested more than %d deep" % (file, source.MAX_DEPTH))
    deeper = write(tmp_path, "x: " + "[" * 20000 + "]" * 20000 + "\n", "deep.yml")
    refused(deeper, "%s: lists or mappings nested deeper than the parser follows" % deeper)


def test_a_file_over_the_size_bound_is_refused_unread(tmp_path):
    file = write(tmp_path, "x: 1\n" + "#" * source.MAX_BYTES + "\n")
    refused(file, "the experiment file %s is %d bytes, more than %d" % (file, file.stat().st_size,
                                                                        source.MAX_BYTES))


def test_a_device_is_refused_not_read():
    refused("/dev/zero", "the experiment file /dev/zero is not a regular file")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "exp.experiment.yml"
    os.mkfifo(fifo)
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(pytest.raises(InvalidInput, Source, fifo)),
                              daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():  # unblock the reader so the test run ends
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "w"):
            pass
        reader.join(5)
        pytest.fail("reading a FIFO blocked")
    assert "is not a regular file" in str(outcome[0].value)


def test_a_directory_is_refused(tmp_path):
    refused(tmp_path, "the experiment file %s is not a regular file" % tmp_path)


FILE = textwrap.dedent("""\
    reference: base
    common: &common {tp_size: 8}
    variants:
      - name: base
        engine: sglang
      - name: eagle
        engine: sglang
        server:
          <<: *common
          mem_fraction_static: 0.8
    """)


def write_e(tmp_path, text, name="e.yml"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_the_data_and_the_line_of_every_key_and_item(tmp_path):
    src = Source(write_e(tmp_path, FILE))
    assert src.data["variants"][1]["server"] == {"tp_size": 8, "mem_fraction_static": 0.8}
    assert src.checksum.startswith("sha256:") and len(src.checksum) == 7 + 64
    assert src.where(("variants", 1, "server", "mem_fraction_static")) == \
        "%s:10: variants[1].server.mem_fraction_static" % src.file
    assert src.line(("variants", 1, "name")) == 6
    assert src.line(("variants", 1, "server", "not_there")) == 8  # the nearest enclosing key
    err = src.error(("variants", 0, "engine"), "unknown engine")
    assert isinstance(err, InvalidInput) and err.msg == "%s:5: variants[0].engine: unknown engine" % src.file


@pytest.mark.parametrize("text, message", [
    ("reference: a\nreference: b\n", ":2: reference: reference is set twice; keep one"),
    ("variants: [\n", ": not valid YAML: "),
    (b"name: caf\xe9\n", ": not valid YAML: "),
    ("? [a, b]\n: 1\n", ": (top level): a key must be a plain word, not a list or a mapping"),
])
def test_bad_files_are_refused_naming_the_file(tmp_path, text, message):
    with pytest.raises(InvalidInput) as err:
        Source(write_e(tmp_path, text))
    assert err.value.msg.startswith(str(tmp_path / "e.yml")) and message in err.value.msg, err.value.msg


def test_a_missing_file_and_a_given_experiment(tmp_path):
    with pytest.raises(InvalidInput, match="cannot read the experiment file .*/none.yml: No such file or directory"):
        Source(tmp_path / "none.yml")
    data = {"reference": "base", "variants": [{"name": "base"}]}
    given = Source.given(data, "the preset")
    assert given.data == data and given.data is not data and given.checksum == Source.given(dict(data), "x").checksum
    assert given.where(("variants", 0, "name")) == "the preset: variants[0].name"
    assert path_text(()) == "(top level)" and path_text(("a", 0, "b")) == "a[0].b"
