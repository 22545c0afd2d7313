# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_http.py against a real HTTP server on loopback (a thread of this test): headers with the bearer
token, JSON GET and POST, DELETE, an error status with its body, the body limit, and no exception for a
port nothing listens on or a server that does not answer in time; server_root: the endpoint modules
take base_url with or without /v1 alike."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils import _http
from ansible_collections.gpufleet.serving.plugins.module_utils._http import server_root
from ansible_collections.gpufleet.serving.plugins.module_utils._server.readiness import Waiter
from tests.support.net import free_port


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/headers":
            self._answer(200, json.dumps(dict(self.headers)).encode())
        elif self.path == "/big":
            self._answer(200, b"x" * 5000)
        elif self.path == "/slow":
            self.server.release.wait(10)
            self._answer(200, b"late")
        else:
            self._answer(404, b'{"detail": "Not Found"}')

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(200, json.dumps({"got": json.loads(body), "type": self.headers["Content-Type"]}).encode())

    def do_DELETE(self):  # noqa: N802
        self._answer(200, json.dumps({"deleted": self.path}).encode())


@pytest.fixture
def url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.release = threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d/" % server.server_address[1]
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_headers_carry_the_agent_accept_and_bearer_token(url):
    client = _http.HttpClient(url, api_key="sk-test", user_agent="gf-agent")
    headers = client.get_json("/headers")
    sent = (headers["User-Agent"], headers["Accept"], headers["Authorization"])
    assert sent == ("gf-agent", "application/json", "Bearer sk-test")
    assert "Authorization" not in _http.HttpClient(url).get_json("headers")
    assert _http.request_headers() == {"User-Agent": "gpufleet.serving"}


def test_post_json_and_an_error_status_with_its_body(url):
    answer = _http.HttpClient(url).post_json("/generate", {"text": "hi"})
    assert answer.status == 200 and answer.json() == {"got": {"text": "hi"}, "type": "application/json"}
    missing = _http.HttpClient(url).get("/nothing")
    assert (missing.status, missing.error, missing.json()) == (404, "HTTP 404", {"detail": "Not Found"})
    assert _http.HttpClient(url).get_json("/nothing") is None


def test_delete_sends_the_method_and_no_body(url):
    answer = _http.HttpClient(url).delete("/workers/abc")
    assert answer.status == 200 and answer.json() == {"deleted": "/workers/abc"}


def test_the_body_is_read_up_to_the_limit(url):
    client = _http.HttpClient(url, max_body=100)
    assert len(client.get("/big").body) == 100
    assert len(client.request("/big", max_body=None).body) == 5000
    assert client.get("/big").json() is None and client.get("/big").text == "x" * 100


def test_no_answer_is_a_response_without_status_never_an_exception(url):
    refused = _http.HttpClient("http://127.0.0.1:%d" % free_port()).get("/health", timeout=2)
    assert refused.status is None and "refused" in refused.error.lower(), refused.error
    late = _http.HttpClient(url).get("/slow", timeout=0.3)
    assert late.status is None and "timed out" in late.error, late.error


def test_without_certificate_checks_the_context_checks_nothing():
    loose = _http.ssl_context(validate_certs=False)
    assert (loose.check_hostname, loose.verify_mode) == (False, _http.ssl.CERT_NONE)
    assert _http.ssl_context().verify_mode == _http.ssl.CERT_REQUIRED


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
