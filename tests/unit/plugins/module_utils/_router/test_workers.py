# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_router/workers.py against the real sglang-router 0.3.2 with tiny workers: add and wait until
healthy, list, remove, a removal refused below min_healthy (nothing changed), a worker the router
does not know (nothing to remove, or refused), a worker that never answers, a router that does not answer, the admin key, the
key the router sends to a worker, check mode, and the metrics page."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._router import registry, workers
from ansible_collections.gpufleet.serving.plugins.module_utils._router.kind import RouterError, RouterUnreachable
from tests.support.net import free_port
from tests.support.polling import poll

KIND = registry.get("sglang-router")


def listed(result):
    return sorted((w["url"], w["healthy"]) for w in result["workers"])


def test_add_waits_until_healthy_and_a_second_add_changes_nothing(router, tiny):
    one, two = tiny(), tiny()
    api = workers.client(router([one.url]).url)
    added = workers.present(KIND, api, two.url, timeout=30, poll_interval=0.05)
    assert (added["changed"], added["added"], added["worker"]["healthy"]) == (True, True, True)
    assert listed(added) == sorted([(one.url, True), (two.url, True)]) and added["healthy"] == 2
    assert added["worker"]["id"] and added["elapsed_s"] < 30
    again = workers.present(KIND, api, two.url + "/", timeout=30)
    assert (again["changed"], again["added"], again["worker"]["id"]) == (False, False, added["worker"]["id"])


def test_remove_takes_the_worker_out_at_once(router, tiny):
    one, two = tiny(), tiny()
    api = workers.client(router([one.url, two.url]).url)
    removed = workers.absent(KIND, api, two.url, min_healthy=1)
    assert (removed["changed"], removed["removed"], removed["healthy"]) == (True, True, 1)
    assert listed(removed) == [(one.url, True)]
    assert listed(workers.info(KIND, api)) == [(one.url, True)]


def test_a_removal_below_min_healthy_is_refused_and_changes_nothing(router, tiny):
    one, two = tiny(), tiny()
    api = workers.client(router([one.url, two.url]).url)
    with pytest.raises(RouterError, match=r"refusing to remove worker .*: 1 healthy worker\(s\) would be left,"
                                          r" fewer than min_healthy=2; nothing was changed") as failure:
        workers.absent(KIND, api, one.url, min_healthy=2)
    assert failure.value.result["removed"] is False and failure.value.result["healthy"] == 2
    assert listed(workers.info(KIND, api)) == sorted([(one.url, True), (two.url, True)])


def test_a_worker_the_router_does_not_know_is_nothing_to_remove(router, tiny):
    one = tiny()
    api = workers.client(router([one.url]).url)
    unknown = "http://127.0.0.1:%d" % free_port()
    result = workers.absent(KIND, api, unknown, min_healthy=1)
    expected = (False, False, {"url": unknown, "id": "", "healthy": False})
    assert (result["changed"], result["removed"], result["worker"]) == expected
    assert listed(result) == [(one.url, True)]
    # With missing="fail" (a rollout: the router restarted without the fleet's servers), a refusal.
    with pytest.raises(RouterError, match="refusing to take worker %s out of the router at %s: the router does not"
                       " list it \\(it lists 1 worker\\(s\\): %s\\)" % (unknown, api.base_url, one.url)):
        workers.absent(KIND, api, unknown, min_healthy=0, missing="fail")
    assert listed(workers.info(KIND, api)) == [(one.url, True)]


def test_a_worker_that_never_answers_fails_the_wait_naming_it(router, tiny):
    api = workers.client(router([tiny().url]).url)
    dead = "http://127.0.0.1:%d" % free_port()
    with pytest.raises(RouterError, match=r"worker %s is not healthy in the router at .* after 1 s \(addition job"
                       % dead) as failure:
        workers.present(KIND, api, dead, timeout=1, poll_interval=0.1)
    assert failure.value.result["added"] is True and failure.value.result["worker"]["healthy"] is False


def test_check_mode_reports_and_touches_nothing(router, tiny):
    one, two = tiny(), tiny()
    api = workers.client(router([one.url]).url)
    would_add = workers.present(KIND, api, two.url, check_mode=True)
    would_remove = workers.absent(KIND, api, one.url, min_healthy=0, check_mode=True)
    assert (would_add["changed"], would_add["added"], would_remove["changed"], would_remove["removed"]) == (
        True, True, True, True)
    assert would_remove["workers"] == [] and listed(workers.info(KIND, api)) == [(one.url, True)]


@pytest.mark.parametrize("call", [
    lambda api, url: workers.info(KIND, api),
    lambda api, url: workers.present(KIND, api, url),
    lambda api, url: workers.absent(KIND, api, url, min_healthy=0),
], ids=["info", "present", "absent"])
def test_a_router_that_does_not_answer_fails_naming_its_url(call):
    url = "http://127.0.0.1:%d" % free_port()
    with pytest.raises(RouterUnreachable, match=r"the router at %s does not answer .* check router_url" % url):
        call(workers.client(url, timeout=2), "http://127.0.0.1:1")


def test_an_admin_key_the_router_needs(router, tiny):
    one, two = tiny(), tiny()
    started = router([one.url], admin_key="adm-secret")
    with pytest.raises(RouterError, match=r"refused listing its workers with HTTP 401 .*give its admin key as api_key"):
        workers.present(KIND, workers.client(started.url), two.url)
    with pytest.raises(RouterError, match="HTTP 401"):
        workers.info(KIND, workers.client(started.url, api_key="wrong"))
    api = workers.client(started.url, api_key="adm-secret")
    assert workers.present(KIND, api, two.url, timeout=30, poll_interval=0.05)["healthy"] == 2


def test_the_worker_key_is_what_the_router_sends_that_worker(router, tiny):
    one, two = tiny(), tiny()
    api = workers.client(router([one.url]).url)
    workers.present(KIND, api, two.url, worker_api_key="wk-2", timeout=30, poll_interval=0.05)
    assert poll(lambda: [auth for path, auth in two.seen if auth], timeout=10, what="a request with a key") == [
        "Bearer wk-2"] * len([auth for path, auth in two.seen if auth])


def test_the_metrics_page_is_read_per_router_and_per_worker(router, tiny):
    one, two = tiny(), tiny()
    started = router([one.url, two.url])
    result = workers.info(KIND, workers.client(started.url), metrics_url=started.metrics_url)
    assert (result["healthy"], result["total"], result["metrics"]["smg_worker_pool_size"]) == (2, 2, 2)
    assert {url: m["smg_worker_health"] for url, m in result["worker_metrics"].items()} == {one.url: 1, two.url: 1}
    with pytest.raises(RouterUnreachable, match="set metrics_url"):
        workers.info(KIND, workers.client(started.url), metrics_url=started.url + "/metrics")


def test_a_router_url_that_is_not_http_says_what_to_write():
    with pytest.raises(InvalidInput, match=r"router_url 'router-host:30000' is not an http:// or https:// URL"):
        workers.client("router-host:30000")
