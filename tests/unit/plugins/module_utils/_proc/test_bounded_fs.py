# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""File-system calls bounded in time: a call that blocks fails naming its path, and the next one works.

A FIFO without a writer blocks open() as a hung mount blocks a stat (the FUSE case itself runs
in tests/integration/test_release_host_cases.py).
"""

from __future__ import annotations

import os
import time

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._proc import bounded_fs


@pytest.fixture
def short_deadline():
    bounded_fs.set_deadline(time.monotonic() + 0.5)
    yield
    bounded_fs.set_deadline(None)
    bounded_fs.close()


def test_blocking_read_fails_naming_the_path_within_the_deadline(tmp_path, short_deadline):
    fifo = str(tmp_path / "nvidia-bug-report.log")
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(bounded_fs.StuckPath) as err:
        bounded_fs.read_head(fifo, 100)
    assert time.monotonic() - t0 < 2.0
    assert err.value.msg.startswith("%s did not answer within 0." % fifo), err.value.msg
    # The stuck helper is left behind; the next call gets a fresh one.
    (tmp_path / "ok").write_text("while true")
    assert bounded_fs.read_head(str(tmp_path / "ok"), 5) == "while"


def test_stat_returns_what_os_stat_does_and_raises_its_oserror(tmp_path, short_deadline):
    path = tmp_path / "f"
    path.write_text("x")
    assert bounded_fs.stat(str(path)).st_ino == os.stat(path).st_ino
    with pytest.raises(FileNotFoundError):
        bounded_fs.stat(str(tmp_path / "missing"))
