# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/router_worker.py run as Ansible runs it, against the real sglang-router 0.3.2: its
documented options are its argument spec; present then absent with the result's one shape; check
mode; a refusal below min_healthy and an unreachable router fail before anything changes; the
keys stay out of the result (no_log). The cases in detail: module_utils/_router/test_workers.py."""

from __future__ import annotations

from tests.support import module_docs
from tests.support.net import free_port


def test_documented_options_are_the_argument_spec():
    assert module_docs.mismatches("router_worker") == []


def test_present_then_absent_with_one_result_shape(router, tiny):
    one, two = tiny(), tiny()
    started = router([one.url], admin_key="adm-1")
    common = {"router_url": started.url, "api_key": "adm-1", "url": two.url, "poll_interval": 0.05}
    added = module_docs.run("router_worker", dict(common, worker_api_key="wk-1", timeout=30))
    assert (added["_rc"], added["changed"], added["added"], added["healthy"]) == (0, True, True, 2), added.get("msg")
    assert {w["url"] for w in added["workers"]} == {one.url, two.url} and added["worker"]["healthy"] is True
    assert "adm-1" not in str(added) and "wk-1" not in str(added)
    refused = module_docs.run("router_worker", dict(common, state="absent", min_healthy=2))
    assert refused["_rc"] == 1 and "fewer than min_healthy=2; nothing was changed" in refused["msg"]
    assert refused["changed"] is False and refused["healthy"] == 2
    check = module_docs.run("router_worker", dict(common, state="absent", _ansible_check_mode=True))
    assert (check["changed"], check["removed"], check["healthy"]) == (True, True, 1)
    removed = module_docs.run("router_worker", dict(common, state="absent"))
    assert (removed["changed"], removed["removed"], [w["url"] for w in removed["workers"]]) == (True, True, [one.url])
    again = module_docs.run("router_worker", dict(common, state="absent"))
    assert (again["_rc"], again["changed"], again["removed"]) == (0, False, False)


def test_an_unreachable_router_fails_naming_its_url():
    url = "http://127.0.0.1:%d" % free_port()
    result = module_docs.run("router_worker", {"router_url": url, "url": "http://127.0.0.1:1", "request_timeout": 2})
    assert result["_rc"] == 1 and result["changed"] is False
    assert result["msg"].startswith("the router at %s does not answer" % url), result["msg"]
