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


def simulator_models():
    """{engine: [flags]}: the SGLang flags the simulated server reads (FIELDS of its args.py);
    the experiment report notes any other flag a variant gives (the simulator ignores it). The
    simulated vLLM keeps no such table, so it is not listed (no note for its variants). An
    empty dict where the simulator is not there to read (then no note either)."""
    path = os.path.join(SIM_DIR, "pypath", "sglang", "_sim", "args.py")
    if not os.path.isfile(path):
        return {}
    spec = importlib.util.spec_from_file_location("_sim_sglang_args", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {"sglang": sorted("--" + name.replace("_", "-") for name in module.FIELDS)}


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
