# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one urllib client of the collection (standard library only).

Readiness probes (server_wait) and the benchmark's side reads (/v1/models,
/metrics, /server_info) go through HttpClient: bearer token, TLS verification
switch, a timeout per call, and never an exception for a server that does not
answer (Response.status is None, Response.error says why). urllib honours
http_proxy/https_proxy/no_proxy from the environment like Ansible's open_url.

The load itself (_bench/stream.py) speaks HTTP/1.1 on asyncio sockets; it takes
its headers from request_headers() and its TLS context from ssl_context().
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import urllib.error
import urllib.request
from typing import Any

DEFAULT_MAX_BODY = 1 << 20


def request_headers(api_key: str | None = None, user_agent: str = "gpufleet.serving",
                    accept: str | None = None) -> dict:
    """User-Agent, Accept (when given) and the bearer token (when given), in that order."""
    headers = {"User-Agent": user_agent}
    if accept:
        headers["Accept"] = accept
    if api_key:
        headers["Authorization"] = "Bearer %s" % api_key
    return headers


def server_root(base_url: str) -> str:
    """BASE_URL without a trailing slash or /v1: the endpoint options take either form, and the
    paths the modules ask for (/health, /metrics, /v1/models) are relative to the server's root."""
    root = base_url.rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


def ssl_context(validate_certs: bool = True) -> ssl.SSLContext:
    """The default TLS context, or one that checks neither certificate nor host name."""
    context = ssl.create_default_context()
    if not validate_certs:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class Response:
    """status: HTTP status or None when no answer came (refused, timeout); error: why."""

    def __init__(self, status: int | None = None, body: bytes = b"", error: str | None = None) -> None:
        self.status = status
        self.body = body
        self.error = error

    def json(self) -> Any:
        try:
            return json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class HttpClient:
    """GET and POST against one server; `timeout` is the default per call."""

    def __init__(self, base_url: str, api_key: str | None = None, validate_certs: bool = True,
                 user_agent: str = "gpufleet.serving.server_wait", accept: str | None = "application/json",
                 timeout: float = 10.0, max_body: int | None = DEFAULT_MAX_BODY) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = request_headers(api_key, user_agent, accept)
        self.timeout = timeout
        self.max_body = max_body
        handlers = []
        if self.base_url.startswith("https") and not validate_certs:
            handlers.append(urllib.request.HTTPSHandler(context=ssl_context(validate_certs)))
        self.opener = urllib.request.build_opener(*handlers)

    def url(self, path: str) -> str:
        return self.base_url + "/" + path.lstrip("/")

    def request(self, path: str, timeout: float | None = None, payload: Any = None,
                max_body: int | None = -1, method: str | None = None) -> Response:
        """One request (GET, or POST with a payload, unless `method` says otherwise);
        `max_body` -1 means the client's own limit, None reads all."""
        limit = self.max_body if max_body == -1 else max_body
        data = None
        headers = dict(self.headers)
        if payload is not None:
            data = json.dumps(payload).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url(path), data=data, headers=headers,
                                     method=method or ("POST" if data is not None else "GET"))
        try:
            with self.opener.open(req, timeout=self.timeout if timeout is None else timeout) as answer:
                return Response(answer.status, answer.read(limit))
        except urllib.error.HTTPError as exc:
            body = b""
            try:
                body = exc.read(limit)
            except (OSError, socket.timeout, http.client.HTTPException):
                pass
            return Response(exc.code, body, "HTTP %d" % exc.code)
        except urllib.error.URLError as exc:
            return Response(error=str(exc.reason))
        except (OSError, socket.timeout, ValueError, http.client.HTTPException) as exc:
            # ConnectionResetError, RemoteDisconnected and read timeouts land here.
            return Response(error=str(exc) or exc.__class__.__name__)

    def get(self, path: str, timeout: float | None = None) -> Response:
        return self.request(path, timeout)

    def get_json(self, path: str, timeout: float | None = None) -> Any:
        """The JSON body of a 200 answer, else None."""
        answer = self.get(path, timeout)
        return answer.json() if answer.status == 200 else None

    def post_json(self, path: str, payload: Any, timeout: float | None = None) -> Response:
        return self.request(path, timeout, payload=payload)

    def delete(self, path: str, timeout: float | None = None) -> Response:
        return self.request(path, timeout, method="DELETE")
