# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_experiment/source.py: an experiment file read with the line of every key and item (errors name
FILE:LINE: PATH), merge keys applied, a key set twice and files that are no YAML refused; a given
experiment names its origin and has no lines."""

from __future__ import annotations

import textwrap

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.source import Source, path_text

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


def write(tmp_path, text, name="e.yml"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_the_data_and_the_line_of_every_key_and_item(tmp_path):
    src = Source(write(tmp_path, FILE))
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
        Source(write(tmp_path, text))
    assert err.value.msg.startswith(str(tmp_path / "e.yml")) and message in err.value.msg, err.value.msg


def test_a_missing_file_and_a_given_experiment(tmp_path):
    with pytest.raises(InvalidInput, match="cannot read the experiment file .*/none.yml: No such file or directory"):
        Source(tmp_path / "none.yml")
    data = {"reference": "base", "variants": [{"name": "base"}]}
    given = Source.given(data, "the preset")
    assert given.data == data and given.data is not data and given.checksum == Source.given(dict(data), "x").checksum
    assert given.where(("variants", 0, "name")) == "the preset: variants[0].name"
    assert path_text(()) == "(top level)" and path_text(("a", 0, "b")) == "a[0].b"
