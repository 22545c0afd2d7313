# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""For the router tests (module_utils/_router, modules/router_*): a fresh real sglang-router per test (it starts in about half a second) and tiny workers.

The router is build/router/bin/smg from `make setup`, never a stand-in; the workers are HTTP
server threads of the test; everything listens on 127.0.0.1 and is stopped by the test."""

from __future__ import annotations

import pytest

from tests.support.router import TinyWorker, start_router


@pytest.fixture
def tiny():
    made = []

    def make(health_status=200):
        worker = TinyWorker(health_status)
        made.append(worker)
        return worker
    yield make
    for worker in made:
        worker.stop()


@pytest.fixture
def router(own_procs, tmp_path):
    """start(worker_urls=(), admin_key=None) -> RealRouter; each router is stopped after the test."""
    def start(worker_urls=(), admin_key=None):
        return start_router(own_procs, tmp_path, worker_urls, admin_key)
    yield start
    own_procs.stop_all()  # SIGKILL: the router holds nothing a test reads after it
