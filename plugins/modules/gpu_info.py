#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_info
short_description: Facts about NVIDIA GPUs and the processes holding them
version_added: 0.1.0
description:
  - Reads, per GPU, the index, UUID, name, memory (NVML v2 used and reserved, total) and the
    processes that hold it (device-file holders and NVML's compute processes), each with pid, user,
    command line and whether gpufleet.serving.gpu_release would protect it.
  - Shares its code with gpufleet.serving.gpu_release, so both see the same holders.
author:
  - gpufleet.serving maintainers (@gpufleet)
requirements:
  - psutil
  - nvidia-ml-py
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.INFO_MODULE
  - gpufleet.serving.attributes.ACTIONGROUP_GPU
  - gpufleet.serving.gpu
options: {}
seealso:
  - module: gpufleet.serving.gpu_release
"""

EXAMPLES = r"""
- name: Read GPU facts
  gpufleet.serving.gpu_info:
  register: gpu

- name: Every GPU must be empty
  ansible.builtin.assert:
    that: gpu.gpus | map(attribute='used_mib') | max == 0
"""

RETURN = r"""
driver_version:
  description: NVIDIA driver version.
  returned: always
  type: str
  sample: "580.159.04"
gpu_count:
  description: GPUs on the host.
  returned: always
  type: int
gpus:
  description: One entry per selected GPU.
  returned: always
  type: list
  elements: dict
  contains:
    index: {description: NVML index., type: int, returned: always}
    uuid: {description: GPU UUID., type: str, returned: always}
    name: {description: Product name., type: str, returned: always}
    minor: {description: "Minor number, the N of C(/dev/nvidiaN).", type: int, returned: always}
    memory_api: {description: "C(v2), or C(v1) on drivers without the v2 call.", type: str, returned: always}
    total_mib: {description: Total memory in MiB., type: float, returned: always}
    used_mib: {description: "Used memory in MiB, without the driver reserve.", type: float, returned: always}
    reserved_mib: {description: "Driver reserve in MiB (null on v1).", type: float, returned: always}
    holders:
      description: "Processes holding the GPU: pid, user, cmdline, state, and C(protected) (the reason) when gpu_release would spare them."
      type: list
      elements: dict
      returned: always
    nvml_processes:
      description: "NVML's compute processes: pid (as NVML reports it) and used_mib (null when not available)."
      type: list
      elements: dict
      returned: always
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils._deps import require as require_libraries
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.args import COMMON_ARGS
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.info import gpu_facts


def main():
    module = AnsibleModule(argument_spec=dict(COMMON_ARGS), supports_check_mode=True)
    require_libraries(module, "psutil", "nvidia-ml-py")
    run_module(module, gpu_facts, module.params)


if __name__ == "__main__":
    main()
