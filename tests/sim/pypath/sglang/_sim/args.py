"""Command line: SGLang's own flags (the subset a launch uses) plus --sim-* knobs.

Each --sim-* flag also reads an environment variable (SGLANG_SIM_<NAME>), so a
simulated host can set it for every session without changing the launch command.
Precedence: flag > environment > --sim-profile.
"""
import argparse
import os

# Phase lengths in seconds, per profile.
PROFILES = {
    "fast": {"init": 0.2, "load": 0.6, "kv": 0.2, "graph": 0.5, "warmup": 0.3},
    "realistic": {"init": 8.0, "load": 240.0, "kv": 12.0, "graph": 75.0, "warmup": 6.0},
}

# name -> (type, default when neither flag, env nor profile gives one, help)
SIM_VALUES = {
    "init_seconds": (float, None, "torch distributed init"),
    "load_seconds": (float, None, "weight loading"),
    "kv_seconds": (float, None, "KV cache allocation"),
    "graph_seconds": (float, None, "CUDA graph capture"),
    "warmup_seconds": (float, None, "warm-up after uvicorn listens"),
    "accept_length": (float, 2.6, "EAGLE mean accepted tokens per verify step"),
    "seed": (int, 0, "seed for EOS and acceptance draws"),
    "eos_prob": (float, 0.004, "chance of an EOS per token without ignore_eos"),
    "drain_seconds": (float, 8.0, "longest SIGTERM drain"),
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
}


def env_name(name):
    return "SGLANG_SIM_" + name.upper()


def build_parser():
    p = argparse.ArgumentParser(prog="launch_server", allow_abbrev=False)
    p.add_argument("--model-path", "--model", dest="model_path", required=True)
    p.add_argument("--tokenizer-path", default=None)
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--tp-size", "--tp", "--tensor-parallel-size", dest="tp_size", type=int, default=1)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--mem-fraction-static", type=float, default=None)
    p.add_argument("--cuda-graph-max-bs", type=int, default=None)
    p.add_argument("--max-running-requests", type=int, default=None)
    p.add_argument("--enable-metrics", action="store_true")
    p.add_argument("--api-key", default=None)
    p.add_argument("--speculative-algorithm", default=None,
                   choices=["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"])
    p.add_argument("--speculative-draft-model-path", default=None)
    p.add_argument("--speculative-num-steps", type=int, default=None)
    p.add_argument("--speculative-eagle-topk", type=int, default=None)
    p.add_argument("--speculative-num-draft-tokens", type=int, default=None)
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--log-level", default="info",
                   choices=["debug", "info", "warning", "error", "critical"])
    p.add_argument("--random-seed", type=int, default=None)
    p.add_argument("--sim-profile", default=os.environ.get("SGLANG_SIM_PROFILE", "fast"),
                   choices=sorted(PROFILES))
    for name, (typ, _default, help_) in SIM_VALUES.items():
        p.add_argument("--sim-" + name.replace("_", "-"), dest="sim_" + name, type=typ,
                       default=None, help=help_ + " (env %s)" % env_name(name))
    for name, help_ in SIM_SWITCHES.items():
        p.add_argument("--sim-" + name.replace("_", "-"), dest="sim_" + name,
                       action="store_true", default=None, help=help_ + " (env %s=1)" % env_name(name))
    return p


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


def merge_config(argv):
    """`--config FILE.yaml` as SGLang takes it: keys are flag names; the command line wins."""
    if "--config" not in argv:
        return list(argv)
    at = argv.index("--config")
    if at + 1 >= len(argv):
        raise SystemExit("launch_server: error: argument --config: expected one argument")
    path, rest = argv[at + 1], argv[:at] + argv[at + 2:]
    import yaml
    with open(path) as handle:
        config = yaml.safe_load(handle) or {}
    merged = []
    for key, value in config.items():
        flag = "--" + str(key).replace("_", "-")
        if value is True:
            merged.append(flag)
        elif value not in (False, None):
            merged += [flag, str(value)]
    return merged + rest


def parse(argv):
    """Return (args, unknown): unknown flags are reported by the caller, not fatal."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(merge_config(argv))
    if args.tp_size < 1:
        parser.error("argument --tp-size: must be >= 1")
    if args.port < 1 or args.port > 65535:
        parser.error("argument --port: must be within 1..65535")
    if args.mem_fraction_static is not None and not 0 < args.mem_fraction_static < 1:
        parser.error("argument --mem-fraction-static: must be within (0, 1)")
    _fill_sim(args, parser)
    if args.tokenizer_path is None:
        args.tokenizer_path = args.model_path
    if args.served_model_name is None:
        args.served_model_name = args.model_path
    return args, unknown
