# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""run_module(): the one way a module exits, with its result or with the error's message, result and details."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError, MissingLibrary, run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._server.readiness import WaitFailed


class Exited(Exception):
    pass


class FakeModule:
    """exit_json / fail_json record their arguments and stop, as AnsibleModule's do."""

    def __init__(self):
        self.exit = self.fail = None

    def exit_json(self, **kwargs):
        self.exit = kwargs
        raise Exited()

    def fail_json(self, **kwargs):
        self.fail = kwargs
        raise Exited()


def run(work, *args, **kwargs):
    module = FakeModule()
    with pytest.raises(Exited):
        run_module(module, work, *args, **kwargs)
    return module


def test_the_result_is_exited_with():
    module = run(lambda params, check_mode=False: {"changed": check_mode, "x": params["x"]}, {"x": 1}, check_mode=True)
    assert module.exit == {"changed": True, "x": 1} and module.fail is None


def raiser(exc):
    def work():
        raise exc
    return work


def test_a_failure_keeps_the_partial_result_and_details():
    exc = GpuFleetError("GPUs not released", result={"changed": True, "killed": [{"pid": 7}]}, gpu_errors={"0": "lost"})
    module = run(raiser(exc))
    assert module.fail == {"msg": "GPUs not released", "changed": True, "killed": [{"pid": 7}], "gpu_errors": {"0": "lost"}}
    assert module.exit is None


def test_a_failure_without_a_result_says_nothing_changed():
    assert run(raiser(GpuFleetError("no"))).fail == {"msg": "no", "changed": False}


def test_missing_library_is_marked():
    assert run(raiser(MissingLibrary("pip install nvidia-ml-py"))).fail["missing_library"] is True


def test_wait_failed_is_a_gpufleet_error_with_its_result():
    exc = WaitFailed("Server process 1 died", {"changed": False, "ready": False, "log_tail": ["boom"]})
    assert isinstance(exc, GpuFleetError) and exc.result["ready"] is False
    assert run(raiser(exc)).fail == {"msg": "Server process 1 died", "changed": False, "ready": False, "log_tail": ["boom"]}


def test_any_other_exception_stays_a_traceback():
    module = FakeModule()
    with pytest.raises(ZeroDivisionError):
        run_module(module, lambda: 1 / 0)
    assert module.fail is None and module.exit is None


def test_an_unwritable_output_fails_where_it_happens(tmp_path):
    from ansible_collections.gpufleet.serving.plugins.module_utils._bench.run import write_output
    (tmp_path / "file").write_text("x")
    with pytest.raises(GpuFleetError, match="cannot write %s/file/out.json: " % tmp_path):
        write_output(str(tmp_path / "file" / "out.json"), {"levels": []})
