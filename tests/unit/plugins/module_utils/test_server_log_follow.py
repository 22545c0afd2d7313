# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""LogFollower on logs that logrotate moves under it: copytruncate, rename-and-reopen, late creation."""

from __future__ import annotations

import os
import shutil

from ansible_collections.gpufleet.serving.plugins.module_utils._server.log import LogFollower

START = "".join("[2026-05-01 12:00:0%d] start-up line %d of the server\n" % (i, i) for i in range(4))
CRASH = ["Traceback (most recent call last):",
         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
         "95.59 GiB of which 1.12 GiB is free.",
         "[2026-05-01 12:00:09] Received sigquit from a child process. It usually means the child failed."]


def test_copytruncate_then_more_than_before_is_read_from_the_start(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(START)
    follow = LogFollower(str(log))
    assert len(follow.read_lines()) == 4
    shutil.copy(str(log), str(log) + ".1")  # logrotate copytruncate: copy, then truncate in place
    os.truncate(str(log), 0)
    with open(str(log), "a") as writer:  # the server's O_APPEND writes land at the new end
        writer.write("\n".join(CRASH) + "\n")
    assert os.path.getsize(str(log)) > len(START)  # the size alone does not show the truncation
    assert follow.read_lines() == CRASH


def test_copytruncate_under_a_writer_without_append_skips_the_hole(tmp_path):
    log = tmp_path / "server.log"
    writer = open(str(log), "w")  # `> log`: the writer keeps its own offset
    writer.write(START)
    writer.flush()
    follow = LogFollower(str(log))
    assert len(follow.read_lines()) == 4
    os.truncate(str(log), 0)
    writer.write("\n".join(CRASH) + "\n")  # lands at the old offset: a hole of NUL bytes before it
    writer.close()
    assert follow.read_lines() == CRASH


def test_rename_rotation_keeps_the_old_files_unread_lines(tmp_path):
    log = tmp_path / "server.log"
    with open(str(log), "a") as writer:
        writer.write(START)
        writer.flush()
        follow = LogFollower(str(log))
        assert len(follow.read_lines()) == 4
        writer.write("last line before the rotation\n")
        writer.flush()
        os.rename(str(log), str(log) + ".1")
    log.write_text("\n".join(CRASH) + "\n")
    assert follow.read_lines() == ["last line before the rotation"] + CRASH


def test_shrunk_and_late_created_logs(tmp_path):
    log = tmp_path / "server.log"
    follow = LogFollower(str(log))
    assert follow.read_lines() == []
    log.write_text(START)
    assert len(follow.read_lines()) == 4
    log.write_text("relaunch\n")
    assert follow.read_lines() == ["relaunch"]
