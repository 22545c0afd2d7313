# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A server's directories (its log and state directories), made in the start's own module run.

Made as ansible.builtin.file with state=directory and a mode makes them: a missing directory is
created with its missing parents, each directory created gets the mode, an existing one gets the
mode when it has another, and something in the way that is not a directory is refused, naming it.
Two file tasks before the start would cost two module runs on the host (a round trip and a Python
start each, about 0.45 s apiece on the simulated fleet) for what a few system calls do here.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError, InvalidInput


def parse_mode(value: Any, path: str) -> int:
    """A mode as the file module takes it: an octal string such as '0750', or a number."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(str(value), 8)
    except ValueError:
        raise InvalidInput("dirs: the mode %r of %s is not an octal mode: give it as a string such as '0750'"
                           % (value, path)) from None


def _missing(path: str) -> list[str]:
    """PATH and its parents that do not exist, outermost first; refused when the nearest that exists
    is not a directory."""
    missing, head = [], path
    while head and not os.path.lexists(head):
        missing.append(head)
        head = os.path.dirname(head)
    if head and not os.path.isdir(head):
        raise _in_the_way(path, head)
    return missing[::-1]


def _in_the_way(path: str, blocker: str) -> GpuFleetError:
    where = "it exists" if blocker == path else "%s exists" % blocker
    return GpuFleetError("cannot create the directory %s: %s and is not a directory; remove it or choose another "
                         "directory" % (path, where))


def _make(path: str, mode: int, check_mode: bool) -> list[str]:
    """Create PATH and its missing parents with MODE; the directories created (in check mode, to create)."""
    created = []
    for directory in _missing(path):
        if check_mode:
            created.append(directory)
            continue
        try:
            os.mkdir(directory)
        except FileExistsError:
            if os.path.isdir(directory):
                continue  # another run made it between the look and the mkdir
            raise _in_the_way(path, directory)
        except OSError as exc:
            raise GpuFleetError("cannot create the directory %s: %s" % (directory, exc.strerror))
        _chmod(directory, mode)  # mkdir's mode is cut by the umask
        created.append(directory)
    return created


def _chmod(path: str, mode: int) -> None:
    try:
        os.chmod(path, mode)
    except OSError as exc:
        raise GpuFleetError("cannot set the mode %04o of the directory %s: %s" % (mode, path, exc.strerror))


def ensure_dirs(dirs: list[dict[str, Any]], check_mode: bool = False) -> dict[str, list[str]]:
    """Each of DIRS (`path`, `mode`) a directory with its mode; in check mode only look.

    Returns the directories created, parents included (`created`), and the existing ones given
    their mode (`mode_set`); in check mode, the ones that would be. A failure's result says which
    were made before it."""
    out: dict[str, list[str]] = {"created": [], "mode_set": []}
    try:
        for item in dirs:
            path = item["path"]
            mode = parse_mode(item["mode"], path)
            try:
                info = os.stat(path)
            except OSError:
                info = None  # missing, a dangling link, or a parent that is not a directory: _missing says which
            if info is None:
                out["created"] += _make(path, mode, check_mode)
            elif not stat.S_ISDIR(info.st_mode):
                raise _in_the_way(path, path)
            elif stat.S_IMODE(info.st_mode) != mode:
                if not check_mode:
                    _chmod(path, mode)
                out["mode_set"].append(path)
    except GpuFleetError as exc:
        exc.result = dict(exc.result or {}, changed=bool(out["created"] or out["mode_set"]),
                          dirs_created=out["created"], dirs_mode_set=out["mode_set"])
        raise
    return out
