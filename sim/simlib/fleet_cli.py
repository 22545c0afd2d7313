"""`simctl fleet up|status|down`: simulated GPU hosts reachable over real SSH.

  simctl fleet up DIR --hosts N [--gpus 8] [--port 22] [--env KEY=VALUE ...]
                 [--gpu-model rtx_pro_6000|h100|h200|b200] [--gpu-memory-mib M]
                 [--fault JSON ...] [--sglang JSON] [--vllm JSON] [--ensure] [--check] [--json]
  simctl fleet status DIR [--json]
  simctl fleet down DIR [--check] [--json]

--ensure keeps a fleet that is up in DIR with the same settings and replaces another;
--check says what up/down would do and does nothing; --json prints {"changed", "action",
"inventory"} (the progress lines go to stderr).

Host N listens on 127.0.0.(N+1):PORT in its own PID and mount namespace.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

from simlib import fakegpu

NEEDS_ROOT = ("simctl fleet needs root: it creates PID and mount namespaces "
              "(run as root or with sudo)")
TOOLS = (("unshare", "util-linux"), ("nsenter", "util-linux"), ("ssh-keygen", "openssh-client"),
         ("/usr/sbin/sshd", "openssh-server"), ("tini", "tini"))
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _parser():
    parser = argparse.ArgumentParser(prog="simctl fleet", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="start N simulated hosts")
    p_up.add_argument("dir")
    p_up.add_argument("--hosts", type=int, required=True)
    p_up.add_argument("--gpus", type=int, default=8)
    p_up.add_argument("--port", type=int, default=22,
                      help="sshd port on every host address (default 22)")
    p_up.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                      help="set in every SSH session (e.g. SGLANG_SIM_*); repeatable")
    p_up.add_argument("--gpu-model", choices=sorted(fakegpu.GPU_MODELS), default="rtx_pro_6000",
                      help="name and memory of every GPU (default rtx_pro_6000)")
    p_up.add_argument("--gpu-memory-mib", type=int, help="total memory per GPU instead of the model's")
    p_up.add_argument("--fault", action="append", default=[], type=json.loads, metavar="JSON",
                      help='{"kind": "warmup_crash", "host": "sim-h2"} or {"kind": "gpu_held", '
                           '"host": "sim-h1", "gpu": 3, "mib": 4096}; repeatable')
    p_up.add_argument("--sglang", type=json.loads, default={}, metavar="JSON",
                      help='simulator knobs for every session, e.g. {"profile": "fast", '
                           '"accept_length": 3.2}: each KEY becomes SGLANG_SIM_KEY')
    p_up.add_argument("--ensure", action="store_true",
                      help="keep a fleet with the same settings that is up in DIR; replace another")
    p_up.add_argument("--vllm", type=json.loads, default={}, metavar="JSON",
                      help='simulated vLLM knobs, e.g. {"accept_length": 3.0}: each KEY becomes VLLM_SIM_KEY')
    p_up.add_argument("--check", action="store_true", help="say what would be done; do nothing")
    p_up.add_argument("--json", action="store_true", help="the outcome as JSON on stdout")
    p_status = sub.add_parser("status", help="report each host")
    p_status.add_argument("dir")
    p_status.add_argument("--json", action="store_true", help="JSON instead of a table")
    p_down = sub.add_parser("down", help="stop every host and remove the fleet's files")
    p_down.add_argument("dir")
    p_down.add_argument("--check", action="store_true", help="say what would be done; do nothing")
    p_down.add_argument("--json", action="store_true", help="the outcome as JSON on stdout")
    return parser


def sglang_env(knobs, prefix="SGLANG_SIM_", flag="--sglang"):
    """SGLANG_SIM_* variables from the simulator knobs ({"profile": "fast", "accept_length": 3.2});
    VLLM_SIM_* with PREFIX "VLLM_SIM_" (the simulated vLLM's knobs)."""
    if not isinstance(knobs, dict):
        raise ValueError("%s wants a JSON object, got %r" % (flag, knobs))
    env = {}
    for key, value in knobs.items():
        if value is None:
            continue
        if not ENV_NAME.match(key):
            raise ValueError("%s: %r is no knob name" % (flag, key))
        if isinstance(value, bool):
            value = "1" if value else "0"
        env[prefix + key.upper()] = str(value)
    return env


def _outcome(args, changed, action, dir_):
    if args.json:
        print(json.dumps({"changed": changed, "action": action,
                          "inventory": os.path.join(os.path.realpath(dir_), "inventory.yml")}))


def _preflight():
    """Why the fleet cannot run here, or None."""
    if os.geteuid() != 0:
        return NEEDS_ROOT
    missing = [(tool, pkg) for tool, pkg in TOOLS if not shutil.which(tool)]
    if missing:
        return ("simctl fleet: missing %s; install with: apt-get install %s"
                % (", ".join(t for t, unused in missing),
                   " ".join(sorted({p for unused, p in missing}))))
    return None


def _parse_env(pairs):
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not ENV_NAME.match(key):
            raise ValueError("--env wants KEY=VALUE, got %r" % pair)
        if '"' in value or "\n" in value:
            raise ValueError("--env %s: quotes and newlines cannot pass through sshd's "
                             "SetEnv" % key)
        env[key] = value
    return env


def _print_table(rows):
    header = ("NAME", "ADDRESS", "INIT PID", "ALIVE", "SSHD", "PROCS")
    lines = [header] + [(r["name"], "%s:%d" % (r["address"], r["port"]),
                         str(r["init_pid"] or "-"), "yes" if r["alive"] else "no",
                         "yes" if r["sshd"] else "no", str(r["processes"])) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip())


def main(argv):
    args = _parser().parse_args(argv)
    from simlib import fleet_ops  # noqa: E402  (stdlib only; nothing runs at import)
    say = (lambda *a: sys.stderr.write(" ".join(map(str, a)) + "\n")) if getattr(args, "json", False) else print
    if args.command == "down" and not fleet_ops.present(args.dir):
        say("fleet down: nothing in %s" % os.path.realpath(args.dir))
        _outcome(args, False, "absent", args.dir)
        return 0
    problem = _preflight()
    if problem:
        sys.stderr.write(problem + "\n")
        return 2
    try:
        if args.command == "up":
            if not 1 <= args.hosts <= 253:
                raise ValueError("--hosts must be 1..253 (addresses 127.0.0.2..254)")
            if args.gpus < 1:
                raise ValueError("--gpus must be at least 1")
            model = dict(fakegpu.GPU_MODELS[args.gpu_model])
            if args.gpu_memory_mib is not None:
                if args.gpu_memory_mib < 1024:
                    raise ValueError("--gpu-memory-mib must be at least 1024")
                model["memory_mib"] = args.gpu_memory_mib
            env = _parse_env(args.env)
            env.update(sglang_env(args.sglang))
            env.update(sglang_env(args.vllm, "VLLM_SIM_", "--vllm"))
            if args.ensure or args.check:
                changed, action = fleet_ops.ensure(args.dir, args.hosts, args.gpus, args.port, env,
                                                   gpu_model=model, faults=args.fault,
                                                   check=args.check, say=say)
            else:
                fleet_ops.up(args.dir, args.hosts, args.gpus, args.port, env, say=say,
                             gpu_model=model, faults=args.fault)
                changed, action = True, "started"
            _outcome(args, changed, action, args.dir)
            return 0
        if args.command == "status":
            rows = fleet_ops.status(args.dir)
            if args.json:
                print(json.dumps(rows, indent=2))
            else:
                _print_table(rows)
            return 0 if all(r["alive"] for r in rows) else 1
        if not args.check:
            fleet_ops.down(args.dir, say=say)
        _outcome(args, True, "would stop" if args.check else "stopped", args.dir)
        return 0
    except (ValueError, OSError, subprocess.CalledProcessError, fleet_ops.FleetError) as exc:
        sys.stderr.write("simctl fleet %s: %s\n" % (args.command, exc))
        return 1
