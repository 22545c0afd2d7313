"""`vllm serve` command line: vLLM 0.33.0's flag set (flags.json) plus the simulator's --sim-* knobs.

Real vLLM's parser (vllm/entrypoints/common/cli_args.py make_arg_parser) imports torch, so
the flag set is a copy derived from the wheel's sources by flags_gen.py (a test re-derives it
when GPUFLEET_REAL_VLLM points at the sources). What FlexibleArgumentParser does before
argparse (vllm/utils/argparse_utils.py parse_args) is imitated: `--model X` moved to the
positional, `--config FILE.yaml` expanded in place (cli > config > defaults), underscores in
flag names read as dashes. Unknown flags exit 2 with argparse's message.
Each --sim-* knob also reads VLLM_SIM_<NAME> from the environment.
"""
import argparse
import json
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
FLAGS_FILE = os.path.join(HERE, "flags.json")

# name -> (type, default, help)
SIM_VALUES = {
    "init_seconds": (float, 0.2, "engine core start and torch distributed init"),
    "load_seconds": (float, 0.5, "weight loading"),
    "kv_seconds": (float, 0.2, "memory profiling and KV cache allocation"),
    "graph_seconds": (float, 0.4, "CUDA graph capture"),
    # real: VLLM_WATCHDOG_TIME_S = 5.0, entrypoints/launchers/launcher.py
    "watchdog_seconds": (float, 5.0, "how long after the engine died the API server exits"),
    "accept_length": (float, 2.6, "EAGLE-3 mean accepted tokens per verify step (1 + accepted/drafts) on prose "
                      "or token ids (more on code and structured text: _simcore/text.py)"),
    "seed": (int, 0, "seed for EOS and acceptance draws"),
    "eos_prob": (float, 0.004, "chance of an EOS per token without ignore_eos"),
    "single_stream_tps": (float, 82.5, "calibration: tok/s at concurrency 1 (seed: vLLM, Kimi-K2.5 TP8)"),
    "peak_tps": (float, 1536.0, "calibration: aggregate tok/s at peak concurrency"),
    "peak_concurrency": (int, 128, "calibration: the concurrency of peak_tps"),
}
SIM_SWITCHES = {
    "survivors": "EngineCore and workers outlive a killed API server and keep their GPU memory "
                 "(vllm issues 55510, 34643)",
    "fail_warmup": "the first rank fails the sampler warm-up after CUDA graph capture, as vLLM 0.33.0 does "
                   "when it runs out of memory there (vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run)",
}


def env_name(name):
    return "VLLM_SIM_" + name.upper()


def load_flags():
    """({flag: kind}, {short alias: long flag}) as flags_gen.py derived them from the wheel."""
    with open(FLAGS_FILE, encoding="utf-8") as f:
        data = json.load(f)
    return data["flags"], data["aliases"]


# The flags whose value changes what the simulated server does (parse() and server.py read them),
# as the experiment report's note of settings the simulated fleet does not model lists them
# (simlib/fleet_inventory.py). Every other flag is accepted and ignored: --max-num-seqs and
# --max-model-len are read for a message only (the batch is not capped by them).
MODELLED = ("--model", "--tensor-parallel-size", "--host", "--port", "--served-model-name",
            "--gpu-memory-utilization", "--speculative-config", "--config", "--api-key", "--shutdown-timeout",
            "--distributed-timeout-seconds", "--nnodes", "--node-rank", "--master-addr", "--master-port",
            "--headless")

# Types of the flags the simulator reads (the rest are accepted as strings).
TYPES = {"--port": int, "--tensor-parallel-size": int, "-tp": int, "--gpu-memory-utilization": float,
         "--max-num-seqs": int, "--shutdown-timeout": int, "--max-model-len": int, "--seed": int,
         "--data-parallel-size": int, "-dp": int, "--pipeline-parallel-size": int, "-pp": int}


# vllm/entrypoints/cli/main.py: the subcommands of CMD_MODULES, in order (only serve is simulated)
COMMANDS = ("chat", "complete", "serve", "launch", "bench", "collect-env", "download-kernels", "preload",
            "run-batch", "snapshot")


