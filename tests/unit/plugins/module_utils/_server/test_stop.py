# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a stop does after the server is stopped (_server/stop.py): the files go (not in check
mode), then the release runs (server_process's gpu_release call: the caller's options, the sweep
and the NVML check fixed); a failed release still leaves the files removed and says so."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.release import ReleaseOptions
from ansible_collections.gpufleet.serving.plugins.module_utils._server import stop
from ansible_collections.gpufleet.serving.plugins.modules import server_process

RELEASE = {"engine": ["sglang"], "patterns": [], "gpus": "all", "sweep_users": [], "term_timeout": 5.0, "timeout": 30.0}


@pytest.fixture(name="key_file")
def fixture_key_file(tmp_path):
    path = tmp_path / "sglang-30000.secret.yaml"
    path.write_text("api-key: x\n")
    return path


@pytest.mark.parametrize("check_mode", [False, True])
@pytest.mark.parametrize("was_running", [False, True])
def test_files_go_whether_or_not_a_server_ran(key_file, tmp_path, check_mode, was_running):
    out = stop.after_stop({"changed": was_running, "running": False}, [str(key_file), str(tmp_path / "absent")],
                          None, check_mode=check_mode)
    assert out["removed"] == [str(key_file)]  # the one that existed, in check mode the one that would go
    assert key_file.exists() is check_mode
    assert out["stopped"] is was_running and out["changed"] is True
    assert "release" not in out


def test_nothing_to_remove_and_nothing_running_changes_nothing(tmp_path):
    out = stop.after_stop({"changed": False, "running": False}, [str(tmp_path / "absent")], None)
    assert out == {"changed": False, "running": False, "stopped": False, "removed": []}


def test_release_runs_after_the_removal(key_file):
    seen = {}

    def release():
        seen["key_there"] = key_file.exists()
        return {"changed": True, "killed": [{"pid": 7}], "gpus": [], "elapsed": 0.1}

    out = stop.after_stop({"changed": False, "running": False}, [str(key_file)], release)
    assert seen["key_there"] is False
    assert out["release"]["killed"] == [{"pid": 7}] and out["changed"] is True and out["stopped"] is False


def test_the_stop_releases_with_the_sweep_and_the_nvml_check():
    params = server_process.release_params(dict(RELEASE))
    assert set(ReleaseOptions.FIELDS) <= set(params)  # every option the release reads is given
    assert {k: params[k] for k in RELEASE} == RELEASE
    assert (params["sweep"], params["verify"], params["max_used_mib"], params["force_broad"]) == (True, True, 0.0, False)


def test_a_failed_release_fails_with_its_message_and_the_files_already_gone(key_file):
    def release():
        raise GpuFleetError("GPU 3 still holds 1200 MiB", result={"gpus": [{"index": 3}]}, gpu_errors=["x"])

    with pytest.raises(GpuFleetError) as err:
        stop.after_stop({"changed": True, "running": False, "pid": 11}, [str(key_file)], release)
    assert err.value.msg == "GPU 3 still holds 1200 MiB"
    fields = err.value.fail_fields()
    assert fields["removed"] == [str(key_file)] and not key_file.exists()
    assert fields["stopped"] is True and fields["pid"] == 11 and fields["release"] == {"gpus": [{"index": 3}]}
    assert fields["gpu_errors"] == ["x"]


def test_a_file_that_cannot_be_removed_is_a_clear_error(tmp_path):
    directory = tmp_path / "a-directory"
    directory.mkdir()
    with pytest.raises(GpuFleetError, match="cannot remove %s after the stop" % directory):
        stop.after_stop({"changed": False, "running": False}, [str(directory)], None)
