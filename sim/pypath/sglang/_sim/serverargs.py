"""ServerArgs resolution, imitated: the defaults and checks real resolution applies.

Real SGLang resolves its record (sglang/srt/arg_groups/pipeline.py) with the model's
config and the GPUs at hand; the simulator fills the few fields it runs on. Parsing is
not here: real SGLang's own parser produced args.server_args (sim/realsglang.py).
"""
import sys

DEFAULT_MEM_FRACTION = 0.85
DEFAULT_MAX_RUNNING = 4096
SPEC_DEFAULTS = (3, 1, 4)  # steps, topk, draft tokens: SGLang's auto choice for EAGLE
SIMULATED_SPEC = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")

# Resolved value of each simulator field -> the real ServerArgs field it stands for.
RESOLVED = {"tokenizer_path": "tokenizer_path", "served_model_name": "served_model_name",
            "mem_fraction_static": "mem_fraction_static",
            "max_running_requests": "max_running_requests",
            "cuda_graph_max_bs": "cuda_graph_max_bs_decode",
            "speculative_num_steps": "speculative_num_steps",
            "speculative_eagle_topk": "speculative_eagle_topk",
            "speculative_num_draft_tokens": "speculative_num_draft_tokens"}


class ServerArgsError(ValueError):
    pass


def resolve(args, warn):
    """Fill what SGLang fills; raise what SGLang raises. warn(msg) logs a warning."""
    if args.tp_size < 1 or args.dp_size < 1:
        raise ServerArgsError("tp_size and dp_size must be >= 1")
    if not 1 <= args.port <= 65535:
        raise ServerArgsError("port must be within 1..65535, got %d" % args.port)
    if args.mem_fraction_static is not None and not 0 < args.mem_fraction_static < 1:
        raise ServerArgsError("mem_fraction_static must be within (0, 1)")
    if args.mem_fraction_static is None:
        args.mem_fraction_static = DEFAULT_MEM_FRACTION
    if args.max_running_requests is None:
        args.max_running_requests = DEFAULT_MAX_RUNNING
    if args.cuda_graph_max_bs is None:
        args.cuda_graph_max_bs = 8 if args.speculative_algorithm else 256
    if args.speculative_algorithm is None:
        return args
    if args.speculative_algorithm not in SIMULATED_SPEC:
        raise ServerArgsError("--speculative-algorithm %s is not simulated" % args.speculative_algorithm)
    if args.speculative_draft_model_path is None:
        raise ServerArgsError("--speculative-draft-model-path is required for --speculative-algorithm %s"
                              % args.speculative_algorithm)
    nums = (args.speculative_num_steps, args.speculative_eagle_topk, args.speculative_num_draft_tokens)
    if all(n is None for n in nums):
        (args.speculative_num_steps, args.speculative_eagle_topk,
         args.speculative_num_draft_tokens) = SPEC_DEFAULTS
        warn("speculative_num_steps, speculative_eagle_topk and speculative_num_draft_tokens are "
             "auto-chosen: %d, %d, %d" % SPEC_DEFAULTS)
    elif any(n is None for n in nums):
        raise AssertionError("Set all of --speculative-num-steps, --speculative-eagle-topk and "
                             "--speculative-num-draft-tokens, or none of them")
    if args.speculative_eagle_topk == 1 and args.speculative_num_draft_tokens != args.speculative_num_steps + 1:
        warn("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
             "speculative_eagle_topk == 1")
        args.speculative_num_draft_tokens = args.speculative_num_steps + 1
    return args


def _real():
    """sim/realsglang.py, already imported by the args parser (args.py)."""
    return sys.modules["realsglang"]


def resolved_dict(args):
    """Every real ServerArgs field, as given, with the simulator's resolved values over it
    (real: ServerArgs.resolved_dict(), sglang/srt/server_args.py)."""
    out = _real().as_dict(args.server_args)
    for name, field in RESOLVED.items():
        out[field] = getattr(args, name)
    return out


def log_line(args):
    """The start-up line, key and all, as real SGLang writes it:
    logger.info(f"server_args={_server_args_for_logging(server_args)}")
    (sglang/srt/entrypoints/engine.py, Engine._launch_subprocesses)."""
    return "server_args=%r" % (resolved_dict(args),)


def server_info(args):
    """/server_info's configuration part: build_server_info (sglang/srt/utils/common.py):
    resolved fields (api_key included) and launch_command, the argv as given."""
    info = resolved_dict(args)
    info["launch_command"] = args.server_args.launch_command
    return info
