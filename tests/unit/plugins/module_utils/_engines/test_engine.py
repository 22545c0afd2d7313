# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_engines/engine.py: the version probe run by a real interpreter (the simulator's, whose sglang
package has no distribution metadata, so the probe's fallback to __version__ is taken; this
interpreter, without sglang, fails loudly), the console script beside the interpreter, option
merging and the field list (each engine defining every field: test_registry.py)."""

from __future__ import annotations

import subprocess
import sys

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import engine as _engine
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from tests.support.paths import SIM_PYTHON


def probe(python, engine):
    return subprocess.run([python, "-c", registry.get(engine).version_probe()], capture_output=True, text=True,
                          timeout=60, check=False)


def test_the_version_probe_reads_the_package_version_or_its_dunder_version():
    out = probe(SIM_PYTHON, "sglang")
    assert out.returncode == 0 and out.stdout.strip() == "0.5.23", out.stderr
    missing = probe(sys.executable, "sglang")
    assert missing.returncode != 0 and "ModuleNotFoundError: No module named 'sglang'" in missing.stderr


def test_the_console_script_sits_beside_the_interpreter_or_on_path():
    sglang = registry.get("sglang")
    assert sglang.entry_point("/opt/venv/bin/python3") == "/opt/venv/bin/" + sglang.console_script
    assert sglang.entry_point("python3") == sglang.console_script


def test_merged_options_join_lists_and_let_given_keys_win():
    assert _engine.merge_option(["--a", "1"], ["--b"]) == ["--a", "1", "--b"]
    assert _engine.merge_option(["--a"], None) == ["--a"]
    assert _engine.merge_option({"method": "eagle3", "k": 1}, {"k": 2}) == {"method": "eagle3", "k": 2}
    assert _engine.merge_option({"k": 1}, None) == {"k": 1}


def test_a_rule_is_compiled_and_the_fields_are_the_engine_dataclass():
    rule = _engine.compile_rule("loading_weights", r"Load weight begin", unsure="maybe")
    assert rule.pattern.search("[x] Load weight begin. avail mem=1 GB") and rule.unsure == "maybe"
    assert rule.phase == "loading_weights"
    assert "console_script" in _engine.fields() and len(_engine.fields()) == len(set(_engine.fields()))
