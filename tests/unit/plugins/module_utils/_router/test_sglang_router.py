# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang_router.py against the real binary: GET /workers read into Worker rows, POST /workers
answering the worker's id (the same id for a URL it has), DELETE by id, the job status of an
addition still pending, and an answer that is no worker list."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._router import workers
from ansible_collections.gpufleet.serving.plugins.module_utils._router.kind import RouterError
from ansible_collections.gpufleet.serving.plugins.module_utils._router.sglang_router import KIND
from tests.support.net import free_port
from tests.support.polling import poll


def test_add_list_and_remove_by_id(router, tiny):
    one, two = tiny(), tiny()
    api = workers.client(router([one.url]).url)
    worker_id = KIND.add(api, two.url, None)
    assert KIND.add(api, two.url, None) == worker_id
    row = poll(lambda: next((w for w in KIND.workers(api) if w.url == two.url and w.healthy), None), timeout=30)
    assert row.id == worker_id
    KIND.remove(api, row)  # accepted (202); the router drops it in a job of its own
    poll(lambda: [w.url for w in KIND.workers(api)] == [one.url], timeout=30, what="the removal")


def test_a_pending_addition_shows_its_job_and_an_unknown_id_is_refused(router, tiny):
    api = workers.client(router([tiny().url]).url)
    dead = "http://127.0.0.1:%d" % free_port()
    worker_id = KIND.add(api, dead, None)
    assert KIND.pending(api, dead, worker_id).startswith("addition job ")
    assert KIND.pending(api, dead, None) is None
    gone = KIND.workers(api)[0]._replace(id="00000000-0000-0000-0000-000000000000")
    with pytest.raises(RouterError, match="answered HTTP 404 while removing worker .*WORKER_NOT_FOUND"):
        KIND.remove(api, gone)


def test_a_server_that_is_no_router_says_so(tiny):
    with pytest.raises(RouterError, match=r"answered GET /workers with no worker list: is it sglang-router"):
        KIND.workers(workers.client(tiny().url))
