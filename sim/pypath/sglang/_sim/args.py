"""Command line: SGLang's flags, parsed by real SGLang (sim/realsglang.py), plus --sim-* knobs.

Each --sim-* flag also reads an environment variable (SGLANG_SIM_<NAME>), so a
simulated host can set it for every session without changing the launch command.
Precedence: flag > environment > --sim-profile.
"""
import argparse
import os
import sys

# Phase lengths in seconds, per profile.
PROFILES = {
    "fast": {"init": 0.2, "load": 0.6, "kv": 0.2, "graph": 0.5, "warmup": 0.3, "drain_poll": 0.1},
    "realistic": {"init": 8.0, "load": 240.0, "kv": 12.0, "graph": 75.0, "warmup": 6.0, "drain_poll": 5.0},
}

# name -> (type, default when neither flag, env nor profile gives one, help)
SIM_VALUES = {
    "init_seconds": (float, None, "torch distributed init"),
    "load_seconds": (float, None, "weight loading"),
    "kv_seconds": (float, None, "KV cache allocation"),
    "graph_seconds": (float, None, "CUDA graph capture"),
    "warmup_seconds": (float, None, "warm-up after uvicorn listens"),
    "accept_length": (float, 2.6, "EAGLE mean accepted tokens per verify step on prose or token ids "
                      "(more on code and structured text: _simcore/text.py)"),
    "seed": (int, 0, "seed for EOS and acceptance draws"),
    "eos_prob": (float, 0.004, "chance of an EOS per token without ignore_eos"),
    # tokenizer_manager.py sigterm_watchdog: asyncio.sleep(5) between its looks at the drain
    "drain_poll_seconds": (float, None, "period of the SIGTERM watchdog (real: 5 s)"),
    "single_stream_tps": (float, 63.6, "calibration: tok/s at concurrency 1"),
    "peak_tps": (float, 2370.0, "calibration: aggregate tok/s at peak concurrency"),
    "peak_concurrency": (int, 128, "calibration: the concurrency of peak_tps"),
    "gpu_total_mib": (int, 0, "GPU size when no fake GPU root is set (0 = none)"),
}
SIM_SWITCHES = {
    "orphan_workers": "workers outlive the main process (no PR_SET_PDEATHSIG)",
    "hang_on_term": "ignore SIGTERM",
    "fail_warmup": "warm-up request fails (Initialization failed. warmup error)",
    "real_gpu": "workers allocate real CUDA memory with torch",
    # The fault of a relaunch the router never calls healthy (docs/rollout.md): server_wait's first
    # /health sees it ready, the router's check after it does not; the base server is unaffected.
    "sick_drafter": "with a speculative algorithm, /health answers 503 after its first 200",
}


def env_name(name):
    return "SGLANG_SIM_" + name.upper()


def build_parser():
    """The simulator's own knobs (--sim-*); SGLang's flags go to the real parser."""
    p = argparse.ArgumentParser(prog="sglang serve (simulator knobs)", allow_abbrev=False)
    p.add_argument("--sim-profile", default=os.environ.get("SGLANG_SIM_PROFILE", "fast"),
                   choices=sorted(PROFILES))
    for name, (typ, _default, help_) in SIM_VALUES.items():
        p.add_argument("--sim-" + name.replace("_", "-"), dest="sim_" + name, type=typ,
                       default=None, help=help_ + " (env %s)" % env_name(name))
    for name, help_ in SIM_SWITCHES.items():
        p.add_argument("--sim-" + name.replace("_", "-"), dest="sim_" + name,
                       action="store_true", default=None, help=help_ + " (env %s=1)" % env_name(name))
    return p


def split_sim(argv):
    """(the --sim-* tokens, the rest in order): real SGLang has no --sim-* flag."""
    switches = {"--sim-" + name.replace("_", "-") for name in SIM_SWITCHES}
    sim, rest, i = [], [], 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--sim-"):
            rest.append(arg)
            i += 1
        elif arg in switches or "=" in arg:
            sim.append(arg)
            i += 1
        else:
            sim += argv[i:i + 2]
            i += 2
    return sim, rest


def _fill_sim(args, parser):
    """Resolve each --sim-* value: flag, else env, else profile, else default."""
    profile = PROFILES[args.sim_profile]
    for name, (typ, default, _help) in SIM_VALUES.items():
        attr = "sim_" + name
        if getattr(args, attr) is not None:
            continue
        raw = os.environ.get(env_name(name))
        if raw not in (None, ""):
            try:
                value = typ(raw)
            except ValueError:
                parser.error("%s=%r is not a valid %s" % (env_name(name), raw, typ.__name__))
        elif name.endswith("_seconds") and name[:-8] in profile:
            value = profile[name[:-8]]
        else:
            value = default
        setattr(args, attr, value)
    for name in SIM_SWITCHES:
        attr = "sim_" + name
        if getattr(args, attr) is None:
            setattr(args, attr, os.environ.get(env_name(name), "") not in ("", "0", "false"))


# The ServerArgs fields the simulator reads: its name -> the real field.
FIELDS = {
    "model_path": "model_path", "tokenizer_path": "tokenizer_path",
    "served_model_name": "served_model_name", "tp_size": "tp_size", "dp_size": "dp_size",
    "host": "host", "port": "port", "mem_fraction_static": "mem_fraction_static",
    "cuda_graph_max_bs": "cuda_graph_max_bs_decode", "max_running_requests": "max_running_requests",
    "enable_metrics": "enable_metrics", "api_key": "api_key",
    "speculative_algorithm": "speculative_algorithm",
    "speculative_draft_model_path": "speculative_draft_model_path",
    "speculative_num_steps": "speculative_num_steps", "speculative_eagle_topk": "speculative_eagle_topk",
    "speculative_num_draft_tokens": "speculative_num_draft_tokens",
    "trust_remote_code": "trust_remote_code", "log_level": "log_level", "random_seed": "random_seed",
    "tokenizer_worker_num": "tokenizer_worker_num",
}


def _realsglang():
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    if here not in sys.path:
        sys.path.insert(0, here)  # sim/: realsglang.py
    import realsglang  # pylint: disable=import-outside-toplevel
    return realsglang


def parse(argv, entry="launch_server"):
    """Return the simulator's args: SGLang's flags through real SGLang's own parser.

    A command line real SGLang refuses ends here as it ends there: its message on stderr
    and its exit code (2 from argparse; 1 and a traceback for an exception).
    `args.server_args` is the real ServerArgs record (the log line, /server_info).
    """
    sim_argv, rest = split_sim(list(argv))
    parser = build_parser()
    args = parser.parse_args(sim_argv)
    result = _realsglang().parse(rest, entry)
    if result.args is None:  # refused (argparse writes to stderr), or --help (exit 0, stdout)
        stream = sys.stderr if result.code else sys.stdout
        stream.write(result.message)
        stream.flush()
        raise SystemExit(result.code)
    for name, field in FIELDS.items():
        setattr(args, name, getattr(result.args, field))
    args.server_args = result.args
    _fill_sim(args, parser)
    if args.tokenizer_path is None:
        args.tokenizer_path = args.model_path
    if args.served_model_name is None:
        args.served_model_name = args.model_path
    return args
