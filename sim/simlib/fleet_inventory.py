"""DIR/inventory.yml for a simulated fleet.

Written by hand (no PyYAML: simctl may run under a python3 without it). Every
scalar is a JSON string, which YAML reads as the same string.
"""
import json
import os

from simlib import layout
from simlib.fleet_host import SIM_DIR

SSH_COMMON_ARGS = ("-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                   "-o LogLevel=ERROR")


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
