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

    ACTIONGROUP_GPU = r"""
options: {}
attributes:
  action_group:
    description: Use C(group/gpufleet.serving.gpu) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - gpufleet.serving.gpu
"""
