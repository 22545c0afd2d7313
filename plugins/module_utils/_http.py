# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Small HTTP client for readiness probes (standard library only).

urllib honours http_proxy/https_proxy/no_proxy from the environment like
Ansible's open_url does; every call has its own short timeout so a hung
server never stalls the wait loop for long.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import urllib.error
import urllib.request


class Response(object):
    """status: HTTP status or None when no answer came (refused, timeout); error: why."""

    def __init__(self, status=None, body=b"", error=None):
        self.status = status
        self.body = body
        self.error = error

    def json(self):
        try:
            return json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None


class HttpClient(object):
    def __init__(self, base_url, api_key=None, validate_certs=True, user_agent="gpufleet.serving.server_wait"):
        self.base_url = base_url.rstrip("/")
        self.headers = {"User-Agent": user_agent, "Accept": "application/json"}
        if api_key:
            self.headers["Authorization"] = "Bearer %s" % api_key
        handlers = []
        if self.base_url.startswith("https") and not validate_certs:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            handlers.append(urllib.request.HTTPSHandler(context=context))
        self.opener = urllib.request.build_opener(*handlers)

    def url(self, path):
        return self.base_url + "/" + path.lstrip("/")

    def request(self, path, timeout, payload=None, max_body=1 << 20):
        data = None
        headers = dict(self.headers)
        if payload is not None:
            data = json.dumps(payload).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url(path), data=data, headers=headers,
                                     method="POST" if data is not None else "GET")
        try:
            with self.opener.open(req, timeout=timeout) as answer:
                return Response(answer.status, answer.read(max_body))
        except urllib.error.HTTPError as exc:
            body = b""
            try:
                body = exc.read(max_body)
            except (OSError, socket.timeout, http.client.HTTPException):
                pass
            return Response(exc.code, body, "HTTP %d" % exc.code)
        except urllib.error.URLError as exc:
            return Response(error=str(exc.reason))
        except (OSError, socket.timeout, ValueError, http.client.HTTPException) as exc:
            # ConnectionResetError, RemoteDisconnected and read timeouts land here.
            return Response(error=str(exc) or exc.__class__.__name__)

    def get(self, path, timeout):
        return self.request(path, timeout)

    def post_json(self, path, payload, timeout):
        return self.request(path, timeout, payload=payload)
