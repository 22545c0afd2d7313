# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The server_wait action's bookkeeping between slices: phases and the timeout message."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.action.server_wait import merge_phases, timeout_message


def test_phases_keep_their_first_time_and_new_ones_move_by_the_slice_offset():
    first = [{"name": "init", "at": 0.0}, {"name": "loading_weights", "at": 12.5}]
    # The next slice reads the whole log again: old lines at 0, a new phase at 3 s into the slice.
    second = [{"name": "init", "at": 0.0}, {"name": "loading_weights", "at": 0.0}, {"name": "kv_cache", "at": 3.0}]
    merged = merge_phases(first, second, 30.4)
    assert [(p["name"], p["at"]) for p in merged] == [("init", 0.0), ("loading_weights", 12.5), ("kv_cache", 33.4)]
    assert second[2]["at"] == 3.0  # the slice's own result is not changed


def test_timeout_message_names_phase_health_and_the_last_log_lines():
    result = {"url": "http://127.0.0.1:30000", "phase": "cuda_graph", "health_status": None,
              "health_error": "Connection refused", "log_tail": ["l%d" % i for i in range(10)] + [""]}
    msg = timeout_message(result, 1800.4, 1800.0, "/var/log/sglang/sglang-30000.log")
    assert msg == ("Server at http://127.0.0.1:30000 not ready after 1800.4 s (timeout 1800.0 s); phase: cuda_graph; "
                   "last health: Connection refused; log /var/log/sglang/sglang-30000.log: l4 | l5 | l6 | l7 | l8 | l9")


def test_timeout_message_with_an_http_status_and_no_log():
    msg = timeout_message({"url": "u", "phase": None, "health_status": 503}, 5.0, 5.0, None)
    assert msg == "Server at u not ready after 5.0 s (timeout 5.0 s); phase: unknown; last health: HTTP 503"


def test_every_slice_after_the_first_checks_the_first_ones_process_identity():
    from ansible_collections.gpufleet.serving.plugins.action.server_wait import ActionModule

    sent = []
    answers = [
        {"failed": True, "cause": {"kind": "timeout"}, "url": "u",
         "process": {"alive": True, "pid": 4242, "start_time": 1000, "exit_code": None, "detail": ""}},
        {"failed": True, "cause": {"kind": "exited"}, "url": "u",
         "process": {"alive": False, "pid": 4242, "start_time": None, "exit_code": None, "detail": "reused"}},
    ]
    action = ActionModule.__new__(ActionModule)
    action._execute_module = lambda module_args, task_vars: (sent.append(dict(module_args)), answers[len(sent) - 1])[1]
    res = action._wait_in_slices({"url": "u", "pid": 4242}, 1.0, 60.0, {})
    assert res["cause"]["kind"] == "exited"
    assert "process_identity" not in sent[0]
    assert sent[1]["process_identity"] == {"pid": 4242, "start_time": 1000}
