"""DIR/inventory.yml for a simulated fleet.

Written by hand (no PyYAML: simctl may run under a python3 without it). Every
scalar is a JSON string, which YAML reads as the same string.
"""
import importlib.util
import json
import os

from simlib import layout
from simlib.fleet_host import SIM_DIR

SSH_COMMON_ARGS = ("-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                   "-o LogLevel=ERROR")


def _sim_args(engine):
    """ENGINE's simulator args.py as a module, or None where it is not there to read."""
    path = os.path.join(SIM_DIR, "pypath", engine, "_sim", "args.py")
    if not os.path.isfile(path):
        return None
    spec = importlib.util.spec_from_file_location("_sim_%s_args" % engine, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def simulator_models():
    """{engine: [flags]}: the flags each simulated server models, as the engine spells them: SGLang's
    the ServerArgs fields its args.py reads (FIELDS), vLLM's its args.py's MODELLED; the experiment
    report notes any other flag a variant gives (the simulator ignores it). An engine whose
    simulator is not there to read is left out (then no note for its variants)."""
    out = {}
    sglang, vllm = _sim_args("sglang"), _sim_args("vllm")
    if sglang is not None:
        out["sglang"] = sorted("--" + field.replace("_", "-") for field in sglang.FIELDS.values())
    if vllm is not None:
        out["vllm"] = sorted(vllm.MODELLED)
    return out


def host_vars(host, private_key):
    return {
        "ansible_host": host.address,
        "ansible_port": host.port,
        "ansible_user": "root",
        "ansible_ssh_private_key_file": private_key,
        "ansible_ssh_common_args": SSH_COMMON_ARGS,
        # Interpreter discovery finds a broken pyenv shim on these machines.
        "ansible_python_interpreter": layout.python(),
        "sglang_server_python": os.path.join(SIM_DIR, "bin", "sglang-python"),
        "sglang_server_host": host.address,
        "sglang_server_model_path": os.path.join(SIM_DIR, "models", "kimi-k2.5-int4"),
        # The same interpreter runs the simulated vLLM too: its console script
        # (bin/vllm) lies next to it, which is where vllm_server looks by default.
        "vllm_server_python": os.path.join(SIM_DIR, "bin", "sglang-python"),
        "vllm_server_host": host.address,
        "vllm_server_model_path": os.path.join(SIM_DIR, "models", "kimi-k2.5-int4"),
        "eagle_drafter_model_path": os.path.join(SIM_DIR, "models",
                                                 "aq-medai-kimi-k2-eagle3"),
        "sim_gpu_root": host.gpu_root,
        "fleet_simulator_models": simulator_models(),
    }


def render(hosts, private_key):
    lines = ["# Written by `simctl fleet up`; removed by `simctl fleet down`.",
             "all:", "  children:", "    gpu_hosts:", "      hosts:"]
    for host in hosts:
        lines.append("        %s:" % host.name)
        for key, value in host_vars(host, private_key).items():
            lines.append("          %s: %s" % (key, json.dumps(value)))
    return "\n".join(lines) + "\n"


def write(path, hosts, private_key):
    with open(path, "w") as f:
        f.write(render(hosts, private_key))
