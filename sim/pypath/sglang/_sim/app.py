"""What the HTTP layer reads: arguments, models, the engine and the readiness flags."""
import threading
import time

from sglang import __version__
from sglang._sim import serverargs


class App:
    def __init__(self, args, target, draft, engine):
        self.args = args
        self.target = target
        self.draft = draft
        self.engine = engine
        self.ready = threading.Event()  # warm-up done: /health answers 200
        self.draining = threading.Event()  # SIGTERM seen: refuse new work
        self.healthy_once = threading.Event()  # /health has answered 200 (--sim-sick-drafter)
        self.created = int(time.time())
        self.startup_time = 0.0  # seconds from launch to ready, set by the warm-up

    def speculative(self):
        return self.args.speculative_algorithm is not None

    def draft_tokens(self):
        return self.args.speculative_num_draft_tokens if self.speculative() else 0

    def vlm(self):
        """has_image_understanding: a config with a vision tower (warm-up by chat then)."""
        return "vision_config" in self.target.config

    def model_info(self):
        # /model_info's keys (sglang/srt/entrypoints/http_server.py model_info)
        return {"model_path": self.args.model_path, "served_model_name": self.args.served_model_name,
                "tokenizer_path": self.args.tokenizer_path, "is_generation": True,
                "preferred_sampling_params": None, "weight_version": "default", "load_format": "auto",
                "reasoning_parser": None, "tool_call_parser": None, "disaggregation_mode": "null",
                "has_image_understanding": self.vlm(), "has_audio_understanding": False,
                "model_type": self.target.config.get("model_type"),
                "architectures": self.target.config.get("architectures")}

    def server_info(self):
        # /server_info (http_server.py server_info -> utils/common.py build_server_info): the
        # resolved fields, api_key included, and launch_command. With a key set, only key
        # holders get here (the API-key middleware guards it).
        info = serverargs.server_info(self.args)
        state = {"last_gen_throughput": self.engine.stats.gen_throughput,
                 "memory_usage": {"weight": round(self.target.total_bytes / self.args.tp_size / 2 ** 30, 2)}}
        if self.speculative() and self.engine.stats.spec_verify_total:
            state["avg_spec_accept_length"] = self.engine.stats.avg_accept_length()
        info["startup_time"] = self.startup_time
        info["internal_states"] = [state]
        info["version"] = __version__
        info["frontend"] = "python"
        return info

    def models_list(self):
        name = self.args.served_model_name
        return {"object": "list", "data": [{"id": name, "object": "model", "created": self.created,
                                            "owned_by": "sglang", "root": name,
                                            "max_model_len": self.target.context_length}]}