def build_cli():
    """(top-level `vllm` parser, its serve subparser), as vllm/entrypoints/cli/main.py builds them.

    As there, an unknown flag is reported by the top-level parser (`vllm: error: unrecognized
    arguments: ...`); a bad value by the serve subparser (`vllm serve: error: argument ...`).
    argparse's allow_abbrev stays on (FlexibleArgumentParser does not turn it off).
    """
    top = argparse.ArgumentParser(prog="vllm", description="vLLM CLI")
    top.add_argument("-v", "--version", action="version", version=_version())
    sub = top.add_subparsers(required=False, dest="subparser")
    serve = None
    for name in COMMANDS:
        if name == "serve":
            # vllm/entrypoints/cli/serve.py subparser_init
            serve = sub.add_parser("serve", usage="vllm serve [model_tag] [options]",
                                   help="Launch a local OpenAI-compatible API server to serve LLM "
                                        "completions via HTTP.")
            _add_serve_args(serve)
        else:
            sub.add_parser(name, add_help=False)
    return top, serve


def _version():
    from vllm import __version__
    return __version__


def build_parser():
    """The serve subparser alone (for reading flag names; parse() goes through build_cli())."""
    return build_cli()[1]


def _add_serve_args(p):
    p.add_argument("model_tag", nargs="?", default=None)
    aliases = {}
    flags, shorts = load_flags()
    for flag, kind in flags.items():
        if flag in shorts:
            continue  # an alias (-tp, --device-memory-utilization): added with its flag below
        if flag.startswith("--") and not (kind == "bool" and flag.startswith("--no-") and flag[5:] and
                                          "--" + flag[5:] in flags):
            aliases.setdefault(flag, [flag])  # --no-x is made by BooleanOptionalAction from --x
    for short, long_ in shorts.items():
        aliases[long_].append(short)
    for long_, names in aliases.items():
        kind = flags[long_]
        dest = long_[2:].replace("-", "_")
        if kind == "bool":
            p.add_argument(*names, dest=dest, action=argparse.BooleanOptionalAction, default=None)
        elif kind == "flag":
            p.add_argument(*names, dest=dest, action="store_true", default=None)
        elif kind == "optional":
            p.add_argument(*names, dest=dest, nargs="?", const=True, default=None)
        elif kind == "list":
            p.add_argument(*names, dest=dest, nargs="+", default=None)
        else:
            p.add_argument(*names, dest=dest, type=TYPES.get(long_, str), default=None)
    for name, (typ, default, help_) in SIM_VALUES.items():
        env = os.environ.get(env_name(name))
        p.add_argument("--sim-" + name.replace("_", "-"), dest="sim_" + name, type=typ,
                       default=typ(env) if env else default, help=help_ + " (env %s)" % env_name(name))
    for name, help_ in SIM_SWITCHES.items():
        p.add_argument("--sim-" + name.replace("_", "-"), dest="sim_" + name, action="store_true",
                       default=os.environ.get(env_name(name), "") not in ("", "0"),
                       help=help_ + " (env %s=1)" % env_name(name))


def _pull_config(args, parser):
    """vllm/utils/argparse_utils.py _pull_args_from_config + load_config_file."""
    if args.count("--config") > 1:
        raise ValueError("More than one config file specified!")
    index = args.index("--config")
    if index == len(args) - 1:
        raise ValueError("No config file specified! Please check your command-line arguments.")
    path = args[index + 1]
    extension = path.split(".")[-1]
    if extension not in ("yaml", "yml"):
        raise ValueError(f"Config file must be of a yaml/yml type. {extension} supplied")
    with open(path, encoding="utf-8") as f:
        config = yaml.safe_load(f) or {}
    config_args = []
    for key, value in config.items():
        if isinstance(value, bool):
            if value:
                config_args.append("--" + key)
            elif "--no-" + key in parser._option_string_actions:  # pylint: disable=protected-access
                config_args.append("--no-" + key)
        elif isinstance(value, list):
            if value:
                config_args.append("--" + key)
                config_args.extend(str(item) for item in value)
        elif isinstance(value, dict):
            config_args += ["--" + key, json.dumps(value)]
        else:
            config_args += ["--" + key, str(value)]
    model_in_cli = bool(args) and not args[0].startswith("-")
    if not model_in_cli and "--model" not in config_args:
        raise ValueError("No model specified! Please specify model either "
                         "as a positional argument or in a config file.")
    if model_in_cli:
        return args[:1] + config_args + args[1:index] + args[index + 2:]
    return config_args + args[:index] + args[index + 2:]


