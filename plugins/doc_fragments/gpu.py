# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The GPU options gpu_release and gpu_info share (module_utils/_gpu/args.py COMMON_ARGS)."""

from __future__ import annotations


class ModuleDocFragment:
    # The daemon list between the markers is written by scripts/gen_docs.py from
    # module_utils/_gpu/protect.py DAEMONS; tests/unit/test_generated_docs.py fails when stale.
    DOCUMENTATION = r"""
options:
  gpus:
    description:
      - V(all), or a list of NVML GPU indices (also a comma-separated string).
      - Only these GPUs are released, verified (gpufleet.serving.gpu_release) or reported
        (gpufleet.serving.gpu_info).
    type: raw
    default: all
  devices:
    description:
      - Directory holding the NVIDIA device files.
      - Defaults to the environment variable E(GPUFLEET_NVIDIA_DEVICES) when set (simulated hosts set
        it for every session), else C(/dev).
    type: path
  nvml_timeout:
    description:
      - Seconds any one NVML request may take. NVML runs in a helper process, so a hung driver call
        fails the task instead of hanging the play. Must be above 0.
    type: float
    default: 20
  v1_reserve_mib:
    description:
      - The driver reserve assumed on drivers without NVML's v2 memory call. An idle H200 on driver 580
        reports 615 MiB in v1.
    type: float
    default: 1024
  protect:
    description:
      - Extra regular expressions; a process whose command line matches one is protected -
        gpufleet.serving.gpu_release never signals it, and both modules report it with C(protected)
        set to the reason.
      - Always protected, whatever this option says - the module's own process tree and its
        ancestors, processes whose command line equals an ancestor's, PID 1, kernel threads,
        Ansible's own processes, and the GPU system daemons, recognised by the base name of their
        executable (root-owned, run as root or a system user; a process title never protects).
      # BEGIN GENERATED gpu-daemons (scripts/gen_docs.py)
      - 'The GPU system daemons: C(nvidia-persistenced), C(nv-hostengine), C(dcgm-exporter), C(dcgmi),
        C(nvidia-fabricmanager), C(nv-fabricmanager), C(nvidia-cuda-mps-control), C(nvidia-cuda-mps-server),
        C(Xorg), C(Xwayland), C(X), C(nvidia-device-plugin), C(k8s-device-plugin), C(gpu-feature-discovery).'
      # END GENERATED gpu-daemons
    type: list
    elements: str
    default: []
"""
