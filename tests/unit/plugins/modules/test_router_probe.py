# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/router_probe.py run as Ansible runs it: its documented options are its argument spec;
through the real sglang-router 0.3.2 in front of a stand-in server it loads the router until its
time is up and returns every request and reading; a router that does not answer fails it."""

from __future__ import annotations

from tests.support import module_docs
from tests.support.net import free_port
from tests.support.servers.launch import StandIn


def test_documented_options_are_the_argument_spec():
    assert module_docs.mismatches("router_probe") == []


def test_the_probe_runs_through_the_router_until_its_time(router, tmp_path):
    server = StandIn("--rate", "400", "--ttft", "0.01")
    try:
        started = router([server.url])
        result = module_docs.run("router_probe", {
            "router_url": started.url, "stop_file": str(tmp_path / "stop"), "clients": 2, "output_len": 10,
            "before_s": 0, "after_s": 0, "max_s": 1, "sample_interval": 0.1})
    finally:
        server.stop()
    assert result["_rc"] == 0 and result["changed"] is False, result.get("msg")
    assert result["requests"] and {r["outcome"] for r in result["requests"]} == {"ok"}
    assert result["stopped_s"] >= 1 and result["samples"][0]["healthy"] == [server.url]


def test_a_router_that_does_not_answer_fails_the_task(tmp_path):
    url = "http://127.0.0.1:%d" % free_port()
    result = module_docs.run("router_probe", {"router_url": url, "stop_file": str(tmp_path / "stop"),
                                              "request_timeout": 2})
    assert result["_rc"] != 0 and "the router at %s does not answer" % url in result["msg"], result
