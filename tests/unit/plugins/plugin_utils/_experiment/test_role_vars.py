# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_experiment/role_vars.py: each variant's role variables (its server settings, its speculative dict,
the other speculative inputs emptied) over the role's own defaults/main.yml, and a computed default
refused unless every variant of the engine sets it."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import role_vars


def variant(name, server=None, speculative=None):
    return {"name": name, "role": "sglang_server", "vars_prefix": "sglang_server_", "server": server or {},
            "speculative": speculative}


def test_a_variant_sets_its_server_and_speculative_settings_and_empties_the_rest():
    defaults = role_vars.role_defaults("sglang_server")
    assert "sglang_server_tp_size" in defaults
    out = role_vars.variant_vars(variant("v", {"tp_size": 4, "mem_fraction_static": None}, {"algorithm": "EAGLE3"}),
                                 defaults)
    assert out["sglang_server_tp_size"] == 4 and "sglang_server_mem_fraction_static" not in out
    assert out["sglang_server_speculative"] == {"algorithm": "EAGLE3"}
    emptied = out["sglang_server_speculative_args"]
    assert not emptied and isinstance(emptied, type(defaults["sglang_server_speculative_args"]))


def test_the_experiment_gets_every_set_key_with_the_roles_default():
    exp = role_vars.add_role_vars({"variants": [variant("a", {"tp_size": 4}), variant("b")]})
    defaults = role_vars.role_defaults("sglang_server")
    assert exp["defaults"]["sglang_server_tp_size"] == defaults["sglang_server_tp_size"]
    assert exp["variants"][1]["role_vars"]["sglang_server_speculative"] is None


def test_a_computed_default_set_by_some_variants_only_is_refused():
    defaults = role_vars.role_defaults("sglang_server")
    computed = sorted(k for k, v in defaults.items() if isinstance(v, str) and "{{" in v)
    if not computed:
        pytest.skip("sglang_server has no computed default")
    key = computed[0][len("sglang_server_"):]
    with pytest.raises(InvalidInput, match="e.yml: server.%s is set by some variants but not by b; its default is computed"
                       % key):
        role_vars.add_role_vars({"file": "e.yml", "variants": [variant("a", {key: "x"}), variant("b")]})
