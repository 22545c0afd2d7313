# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one way the collection fails.

module_utils code raises GpuFleetError (or a subclass) with a message meant for the
person running the play, the partial module result as far as it got (``result``) and
any further fields (``details``). Every module's main() builds its AnsibleModule and
hands one call to run_module(), which turns the error into fail_json carrying all of
that; any other exception stays a traceback (a bug, not a failure to explain).
"""

from __future__ import annotations

from typing import Any, Callable


class GpuFleetError(Exception):
    """A failure with a message meant for the person running the play.

    `result`: the module result as far as the work got (reported with the failure);
    `details`: further fields for the failure result (for example ``gpu_errors``).
    """

    def __init__(self, msg: str, result: dict | None = None, **details: Any) -> None:
        super().__init__(msg)
        self.msg = msg
        self.result = result
        self.details = details

    def fail_fields(self) -> dict:
        """Keyword arguments for fail_json besides `msg`: the partial result, the details, `changed`."""
        fields = dict(self.result or {})
        fields.update(self.details)
        fields["changed"] = bool(fields.get("changed"))
        return fields


class InvalidInput(GpuFleetError):
    """An option value the module refuses; the message says what to change."""


class MissingLibrary(GpuFleetError):
    """A Python library or the NVIDIA driver library is not installed."""

    def fail_fields(self) -> dict:
        fields = super().fail_fields()
        fields["missing_library"] = True
        return fields


def run_module(module: Any, work: Callable[..., dict], *args: Any, **kwargs: Any) -> None:
    """Run `work(*args, **kwargs)` and exit the module with the dict it returns.

    A GpuFleetError becomes fail_json with its message and fail_fields(); anything else
    propagates (Ansible shows the traceback).
    """
    try:
        result = work(*args, **kwargs)
    except GpuFleetError as exc:
        module.fail_json(msg=exc.msg, **exc.fail_fields())
    else:
        module.exit_json(**result)
