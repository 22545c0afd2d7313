# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a stop does after the server is stopped, in the same module call: remove the files that
belong to the stopped server (its API key file), then release its GPUs and verify them free with
NVML (gpu_release's own work, which the module hands in: this layer does not reach _gpu).

One call instead of three (the stop, a file module, gpu_release): each module call over SSH costs
a round trip and a Python start on the host, and an experiment pays it for every variant. The
files go before the release, so a release that fails (a GPU still in use) leaves no key behind.
"""

from __future__ import annotations

import os
from typing import Callable

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError


def remove_files(paths: list, check_mode: bool = False) -> list:
    """Remove each of PATHS that exists (in check mode only say which); the ones that did, in order."""
    removed = []
    for path in paths:
        if not os.path.lexists(path):
            continue
        if not check_mode:
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue  # another run took it between the look and the removal
            except OSError as exc:
                raise GpuFleetError("cannot remove %s after the stop: %s" % (path, exc.strerror),
                                    result={"changed": bool(removed), "removed": removed})
        removed.append(path)
    return removed


def after_stop(stopped: dict, remove: list, release: Callable[[], dict] | None = None,
               check_mode: bool = False) -> dict:
    """The stop's result STOPPED with the files removed (`removed`) and, when RELEASE is given (the
    module's call of gpu_release's work), its result (`release`); `stopped` says whether a running
    server was (or in check mode would be) stopped."""
    out = dict(stopped, stopped=bool(stopped.get("changed")))
    out["removed"] = remove_files(remove, check_mode)
    out["changed"] = out["stopped"] or bool(out["removed"])
    if release is None:
        return out
    try:
        out["release"] = release()
    except GpuFleetError as exc:
        raise GpuFleetError(exc.msg, result=dict(out, release=exc.result or {}, changed=True), **exc.details)
    out["changed"] = out["changed"] or bool(out["release"].get("changed"))
    return out
