"""Model directories as the engines read them: config.json (required) and a weights size;
what a model costs to start (its KV cache per token, the start-up phases)."""
import json
import os
from dataclasses import dataclass

GIB = 1024 ** 3
# KV cache bytes a token takes in one layer: MLA's latent (kv_lora_rank 512 + rope 64) in bf16,
# the attention of the simulated models (Kimi-K2.5, DeepSeek-V3's architecture, config.json).
KV_BYTES_PER_TOKEN_PER_LAYER = 576 * 2
# The start-up phases every simulated engine times by its --sim-PHASE-seconds knobs:
# torch.distributed init, weight loading, KV cache allocation, CUDA graph capture.
PHASES = ("init", "load", "kv", "graph")


def phase_seconds(args):
    """{phase: seconds} from an engine's parsed --sim-PHASE-seconds knobs."""
    return {k: getattr(args, "sim_%s_seconds" % k) for k in PHASES}


@dataclass
class Model:
    path: str
    config: dict
    total_bytes: int

    @property
    def architecture(self):
        return (self.config.get("architectures") or ["Unknown"])[0]

    @property
    def hidden_size(self):
        return int(self.config.get("hidden_size", 0))

    @property
    def vocab_size(self):
        return int(self.config.get("vocab_size", 0))

    @property
    def num_layers(self):
        return int(self.config.get("num_hidden_layers", 0))

    @property
    def eos_token_id(self):
        return int(self.config.get("eos_token_id", 2))

    @property
    def context_length(self):
        return int(self.config.get("max_position_embeddings", 4096))


def load(path):
    """Read PATH/config.json; the missing-file error is transformers' wording."""
    cfg_file = os.path.join(path, "config.json")
    if not os.path.isfile(cfg_file):
        raise OSError("%s does not appear to have a file named config.json. Checkout "
                      "'https://huggingface.co/%s/tree/main' for available files." % (path, path))
    with open(cfg_file, encoding="utf-8") as f:
        config = json.load(f)
    return Model(path=path, config=config, total_bytes=_weights_bytes(path, config))


def _weights_bytes(path, config):
    """Size from model.safetensors.index.json's metadata.total_size, else a bf16 estimate."""
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as f:
            total = json.load(f).get("metadata", {}).get("total_size")
        if total:
            return int(total)
    h = int(config.get("hidden_size", 4096))
    layers = int(config.get("num_hidden_layers", 32))
    vocab = int(config.get("vocab_size", 32000))
    return 2 * (12 * layers * h * h + 2 * vocab * h)


def check_drafter(target, draft):
    """The shape errors a mismatched EAGLE-3 drafter hits in its first forward (graph capture)."""
    aux = (draft.config.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    if aux and max(aux) >= target.num_layers:
        raise IndexError("list index out of range (eagle_aux_hidden_state_layer_ids=%s, "
                         "target num_hidden_layers=%d)" % (aux, target.num_layers))
    if draft.hidden_size != target.hidden_size:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (1x%d and %dx%d)"
                           % (3 * target.hidden_size, 3 * draft.hidden_size, draft.hidden_size))
    if draft.vocab_size != target.vocab_size:
        raise RuntimeError("The size of tensor a (%d) must match the size of tensor b (%d) at "
                           "non-singleton dimension 0" % (draft.vocab_size, target.vocab_size))
