"""drafter_check's logic: each mismatch names the field and both values."""
import copy
import json

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._server import drafter as _drafter

TARGET = {"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, "vocab_size": 163840,
          "num_hidden_layers": 61}
DRAFTER = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 7168, "vocab_size": 163840,
           "draft_vocab_size": 32000, "num_hidden_layers": 1,
           "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 29, 57]}}


def with_change(base, path, value):
    out = copy.deepcopy(base)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def test_matching_pair_passes():
    checked = _drafter.check_pair(DRAFTER, TARGET)
    assert checked["aux_layer_ids"] == [1, 29, 57] and checked["target_num_hidden_layers"] == 61


@pytest.mark.parametrize("drafter, target, words", [
    (with_change(DRAFTER, ["architectures"], ["LlamaForCausalLM"]), TARGET, "is not an EAGLE-3 architecture"),
    (with_change(DRAFTER, ["hidden_size"], 4096), TARGET, "hidden_size differs: drafter hidden_size=4096, target hidden_size=7168"),
    (with_change(DRAFTER, ["vocab_size"], 32000), TARGET, "vocab_size differs: drafter vocab_size=32000, target vocab_size=163840"),
    (with_change(DRAFTER, ["draft_vocab_size"], 200000), with_change(TARGET, ["vocab_size"], 163840),
     "draft_vocab_size=200000 exceeds vocab_size=163840"),
    (with_change(DRAFTER, ["eagle_config", "eagle_aux_hidden_state_layer_ids"], [1, 29, 61]), TARGET,
     "eagle_aux_hidden_state_layer_ids has 61, not below the target's num_hidden_layers=61"),
])
def test_mismatches_name_field_and_values(drafter, target, words):
    with pytest.raises(InvalidInput) as err:
        _drafter.check_pair(drafter, target)
    assert words in err.value.msg


@pytest.mark.parametrize("arch", ["LlamaForCausalLMEagle3", "Eagle3DeepseekV2ForCausalLM"])
def test_registered_eagle3_classes_accepted(arch):
    assert _drafter.check_pair(with_change(DRAFTER, ["architectures"], [arch]), TARGET)["architectures"] == [arch]


@pytest.mark.parametrize("arch", ["LlamaForCausalLMEagle", "Qwen2ForCausalLMEagle"])
def test_eagle1_drafter_refused_for_eagle3(arch):
    with pytest.raises(InvalidInput) as err:
        _drafter.check_pair(with_change(DRAFTER, ["architectures"], [arch]), TARGET)
    assert "is an EAGLE-1/2 drafter, not an EAGLE-3 one" in err.value.msg
    assert "LlamaForCausalLMEagle3 or Eagle3DeepseekV2ForCausalLM" in err.value.msg
    assert "--speculative-algorithm EAGLE" in err.value.msg


@pytest.mark.parametrize("arch", ["Eagle3LlamaForCausalLM", "Qwen3ForCausalLMEagle3", "LlamaForCausalLM"])
def test_unregistered_names_refused(arch):
    with pytest.raises(InvalidInput, match="is not an EAGLE-3 architecture SGLang registers"):
        _drafter.check_pair(with_change(DRAFTER, ["architectures"], [arch]), TARGET)


@pytest.mark.parametrize("numbers, words", [
    ((3, None, 4), "set all three or none"),
    ((3, 1, 5), "num_draft_tokens must be num_steps + 1: num_draft_tokens=5, num_steps=3 (expected 4)"),
    ((0, 1, 1), "num_steps must be at least 1"),
])
def test_speculative_numbers_refused(numbers, words):
    with pytest.raises(InvalidInput) as err:
        _drafter.check_speculative_numbers(*numbers)
    assert words in err.value.msg


@pytest.mark.parametrize("numbers", [(None, None, None), (3, 1, 4), (3, 4, 16)])
def test_speculative_numbers_accepted(numbers):
    _drafter.check_speculative_numbers(*numbers)


def test_multimodal_target_reads_text_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["KimiK25"], "text_config": TARGET}))
    assert _drafter.load_config(str(tmp_path), "target")["hidden_size"] == 7168


def test_missing_config_says_which_path(tmp_path):
    with pytest.raises(InvalidInput) as err:
        _drafter.load_config(str(tmp_path / "nope"), "drafter")
    assert "drafter config" in err.value.msg and "config.json cannot be read" in err.value.msg


# vLLM 0.33.0 (engine vllm): method eagle3 renames X to Eagle3X unless X starts or ends with Eagle3
# (vllm/transformers_utils/configs/eagle.py), then loads it from its registry.
@pytest.mark.parametrize("arch", ["LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM", "LlamaForCausalLM",
                                  "Eagle3DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "Qwen3ForCausalLM"])
def test_vllm_loads_these_drafters(arch):
    checked = _drafter.check_pair(with_change(DRAFTER, ["architectures"], [arch]), TARGET, "vllm")
    assert checked["architectures"] == [arch] and checked["hidden_size"] == 7168


@pytest.mark.parametrize("arch, words", [
    ("LlamaForCausalLMEagle", "it is an EAGLE-1/2 drafter"),
    ("MistralForCausalLM", "method eagle3 loads ['Eagle3MistralForCausalLM']"),
    ("Qwen3ForCausalLMEagle3x", "is not an EAGLE-3 architecture vLLM 0.33.0 registers"),
])
def test_vllm_refuses_what_it_cannot_load(arch, words):
    with pytest.raises(InvalidInput) as err:
        _drafter.check_pair(with_change(DRAFTER, ["architectures"], [arch]), TARGET, "vllm")
    assert words in err.value.msg


def test_vllm_still_checks_the_fields():
    with pytest.raises(InvalidInput) as err:
        _drafter.check_pair(with_change(DRAFTER, ["hidden_size"], 4096), TARGET, "vllm")
    assert "hidden_size differs: drafter hidden_size=4096, target hidden_size=7168" in err.value.msg


# SGLang-style numbers (top-k 1, draft tokens 7 != steps + 1) that SGLang refuses; vLLM drafts a
# chain of num_steps tokens (top-k 1, steps + 1 draft tokens), so the module checks those instead.
@pytest.mark.parametrize("engine, refused", [("sglang", True), ("vllm", False)])
def test_module_checks_the_numbers_the_engine_runs(tmp_path, engine, refused):
    for name, config in (("drafter", DRAFTER), ("target", TARGET)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    params = {"engine": engine, "draft_model_path": str(tmp_path / "drafter"),
              "target_model_path": str(tmp_path / "target"), "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 7}
    if refused:
        with pytest.raises(InvalidInput) as err:
            _drafter.check_drafter(params)
        assert "num_draft_tokens must be num_steps + 1" in err.value.msg
    else:
        assert _drafter.check_drafter(params)["drafter"]["hidden_size"] == 7168
