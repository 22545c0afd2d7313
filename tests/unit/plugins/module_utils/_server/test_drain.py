# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The drain loop with a scripted HTTP client and clock; against simulated servers:
tests/sim/test_sim_drain.py."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError, InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._http import Response
from ansible_collections.gpufleet.serving.plugins.module_utils._server import drain as dr
from tests.support.timing import FakeClock

URL = "http://127.0.0.1:30000"


def loads(*ranks):
    """SGLang's /v1/loads answer with (running, waiting) per DP rank."""
    return Response(200, json.dumps({"version": "0.5.23", "loads": [
        {"dp_rank": i, "num_running_reqs": r, "num_waiting_reqs": w} for i, (r, w) in enumerate(ranks)]}).encode())


def metrics(running, waiting, engines=1):
    rows = ["# TYPE vllm:num_requests_running gauge", "# TYPE vllm:num_requests_waiting gauge"]
    for e in range(engines):
        rows += ['vllm:num_requests_running{engine="%d",model_name="m"} %s' % (e, running),
                 'vllm:num_requests_waiting{engine="%d",model_name="m"} %s' % (e, waiting)]
    return Response(200, ("\n".join(rows) + "\n").encode())


class Client:
    """Answers each path from a script (one answer a call, the last repeats)."""

    def __init__(self, routes):
        self.routes = {path: list(answers) for path, answers in routes.items()}
        self.base_url = URL
        self.calls = []

    def get(self, path, timeout=None):
        self.calls.append(path)
        answers = self.routes.get(path) or [Response(404, b"{}")]
        return answers.pop(0) if len(answers) > 1 else answers[0]


def run(monkeypatch, routes, check_mode=False, **params):
    client = Client(routes)
    monkeypatch.setattr(dr, "HttpClient", lambda *a, **kw: client)
    clock = FakeClock(50.0)
    base = {"base_url": URL + "/v1", "engine": "sglang", "drain_timeout": 5, "poll_interval": 0.1,
            "request_timeout": 1}
    base.update(params)
    return dr.drain_server(base, check_mode=check_mode, clock=clock, sleep=clock.sleep), client


def test_sglang_waits_until_every_rank_is_idle(monkeypatch):
    out, client = run(monkeypatch, {"/v1/loads": [loads((2, 1), (1, 0)), loads((2, 0), (1, 0)), loads((1, 0), (0, 0)),
                                                  loads((1, 0), (0, 0)), loads((0, 0), (0, 0))]})
    assert out["drained"] and out["in_flight"] == 0 and out["polls"] == 5
    assert out["drain_s"] == pytest.approx(0.4)
    assert [p["in_flight"] for p in out["series"]] == [4, 3, 1, 0]  # the repeat of 1 is not a change
    assert out["source"] == URL + "/v1/loads" and out["url"] == URL and not out["changed"]
    assert set(client.calls) == {"/v1/loads"}


@pytest.mark.parametrize("engines", [1, 2])
def test_vllm_sums_its_gauges_over_engine_cores(monkeypatch, engines):
    out, unused = run(monkeypatch, {"/metrics": [metrics(3, 2, engines), metrics(0, 0, engines)]}, engine="vllm")
    assert out["series"][0] == {"t": 0.0, "running": 3 * engines, "waiting": 2 * engines, "in_flight": 5 * engines}
    assert out["drained"] and out["request_ids"] is None and out["request_ids_source"] is None


def test_timeout_names_the_count_and_what_the_engine_exposes(monkeypatch):
    with pytest.raises(GpuFleetError) as err:
        run(monkeypatch, {"/v1/loads": [loads((1, 2))]}, drain_timeout=1)
    msg = err.value.msg
    assert "3 requests in flight (1 running, 2 waiting) after drain_timeout=1s" in msg
    assert "remaining_rids" in msg  # where SGLang names them
    result = err.value.result
    assert not result["drained"] and result["drain_s"] == pytest.approx(1.0) and result["polls"] == 11


def test_zero_timeout_reads_once(monkeypatch):
    with pytest.raises(GpuFleetError, match="names no request in flight"):
        run(monkeypatch, {"/metrics": [metrics(1, 0)]}, engine="vllm", drain_timeout=0)


def test_check_mode_reads_once_and_never_fails(monkeypatch):
    out, client = run(monkeypatch, {"/v1/loads": [loads((4, 0))]}, check_mode=True)
    assert not out["drained"] and out["in_flight"] == 4 and client.calls == ["/v1/loads"]


def test_auto_tells_the_engine_from_v1_models(monkeypatch):
    models = Response(200, json.dumps({"data": [{"id": "m", "owned_by": "vllm"}]}).encode())
    out, client = run(monkeypatch, {"/v1/models": [models], "/metrics": [metrics(0, 0)]}, engine="auto")
    assert out["engine"] == "vllm" and client.calls == ["/v1/models", "/metrics"]
    with pytest.raises(InvalidInput, match="set engine to one of sglang, vllm"):
        run(monkeypatch, {"/v1/models": [Response(error="Connection refused")]}, engine="auto")


@pytest.mark.parametrize("answer,message", [
    (Response(401, b"{}"), "answered 401 (set api_key"),
    (Response(error="Connection refused"), "answered Connection refused"),
    (Response(200, b"[]"), "no 'loads' list"),
])
def test_a_bad_answer_fails_at_once(monkeypatch, answer, message):
    with pytest.raises(dr.ReadError, match=message.replace("(", r"\(")):
        run(monkeypatch, {"/v1/loads": [answer]})


def test_a_page_without_the_gauge_is_refused(monkeypatch):
    with pytest.raises(dr.ReadError, match="has no vllm:num_requests_running gauge"):
        run(monkeypatch, {"/metrics": [Response(200, b"# TYPE x gauge\nx 1\n")]}, engine="vllm")


def test_bad_timing_options_are_refused(monkeypatch):
    with pytest.raises(InvalidInput, match="poll_interval more than 0"):
        run(monkeypatch, {}, poll_interval=0)


def test_series_keeps_its_first_point_and_the_latest():
    series = dr.Series(limit=3)
    for i in range(6):
        series.add(float(i), i, 0)
    assert [p["running"] for p in series.points] == [0, 4, 5]
