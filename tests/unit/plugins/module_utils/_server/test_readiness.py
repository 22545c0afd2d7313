# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The wait loop with a scripted HTTP client, process and clock."""

from __future__ import annotations

import threading
import time

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._http import Response
from ansible_collections.gpufleet.serving.plugins.module_utils._server import readiness as rd  # noqa: E402
from ansible_collections.gpufleet.serving.plugins.module_utils._server.watch import ProcState
from tests.support.timing import FakeClock


class Client:
    """Answers /health from a script (one item per call, the last repeats)."""

    base_url = "http://127.0.0.1:30000"

    def __init__(self, health, routes=None, on_health=None):
        self.health = list(health)
        self.routes = routes or {}
        self.on_health = on_health
        self.calls = []

    def url(self, path):
        return self.base_url + path

    def get(self, path, timeout):
        self.calls.append(("GET", path, None))
        if path == "/health":
            if self.on_health:
                self.on_health(len([c for c in self.calls if c[1] == "/health"]))
            return self.health.pop(0) if len(self.health) > 1 else self.health[0]
        return self.routes.get(path, Response(404, b"{}"))

    def post_json(self, path, payload, timeout):
        self.calls.append(("POST", path, payload))
        return self.routes.get(("POST", path), Response(404, b"{}"))


class Watch:
    def __init__(self, states):
        self.states = list(states)

    def poll(self):
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]


REFUSED = Response(error="[Errno 111] Connection refused")
ALIVE = ProcState(True, 77)


def make(params, client, watch, clock):
    base = {"base_url": client.base_url, "timeout": 30, "poll_interval": 0.2}
    base.update(params)
    return rd.Waiter(base, client=client, watch=watch, clock=clock, sleep=clock.sleep)


def test_ready_after_refused_and_503():
    clock = FakeClock(100.0)
    client = Client([REFUSED, REFUSED, Response(503), Response(200)],
                    routes={"/model_info": Response(200, b'{"model_path": "m", "is_generation": true}')})
    result = make({}, client, Watch([ALIVE]), clock).run()
    assert result["ready"] is True
    assert result["health_status"] == 200
    assert result["elapsed"] == pytest.approx(0.6)  # three rounds of 0.2 s before the fourth answered
    assert result["model_info"] == {"model_path": "m", "is_generation": True}
    assert result["engine"] == result["flavor"] == "sglang"
    assert result["changed"] is False


def test_vllm_model_info_from_v1_models():
    clock = FakeClock(100.0)
    client = Client([Response(200)], routes={"/v1/models": Response(200, b'{"data": [{"id": "m"}]}')})
    result = make({"engine": "vllm"}, client, Watch([ALIVE]), clock).run()
    assert result["model_info"] == {"data": [{"id": "m"}]}
    assert ("GET", "/model_info", None) not in client.calls


def test_death_fails_at_once_with_cause_and_tail(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("[2025-10-16 09:06:00 TP0] Load weight begin. avail mem=80 GB\n")
    clock = FakeClock(100.0)

    def crash(calls):
        # the server writes its last words, then dies (seen on the next round)
        with log.open("a") as handle:
            handle.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\nlast words")

    waiter = make({"log_path": str(log), "log_tail_lines": 2}, Client([REFUSED], on_health=crash),
                  Watch([ALIVE, ProcState(False, 77, -9, "gone")]), clock)
    with pytest.raises(rd.WaitFailed) as failed:
        waiter.run()
    result = failed.value.result
    assert result["cause"]["kind"] == "oom"
    assert result["cause"]["exit_code"] == -9
    assert result["log_tail"] == ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
                                  "last words"]
    assert result["phase"] == "loading_weights"
    assert "died after 0.2 s (phase: loading_weights): out of GPU memory" in failed.value.msg
    assert "last words" in failed.value.msg


def test_timeout_names_the_phase(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("[2025-10-16 09:06:22 TP0] Capture cuda graph begin. This can take up to several minutes.\n")
    clock = FakeClock(100.0)
    waiter = make({"log_path": str(log), "timeout": 1.0}, Client([REFUSED]), Watch([ALIVE]), clock)
    with pytest.raises(rd.WaitFailed) as failed:
        waiter.run()
    assert "not ready after 1.0 s" in failed.value.msg
    assert "phase: cuda_graph" in failed.value.msg
    assert "Connection refused" in failed.value.msg
    assert failed.value.result["cause"]["kind"] == "timeout"


def test_generate_check_uses_listed_model_and_one_token():
    clock = FakeClock(100.0)
    answers = iter([Response(500, b"{}", "HTTP 500"), Response(200, b'{"choices": [{"text": " Paris"}]}')])
    client = Client([Response(200)], routes={"/v1/models": Response(200, b'{"data": [{"id": "kimi"}]}')})
    client.post_json = lambda path, payload, timeout: client.calls.append(("POST", path, payload)) or next(answers)
    result = make({"generate_check": True, "engine": "vllm"}, client, Watch([ALIVE]), clock).run()
    posts = [c for c in client.calls if c[0] == "POST"]
    assert len(posts) == 2  # the first generation failed: keep waiting
    assert posts[0][1] == "/v1/completions"
    assert posts[0][2]["model"] == "kimi" and posts[0][2]["max_tokens"] == 1
    assert result["generate"]["ok"] is True and result["generate"]["text"] == " Paris"


def test_check_mode_reports_once_without_failing():
    clock = FakeClock(100.0)
    client = Client([REFUSED])
    result = make({}, client, Watch([ALIVE]), clock).run(check_mode=True)
    assert result["ready"] is False
    assert len([c for c in client.calls if c[1] == "/health"]) == 1
    dead = make({}, Client([REFUSED]), Watch([ProcState(False, 77, 1)]), FakeClock(100.0)).run(check_mode=True)
    assert dead["ready"] is False and dead["cause"]["message"] == "exited with code 1"


def test_hung_health_request_does_not_delay_death_notice():
    release = threading.Event()

    class Hung(Client):
        def get(self, path, timeout):
            release.wait(10)  # a server that accepted the connection and never answers
            return REFUSED

    states = [ALIVE, ALIVE, ProcState(False, 77, 1)]
    waiter = rd.Waiter({"base_url": Hung.base_url, "timeout": 30, "poll_interval": 0.05},
                       client=Hung([REFUSED]), watch=Watch(states))
    began = time.monotonic()
    try:
        with pytest.raises(rd.WaitFailed):
            waiter.run()
        assert time.monotonic() - began < 1.0
    finally:
        release.set()


def test_progress_file_lines_and_masked_secret(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("[2025-12-23 14:18:01] Load weight begin. api_key=s3cret\n")
    progress = tmp_path / "progress"
    progress.write_text("stale line from the previous wait\n")
    clock = FakeClock(100.0)
    make({"log_path": str(log), "progress_file": str(progress), "api_key": "s3cret"},
         Client([REFUSED, Response(200)]), Watch([ALIVE]), clock).run()
    text = progress.read_text()
    assert "stale" not in text
    assert "phase=loading_weights" in text and "READY" in text
    assert "s3cret" not in text and "api_key=********" in text
