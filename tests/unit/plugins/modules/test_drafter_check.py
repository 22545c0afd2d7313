# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/drafter_check.py: the options it documents are its real argument spec, names and defaults
(tests/support/module_docs.py); run on a drafter's and a target's config.json written here, it passes a
matching pair and refuses a mismatch naming the field (every check: module_utils/_server/test_drafter.py)."""

from __future__ import annotations

import json

from tests.support import module_docs

TARGET = {"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, "vocab_size": 163840,
          "num_hidden_layers": 61}
DRAFTER = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 7168, "vocab_size": 163840,
           "draft_vocab_size": 32000, "num_hidden_layers": 1,
           "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 29, 57]}}


def model(path, config):
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config))
    return str(path)


def test_documented_options_are_the_argument_spec():
    assert module_docs.mismatches("drafter_check") == []


def test_a_matching_pair_passes_and_a_mismatch_names_the_field(tmp_path):
    target = model(tmp_path / "target", TARGET)
    res = module_docs.run("drafter_check", {"draft_model_path": model(tmp_path / "drafter", DRAFTER),
                                            "target_model_path": target})
    assert res["_rc"] == 0 and not res.get("failed") and res["changed"] is False, res.get("msg")
    res = module_docs.run("drafter_check", {"draft_model_path": model(tmp_path / "small", dict(DRAFTER, hidden_size=4096)),
                                            "target_model_path": target})
    assert res["failed"] and "hidden_size differs: drafter hidden_size=4096, target hidden_size=7168" in res["msg"]
