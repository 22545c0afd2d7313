# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_server/dirs.py: a start's directories made as ansible.builtin.file state=directory makes them
(parents created with the mode, whatever the umask; an existing one's mode set; a file in the way
refused, naming it); check mode only looks; server_process's start makes them before its lock file."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError, InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._server import dirs, supervisor


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(name="open_umask")
def fixture_open_umask():
    """A umask under which a plain mkdir would make 0700, not the 0750 asked for."""
    old = os.umask(0o077)
    yield
    os.umask(old)


@pytest.mark.usefixtures("open_umask")
def test_missing_directories_are_made_with_their_parents_each_with_the_mode(tmp_path):
    log, state = tmp_path / "var" / "log" / "sglang", tmp_path / "lib" / "gf"
    out = dirs.ensure_dirs([{"path": str(log), "mode": "0750"}, {"path": str(state), "mode": 0o700}])
    assert out == {"created": [str(tmp_path / "var"), str(tmp_path / "var" / "log"), str(log), str(tmp_path / "lib"),
                               str(state)], "mode_set": []}
    assert [mode(p) for p in (tmp_path / "var", tmp_path / "var" / "log", log)] == [0o750] * 3
    assert (mode(tmp_path / "lib"), mode(state)) == (0o700, 0o700)
    # Made and right: nothing to do.
    assert dirs.ensure_dirs([{"path": str(log), "mode": "0750"}]) == {"created": [], "mode_set": []}


def test_an_existing_directory_gets_the_mode_and_its_parents_stay(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o755)
    os.chmod(tmp_path, 0o711)
    assert dirs.ensure_dirs([{"path": str(state), "mode": "0700"}]) == {"created": [], "mode_set": [str(state)]}
    assert (mode(state), mode(tmp_path)) == (0o700, 0o711)


@pytest.mark.parametrize("where", ["itself", "parent"])
def test_a_file_in_the_way_is_refused_naming_it(tmp_path, where):
    blocker = tmp_path / "notadir"
    blocker.write_text("not a directory\n")
    path = blocker if where == "itself" else blocker / "sglang"
    named = "it exists" if where == "itself" else "%s exists" % blocker
    with pytest.raises(GpuFleetError) as caught:
        dirs.ensure_dirs([{"path": str(tmp_path / "made"), "mode": "0750"}, {"path": str(path), "mode": "0750"}])
    assert caught.value.msg == ("cannot create the directory %s: %s and is not a directory; remove it or choose "
                                "another directory" % (path, named))
    # What was made before the refusal is in the failure's result.
    assert caught.value.fail_fields()["dirs_created"] == [str(tmp_path / "made")]
    assert caught.value.fail_fields()["changed"] is True
    assert blocker.read_text() == "not a directory\n"


def test_a_mode_that_is_not_octal_is_refused(tmp_path):
    with pytest.raises(InvalidInput, match="the mode 'rwx' of .* is not an octal mode"):
        dirs.ensure_dirs([{"path": str(tmp_path / "d"), "mode": "rwx"}])


def test_check_mode_touches_nothing_and_says_what_it_would_do(tmp_path):
    existing = tmp_path / "state"
    existing.mkdir()
    os.chmod(existing, 0o755)
    new = tmp_path / "log" / "sglang"
    out = dirs.ensure_dirs([{"path": str(new), "mode": "0750"}, {"path": str(existing), "mode": "0700"}],
                           check_mode=True)
    assert out == {"created": [str(tmp_path / "log"), str(new)], "mode_set": [str(existing)]}
    assert not (tmp_path / "log").exists() and mode(existing) == 0o755


@pytest.mark.usefixtures("open_umask")
def test_a_start_makes_its_directories_before_anything_is_written_in_them(tmp_path):
    log, state = tmp_path / "log", tmp_path / "state"
    params = {"state": "started", "state_file": str(state / "s.json"), "argv": ["/nonexistent/gf-server"], "env": {},
              "log_path": str(log / "s.log"), "fingerprint": "fp", "listen_host": None, "listen_port": None,
              "lock_timeout": 5.0, "dirs": [{"path": str(log), "mode": "0750"}, {"path": str(state), "mode": "0700"}]}
    # Check mode: the start and the directories it would make, nothing made.
    assert supervisor.supervise(params, check_mode=True) == {
        "changed": True, "running": True, "dirs_created": [str(log), str(state)], "dirs_mode_set": []}
    assert not log.exists() and not state.exists()
    # The launch fails (no such program) after the directories, the lock file and the log: the failure says what
    # was made, with the modes given (host_lock's and start's own makedirs found them there).
    with pytest.raises(GpuFleetError, match="cannot start /nonexistent/gf-server") as caught:
        supervisor.supervise(params)
    fields = caught.value.fail_fields()
    assert (fields["changed"], fields["dirs_created"], fields["dirs_mode_set"]) == (True, [str(log), str(state)], [])
    assert (mode(log), mode(state)) == (0o750, 0o700)
    assert os.path.exists(str(state / "s.json.lock")) and os.path.exists(str(log / "s.log"))
