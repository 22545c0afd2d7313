# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The metrics page reader: prometheus_client's grammar, sums across ranks, clear refusals."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils import _prom

PAGE = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 7.0
"""


def test_counters_keep_their_total_name_and_gauges_add_up_across_engines():
    assert _prom.total(PAGE, "vllm:num_requests_running") == 5.0
    assert _prom.total(PAGE, "vllm:num_requests_running", engine="1") == 2.0
    assert _prom.total(PAGE, "vllm:request_success_total") == 7.0
    assert _prom.total(PAGE, "vllm:num_requests_waiting") is None


def test_a_page_that_is_not_prometheus_text_is_refused_naming_its_source():
    with pytest.raises(_prom.MetricsPageError, match="http://h:30000/metrics is not Prometheus text"):
        _prom.samples('x{a="1" 2\n', source="http://h:30000/metrics")
