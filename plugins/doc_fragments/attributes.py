# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared `attributes:` documentation for the collection's modules."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in diff_mode mode).
"""

    # Modules that only read.
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state.
"""

    # Action plugins that run on the controller only (the reports, the experiment plan).
    CONTROLLER_ACTION = r"""
options: {}
attributes:
  diff_mode:
    support: none
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
  async:
    description: Supports being used with the C(async) keyword.
    support: none
"""

    # The report actions: they write files only outside check mode.
    REPORT_WRITER = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - In check mode the report is built and returned, and no file is written.
"""

    # module_defaults passes a group's defaults to each member, so every member takes the options
    # its fragment names (tests/unit/test_action_groups.py checks them against the modules).
    # Literal strings: ansible-test's yamllint reads doc fragments from the source.
    ACTIONGROUP_GPU = r"""
options: {}
attributes:
  action_group:
    description:
      - Use C(group/gpufleet.serving.gpu) in C(module_defaults) to set defaults for this module.
      - The group's modules share O(gpus), O(devices), O(nvml_timeout), O(v1_reserve_mib) and O(protect).
    support: full
    membership:
      - gpufleet.serving.gpu
"""

    ACTIONGROUP_ENDPOINT = r"""
options: {}
attributes:
  action_group:
    description:
      - Use C(group/gpufleet.serving.endpoint) in C(module_defaults) to set defaults for this module.
      - The group's modules share the server's O(base_url), O(api_key), O(validate_certs) and O(model).
    support: full
    membership:
      - gpufleet.serving.endpoint
"""

    ACTIONGROUP_ROUTER = r"""
options: {}
attributes:
  action_group:
    description:
      - Use C(group/gpufleet.serving.router) in C(module_defaults) to set defaults for this module.
      - The group's modules share the router's O(router_url), O(api_key), O(validate_certs), O(router_kind)
        and O(request_timeout).
    support: full
    membership:
      - gpufleet.serving.router
"""
