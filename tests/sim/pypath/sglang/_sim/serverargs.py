"""ServerArgs post-processing as SGLang does it: defaults, speculative checks, the log line."""

DEFAULT_MEM_FRACTION = 0.85
DEFAULT_MAX_RUNNING = 4096
SPEC_DEFAULTS = (3, 1, 4)  # steps, topk, draft tokens: SGLang's auto choice for EAGLE


class ServerArgsError(ValueError):
    pass


def resolve(args, warn):
    """Fill what SGLang fills; raise what SGLang raises. warn(msg) logs a warning."""
    if args.mem_fraction_static is None:
        args.mem_fraction_static = DEFAULT_MEM_FRACTION
    if args.max_running_requests is None:
        args.max_running_requests = DEFAULT_MAX_RUNNING
    if args.cuda_graph_max_bs is None:
        args.cuda_graph_max_bs = 8 if args.speculative_algorithm else 256
    if args.speculative_algorithm is None:
        return args
    if args.speculative_algorithm == "NGRAM":
        raise ServerArgsError("--speculative-algorithm NGRAM is not simulated")
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


def public(args):
    """The fields /server_info reports and the `server_args=ServerArgs(...)` line shows."""
    return {k: v for k, v in vars(args).items() if not k.startswith("sim_")}


def log_line(args):
    shown = dict(public(args))
    if shown.get("api_key"):
        shown["api_key"] = "***"  # the log may be shown to others
    body = ", ".join("%s=%r" % kv for kv in shown.items())
    return "server_args=ServerArgs(%s)" % body
