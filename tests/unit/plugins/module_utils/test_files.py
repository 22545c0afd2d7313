# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_files.py: write_atomic replaces a file whole, with the mode asked for, and leaves no temporary
file behind, also when the write fails."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._files import write_atomic


def test_text_or_bytes_replace_the_file_whole_with_the_mode(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("old")
    inode = os.stat(path).st_ino
    write_atomic(str(path), "névé", mode=0o600)
    assert path.read_bytes() == "névé".encode() and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.stat(path).st_ino != inode  # a new file renamed over the old: a reader never sees half of one
    write_atomic(str(path), b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01" and stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert os.listdir(tmp_path) == ["state.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("old")
    with pytest.raises(TypeError):
        write_atomic(str(path), ["not", "bytes"])
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["state.json"]
    (tmp_path / "dir").mkdir()
    with pytest.raises(IsADirectoryError):
        write_atomic(str(tmp_path / "dir"), "x")  # the rename onto a directory fails
    assert sorted(os.listdir(tmp_path)) == ["dir", "state.json"] and os.listdir(tmp_path / "dir") == []
