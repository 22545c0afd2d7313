# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_router/sampling.py against the real sglang-router 0.3.2: a reading lists the healthy and the
listed workers; a router gone after the start gives a reading with its error (the probe goes on);
a router that does not answer at the start fails before any load."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._router import sampling
from ansible_collections.gpufleet.serving.plugins.module_utils._router.kind import RouterUnreachable
from tests.support.net import free_port

PARAMS = {"api_key": None, "validate_certs": True, "router_kind": "sglang-router", "request_timeout": 2}


def test_readings_then_the_router_gone(router, tiny, own_procs):
    one = tiny()
    started = router([one.url])
    sample = sampling.sampler(dict(PARAMS, router_url=started.url))
    assert sample(1.23456) == {"t": 1.235, "healthy": [one.url], "listed": [one.url], "error": None}
    own_procs.stop_all()
    gone = sample(2.0)
    assert gone["healthy"] is None and "does not answer" in gone["error"]


def test_a_router_that_does_not_answer_fails_at_the_start():
    url = "http://127.0.0.1:%d" % free_port()
    with pytest.raises(RouterUnreachable, match="the router at %s does not answer" % url):
        sampling.sampler(dict(PARAMS, router_url=url))
