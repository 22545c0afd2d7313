# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks that an EAGLE-3 drafter fits its target, before a 20-minute launch finds out."""

from __future__ import annotations

import json
import os

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput


def load_config(model_path: str, role: str) -> dict:
    path = os.path.join(model_path, "config.json")
    try:
        with open(path) as handle:
            config = json.load(handle)
    except OSError as exc:
        raise InvalidInput("%s config %s cannot be read (%s); check the %s model path"
                           % (role, path, exc.strerror, role))
    except ValueError as exc:
        raise InvalidInput("%s config %s is not valid JSON (%s)" % (role, path, exc))
    # Multimodal targets (Kimi-K2.5) keep the language model's fields apart.
    return config.get("text_config", config) if role == "target" else config


def check_speculative_numbers(num_steps: int | None, eagle_topk: int | None, num_draft_tokens: int | None) -> None:
    given = [v is not None for v in (num_steps, eagle_topk, num_draft_tokens)]
    if any(given) and not all(given):
        raise InvalidInput("num_steps, eagle_topk and num_draft_tokens go together: set all three or none "
                           "(got num_steps=%s, eagle_topk=%s, num_draft_tokens=%s)"
                           % (num_steps, eagle_topk, num_draft_tokens))
    if all(given):
        for name, value in (("num_steps", num_steps), ("eagle_topk", eagle_topk), ("num_draft_tokens", num_draft_tokens)):
            if value < 1:
                raise InvalidInput("%s must be at least 1 (got %s)" % (name, value))
        if eagle_topk == 1 and num_draft_tokens != num_steps + 1:
            raise InvalidInput("with eagle_topk 1, num_draft_tokens must be num_steps + 1: num_draft_tokens=%d, "
                               "num_steps=%d (expected %d)" % (num_draft_tokens, num_steps, num_steps + 1))


def check_pair(drafter: dict, target: dict, engine: str = "") -> dict:
    """Raise InvalidInput naming the field and both values at the first mismatch (the architectures
    first: the ones ENGINE loads as an EAGLE-3 draft model, Engine.check_drafter)."""
    archs = drafter.get("architectures") or []
    _registry.get(engine).check_drafter(archs)
    for field in ("hidden_size", "vocab_size"):
        if drafter.get(field) != target.get(field):
            raise InvalidInput("%s differs: drafter %s=%s, target %s=%s"
                               % (field, field, drafter.get(field), field, target.get(field)))
    draft_vocab = drafter.get("draft_vocab_size")
    if draft_vocab is not None and draft_vocab > drafter.get("vocab_size", 0):
        raise InvalidInput("draft_vocab_size=%s exceeds vocab_size=%s" % (draft_vocab, drafter.get("vocab_size")))
    layers = target.get("num_hidden_layers")
    aux = (drafter.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids") or []
    for layer in aux:
        if layers is not None and layer >= layers:
            raise InvalidInput("eagle_aux_hidden_state_layer_ids has %s, not below the target's "
                               "num_hidden_layers=%s" % (layer, layers))
    return {"architectures": archs, "hidden_size": drafter.get("hidden_size"),
            "vocab_size": drafter.get("vocab_size"), "draft_vocab_size": draft_vocab,
            "aux_layer_ids": aux, "target_num_hidden_layers": layers}


def check_drafter(params: dict) -> dict:
    """The drafter_check module's result: the speculative numbers the engine runs (vLLM's chain is
    top-k 1 with steps + 1 draft tokens, whatever the SGLang-only two say) and the pair checked."""
    engine = _registry.get(params.get("engine") or "")
    numbers = engine.speculative_numbers({k: params.get(k) for k in ("num_steps", "eagle_topk", "num_draft_tokens")})
    check_speculative_numbers(numbers["num_steps"], numbers["eagle_topk"], numbers["num_draft_tokens"])
    drafter = check_pair(load_config(params["draft_model_path"], "drafter"),
                         load_config(params["target_model_path"], "target"), engine.name)
    return {"changed": False, "drafter": drafter}
