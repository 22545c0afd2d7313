# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""kind.py: worker URLs compared without their trailing slash, the default metrics URL on the
router's host, and how an answer (none, 401, an error status) becomes the error to show."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from ansible_collections.gpufleet.serving.plugins.module_utils._http import Response
from ansible_collections.gpufleet.serving.plugins.module_utils._router.kind import (
    WORKER_FIELDS,
    RouterError,
    RouterUnreachable,
    Worker,
    answered,
    same_url,
)
from ansible_collections.gpufleet.serving.plugins.module_utils._router.sglang_router import KIND
from tests.support.paths import REPO


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


@pytest.mark.parametrize("module", ["router_info", "router_worker"])
def test_the_modules_document_a_worker_from_worker_fields(module):
    """router_info's and router_worker's RETURN describe a worker from one place (WORKER_FIELDS, written
    there by scripts/gen_docs.py), and it holds what a worker is returned with."""
    text = (pathlib.Path(REPO) / "plugins" / "modules" / (module + ".py")).read_text()
    assert "# BEGIN GENERATED router-worker-fields (scripts/gen_docs.py)" in text
    returned = yaml.safe_load(text.split('RETURN = r"""', 1)[1].split('"""', 1)[0])
    assert returned["workers"]["contains"] == {name: {"description": meaning, "type": kind}
                                               for name, kind, meaning in WORKER_FIELDS}
    assert [name for name, _kind, _meaning in WORKER_FIELDS] == list(Worker("u", "i", True).as_dict())