def _normalise(args):
    """--model X -> positional; underscores to dashes in flag names (argparse_utils.py parse_args)."""
    for i, arg in enumerate(args):
        if re.match(r"^--model(=.+|$)", arg):
            if arg == "--model":
                args = [args[i + 1]] + args[:i] + args[i + 2:]
            else:
                args = [arg[len("--model="):]] + args[:i] + args[i + 1:]
            break
    pattern = re.compile(r"(?<=--)[^\.]*")
    out = []
    for arg in args:
        if arg.startswith("--"):
            if "=" in arg:
                key, value = arg.split("=", 1)
                out.append(pattern.sub(lambda m: m.group(0).replace("_", "-"), key, count=1) + "=" + value)
            else:
                out.append(pattern.sub(lambda m: m.group(0).replace("_", "-"), arg, count=1))
        elif arg.startswith("-O") and arg != "-O":  # -O3, -O=3
            out += ["--optimization-level", arg[3:] if arg[2] == "=" else arg[2:]]
        else:
            out.append(arg)
    return out


SENSITIVE = ("api_key", "hf_token", "watermark_config")  # startup.py _SENSITIVE_ARG_FIELDS


def non_default(ns):
    """The serve flags given a value, read before parse() fills defaults in (startup.py log_non_default_args), --sim-* and derived fields aside."""
    flags = build_parser()
    out = {}
    for action in flags._actions:  # pylint: disable=protected-access
        dest = action.dest
        if dest in ("help", "model_tag", "non_default") or dest.startswith("sim_"):
            continue
        value = getattr(ns, dest, None)
        if value is not None and value != action.default:
            out[dest] = "***" if dest in SENSITIVE else value
    if ns.model_tag:
        out = {"model_tag": ns.model_tag, **out}
    return out


def parse(argv):
    """Namespace of a `vllm serve` command line; exits 2 (argparse) or 1 (a ValueError)."""
    top, parser = build_cli()
    args = list(argv)
    try:
        args = _normalise(args)
        if "--config" in args:
            args = _pull_config(args, parser)
            args = _normalise(args)
    except (ValueError, OSError) as exc:
        sys.stderr.write("ValueError: %s\n" % exc)
        sys.exit(1)
    ns = top.parse_args(["serve"] + args)
    ns.non_default = non_default(ns)  # before the defaults below are filled in
    ns.model = ns.model_tag or ns.model or "Qwen/Qwen3-0.6B"  # ModelConfig.model's default
    if ns.api_key is None and os.environ.get("VLLM_API_KEY"):
        ns.api_key = [os.environ["VLLM_API_KEY"]]  # FrontendArgs.api_key (cli_args.py): env VLLM_API_KEY
    ns.api_keys = list(ns.api_key or [])
    ns.tp = ns.tensor_parallel_size or 1
    ns.port = ns.port or 8000
    ns.gpu_util = ns.gpu_memory_utilization if ns.gpu_memory_utilization is not None else 0.9
    ns.max_num_seqs = ns.max_num_seqs or 256
    ns.shutdown_timeout = ns.shutdown_timeout or 0  # VllmConfig.shutdown_timeout: 0, ge=0
    ns.served_names = list(ns.served_model_name or [ns.model])
    ns.spec = None
    if ns.speculative_config:
        try:
            ns.spec = json.loads(ns.speculative_config)
        except ValueError as exc:
            parser.error("argument --speculative-config/-sc: %s" % exc)
        if not isinstance(ns.spec, dict):
            parser.error("argument --speculative-config/-sc: not a JSON object")
    return ns
