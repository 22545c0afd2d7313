# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_proc/run_lock.py: the first run takes the lock, a second live run is refused naming the
first, the same run takes it again unchanged, a run that is gone leaves a stale lock the next run
takes over, only the holder releases it, and the owner of a run is its outermost Ansible process."""

from __future__ import annotations

import subprocess

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._proc import run_lock

URL = "http://127.0.0.1:30000"


@pytest.fixture
def runs():
    made = []

    def start():
        proc = subprocess.Popen(["sleep", "300"])  # a live process standing for a run
        made.append(proc)
        return proc
    yield start
    for proc in made:
        proc.kill()
        proc.wait()


def test_one_run_at_a_time_and_a_stale_lock_is_taken_over(runs, tmp_path):
    first, second = runs(), runs()
    one, two = run_lock.run_owner(first.pid), run_lock.run_owner(second.pid)
    assert one["pid"] == first.pid and one["start"] and one["argv"] == "sleep 300"
    taken = run_lock.acquire(str(tmp_path), URL, "swap_to_eagle.yml", one)
    assert taken["changed"] is True and taken["stale"] is None and taken["holder"]["what"] == "swap_to_eagle.yml"
    assert run_lock.acquire(str(tmp_path), URL, "again", one)["changed"] is False
    with pytest.raises(run_lock.LockHeld, match=r"refusing to start: another rollout through %s is running "
                       r"\(swap_to_eagle.yml, pid %d: sleep 300\)" % (URL, first.pid)):
        run_lock.acquire(str(tmp_path), URL, "swap_to_base.yml", two)
    assert run_lock.acquire(str(tmp_path), "http://other:30000", "x", two)["changed"] is True  # another router
    assert run_lock.release(str(tmp_path), URL, two)["changed"] is False  # not its lock
    first.kill()
    first.wait()
    over = run_lock.acquire(str(tmp_path), URL, "swap_to_base.yml", two)
    assert over["changed"] is True and over["stale"]["pid"] == first.pid
    assert run_lock.release(str(tmp_path), URL, two)["changed"] is True
    assert run_lock.acquire(str(tmp_path), URL, "x", one)["stale"] is None  # released: no stale lock


def test_a_task_takes_and_drops_the_lock(runs, tmp_path):
    owner = run_lock.run_owner(runs().pid)
    params = {"router_url": URL + "/", "lock_dir": str(tmp_path / "locks"), "what": "w", "state": "present"}
    assert run_lock.lock_task(params, owner=owner)["holder"]["key"] == URL
    assert run_lock.lock_task(dict(params, state="absent"), owner=owner)["changed"] is True
    assert run_lock.lock_task(dict(params, state="absent"), owner=owner)["changed"] is False


@pytest.mark.parametrize("argv, expected", [
    (["/usr/bin/python3", "/venv/bin/ansible-playbook", "-i", "inv", "site.yml"], True),
    (["/venv/bin/ansible-playbook", "site.yml"], True),
    (["/usr/bin/python3", "-m", "pytest"], False),
    ([], False),
])
def test_entry_points(argv, expected):
    assert run_lock._is_entry_point(argv) is expected  # pylint: disable=protected-access
