# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The `gpus` option: `all` or a list of NVML indices."""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput


def parse_gpus(value: Any) -> list | None:
    """Return None for all GPUs, else a sorted list of distinct indices."""
    if value is None:
        return None
    if isinstance(value, str):
        value = value.strip()
        if value.lower() == "all":
            return None
        value = [v for v in value.replace(" ", "").split(",") if v != ""]
    if not isinstance(value, (list, tuple)):
        value = [value]
    if len(value) == 1 and str(value[0]).strip().lower() == "all":
        return None
    out = set()
    for item in value:
        try:
            index = int(str(item).strip())
        except ValueError:
            raise InvalidInput("gpus: %r is not a GPU index; use 'all' or a list of indices such as [0, 1, 2, 3]" % (item,))
        if index < 0:
            raise InvalidInput("gpus: %d is negative; GPU indices start at 0" % index)
        out.add(index)
    if not out:
        raise InvalidInput("gpus: the list is empty; use 'all' or name at least one GPU index")
    return sorted(out)


def check_against(selected: list | None, count: int) -> list:
    """Resolve the selection against the host's GPU count."""
    if selected is None:
        return list(range(count))
    if count == 0:
        raise InvalidInput("gpus: this host has no GPU that NVML can see")
    missing = [i for i in selected if i >= count]
    if missing:
        raise InvalidInput("gpus: %s not present on this host, which has %d GPU%s (indices 0-%d)"
                           % (", ".join(str(i) for i in missing), count, "" if count == 1 else "s", count - 1))
    return selected
