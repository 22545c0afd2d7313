#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_health
short_description: DCGM's level-1 software health checks that NVML can answer, per GPU and per host
version_added: 0.2.0
description:
  - Judges each selected GPU as NVIDIA DCGM's C(dcgmi diag -r 1) software checks and its health watches
    do, with their thresholds and verdicts - persistence mode, ECC mode and volatile double-bit errors,
    retired pages and pending retirement, row remapping (pending, failure, uncorrectable count), the
    driver's recovery action, InfoROM, NVSwitch fabric state, PCIe link width below its maximum, the
    clocks-event reasons now, the temperature against its slowdown threshold - and the host - the GPU
    count against O(expected_gpus), the Xid events since boot in the kernel log.
  - Each check answers C(pass), C(warn), C(fail), C(not_supported) (the GPU or its driver has no answer
    for it, for example the fabric state of a PCIe board or page retirement on Ampere and later; never
    a failure of the host) or C(unknown) (it could not be judged; the reason says why). A GPU's verdict
    and the host's are the worst of theirs. docs/gpu_health.md lists every check with its NVML call,
    threshold, verdict and the DCGM source it follows.
  - Reads only. By default the task fails only on bad options - an NVML that does not start, hangs or loses
    a GPU is a C(fail) verdict with the reason, so a play can decide with RV(verdict); O(fail_on) makes the
    task itself fail at a verdict (the gate the server roles run before a start).
  - NVML runs in a helper process, one request a GPU, each within O(nvml_timeout) - a hung GPU is named,
    the GPUs after it are reported C(unknown), and the module still returns. A healthy 8-GPU host takes
    well under 5 seconds.
author:
  - gpufleet.serving maintainers (@gpufleet)
requirements:
  - nvidia-ml-py
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.INFO_MODULE
options:
  gpus:
    description:
      - V(all), or a list of NVML GPU indices (also a comma-separated string). Only these GPUs are judged;
        an Xid of another GPU NVML lists is left out.
    type: raw
    default: all
  nvml_timeout:
    description:
      - Seconds one NVML request (initialising, or one GPU's readings) may take. Must be above 0.
    type: float
    default: 20
  expected_gpus:
    description:
      - The number of GPUs this host should have; a different count from NVML fails the host.
      - Leave it out to report the count without judging it.
    type: int
  kernel_log:
    description:
      - A file to read the kernel log from (a saved C(dmesg), or a simulated host's log) instead of
        C(journalctl -k -b 0), then C(dmesg).
      - A log that cannot be read makes the host's C(kernel_log) check C(warn) and names each source
        with why; the GPUs' C(xid) checks are then C(unknown).
    type: path
  fail_on:
    description:
      - Fail the task when the host's verdict is this or worse, with the reasons in the message and the whole
        result returned; V(never) only reports.
    type: str
    choices: [never, fail, warn]
    default: never
  fail_hint:
    description:
      - A sentence added to the failure message of O(fail_on), saying what to change (the server roles name
        their C(allow_unhealthy_gpus) setting here).
    type: str
    default: ''
notes:
  - C(journalctl -k) needs membership of the C(systemd-journal) or C(adm) group, and C(dmesg) needs
    root where C(kernel.dmesg_restrict=1); run the task with C(become) to read Xids on such hosts.
  - The PCIe link generation is reported, not judged - an idle GPU lowers it to save power.
seealso:
  - module: gpufleet.serving.gpu_info
  - module: gpufleet.serving.gpu_release
  - name: DCGM diagnostics
    description: The level-1 software checks and the health watches this module follows.
    link: https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html
"""

EXAMPLES = r"""
- name: Judge every GPU of the host
  gpufleet.serving.gpu_health:
    expected_gpus: 8
  become: true  # the kernel log's Xids
  register: health

- name: Refuse to go on with a host whose health fails (the reasons are in the message)
  gpufleet.serving.gpu_health:
    fail_on: fail
    fail_hint: Replace the GPU or drain the host.

- name: Only the GPUs a server will use, with a short NVML deadline
  gpufleet.serving.gpu_health:
    gpus: [0, 1, 2, 3]
    nvml_timeout: 5

- name: Read Xids from a saved kernel log
  gpufleet.serving.gpu_health:
    kernel_log: /var/tmp/dmesg.txt
"""

RETURN = r"""
verdict:
  description: >-
    The host's verdict - V(fail) if any check of the host or of a selected GPU fails, else V(warn) if any
    warns, else V(pass) (C(not_supported) and C(unknown) checks do not lower it; the reasons name them).
  returned: always
  type: str
  sample: fail
reasons:
  description: One line for each check that warns or fails, naming the host or the GPU, the check and why.
  returned: always
  type: list
  elements: str
  sample: ["GPU 3 row_remap_pending: a row remap is pending: reset the GPU to apply it"]
driver_version:
  description: NVIDIA driver version, or null when NVML did not start.
  returned: always
  type: str
  sample: "580.159.04"
gpu_count:
  description: GPUs NVML sees on the host, or null when NVML did not start.
  returned: always
  type: int
host_checks:
  description: >-
    The host's checks, each a dict of C(verdict), C(reason) and C(value) - C(nvml) (started, and every call
    answered in time), C(gpu_count), C(kernel_log) (the source read, or each source that could not be read
    and why), C(xid_unmatched) (Xids of a PCI address NVML does not list, such as a GPU off the bus).
  returned: always
  type: dict
gpus:
  description: One entry per selected GPU.
  returned: always
  type: list
  elements: dict
  contains:
    index: {description: NVML index., type: int, returned: always}
    name: {description: Product name (null when NVML could not read the GPU)., type: str, returned: always}
    uuid: {description: GPU UUID (null when NVML could not read the GPU)., type: str, returned: always}
    pci_bus_id: {description: "PCI bus id as NVML gives it (V(00000000:18:00.0)).", type: str, returned: always}
    verdict:
      description: >-
        The GPU's verdict, the worst of its checks - V(fail), V(warn), V(pass), or V(unknown) when NVML never
        reached it (it stopped answering at an earlier GPU).
      type: str
      returned: always
    reasons:
      description: One line for each of its checks that warns or fails.
      type: list
      elements: str
      returned: always
    checks:
      description: >-
        Each check by name (persistence_mode, ecc_mode, ecc_dbe_volatile, retired_pages_pending,
        retired_pages, row_remap_failure, row_remap_uncorrectable, row_remap_pending, recovery_action,
        inforom, fabric, pcie_link, clocks_event_reasons, temperature, xid; or only nvml for a GPU NVML
        could not read), each a dict of C(verdict), C(reason) and C(value) (what NVML or the log said).
      type: dict
      returned: always
kernel_log:
  description: C(source), the kernel log read (null if none), and C(unreadable), each source that could not be read and why.
  returned: always
  type: dict
elapsed_s:
  description: Seconds the checks took.
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils._deps import require as require_libraries
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.health_gate import GATE_OPTIONS, health_facts


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gpus=dict(type="raw", default="all"),
            nvml_timeout=dict(type="float", default=20.0),
            expected_gpus=dict(type="int"),
            kernel_log=dict(type="path"),
            **GATE_OPTIONS,
        ),
        supports_check_mode=True,
    )
    require_libraries(module, "nvidia-ml-py")
    run_module(module, health_facts, module.params)


if __name__ == "__main__":
    main()
