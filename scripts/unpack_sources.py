# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unpack the Python sources (and dist-info) of every wheel in a directory, nothing else.

`make setup-vllm` uses it for the vLLM wheel: its .py files are what the source tests read;
its compiled libraries (hundreds of MB) are never needed.

Usage: python scripts/unpack_sources.py WHEEL_DIR TARGET_DIR
"""

from __future__ import annotations

import os
import sys
import zipfile


def wanted(name: str) -> bool:
    top = name.split("/", 1)[0]
    return name.endswith(".py") or (top.endswith(".dist-info") and name.endswith("/METADATA"))


def unpack(wheel_dir: str, target: str) -> int:
    count = 0
    wheels = sorted(f for f in os.listdir(wheel_dir) if f.endswith(".whl"))
    if not wheels:
        raise SystemExit("no .whl in %s" % wheel_dir)
    for wheel in wheels:
        with zipfile.ZipFile(os.path.join(wheel_dir, wheel)) as archive:
            members = [m for m in archive.namelist() if wanted(m) and ".." not in m.split("/")]
            archive.extractall(target, members)
            count += len(members)
    return count


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    print("unpacked %d files into %s" % (unpack(sys.argv[1], sys.argv[2]), sys.argv[2]))
