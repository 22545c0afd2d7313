# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""kind.py: worker URLs compared without their trailing slash, the default metrics URL on the
router's host, and how an answer (none, 401, an error status) becomes the error to show."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._http import Response
from ansible_collections.gpufleet.serving.plugins.module_utils._router.kind import (
    RouterError,
    RouterUnreachable,
    Worker,
    answered,
    same_url,
)
from ansible_collections.gpufleet.serving.plugins.module_utils._router.sglang_router import KIND


def test_urls_differ_only_by_a_trailing_slash_are_the_same_worker():
    assert same_url("http://h:30000/", "http://h:30000") and not same_url("http://h:30000", "http://h:30001")
    assert Worker("u", "i", True).as_dict() == {"url": "u", "id": "i", "healthy": True}


@pytest.mark.parametrize("router_url, metrics_url", [
    ("http://router-1:30000", "http://router-1:29000/metrics"),
    ("https://10.0.0.5:8443/", "https://10.0.0.5:29000/metrics"),
    ("http://[::1]:30000", "http://[::1]:29000/metrics"),
])
def test_the_default_metrics_url_is_the_router_host_at_the_kind_port(router_url, metrics_url):
    assert KIND.metrics_url(router_url) == metrics_url


@pytest.mark.parametrize("response, error, words", [
    (Response(error="Connection refused"), RouterUnreachable, "does not answer (Connection refused) while adding"),
    (Response(401, b"Missing or invalid Authorization header"), RouterError, "give its admin key as api_key"),
    (Response(500, b"boom"), RouterError, "answered HTTP 500 while adding: boom"),
])
def test_an_answer_that_is_not_a_success_says_what_to_do(response, error, words):
    with pytest.raises(error) as failure:
        answered(response, "http://r:30000", "adding")
    assert words in failure.value.msg and "http://r:30000" in failure.value.msg


def test_a_success_is_returned_as_it_is():
    ok = Response(202, b"{}")
    assert answered(ok, "http://r:30000", "adding") is ok
