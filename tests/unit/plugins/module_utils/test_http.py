# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_http.py's server_root: the endpoint modules take base_url with or without /v1 alike."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._http import server_root
from ansible_collections.gpufleet.serving.plugins.module_utils._server.readiness import Waiter


@pytest.mark.parametrize("given, root", [
    ("http://127.0.0.1:30000", "http://127.0.0.1:30000"),
    ("http://127.0.0.1:30000/", "http://127.0.0.1:30000"),
    ("http://127.0.0.1:30000/v1", "http://127.0.0.1:30000"),
    ("http://127.0.0.1:30000/v1/", "http://127.0.0.1:30000"),
    ("https://h.example/serve/v1", "https://h.example/serve"),  # a path prefix stays
    ("http://h/v10", "http://h/v10"),  # only the exact /v1 segment goes
])
def test_server_root(given, root):
    assert server_root(given) == root


def test_server_wait_probes_the_root_of_a_base_url_given_with_v1():
    waiter = Waiter({"base_url": "http://127.0.0.1:30000/v1", "log_path": None})
    assert waiter.client.url("/health") == "http://127.0.0.1:30000/health"
