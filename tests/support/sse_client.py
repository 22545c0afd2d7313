# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Streamed completions whose outcome and end time the caller keeps (shutdown and drain tests, bench/).

Each request records its status, texts, finish reason, whether `data: [DONE]` came (a stream
cut by the server has none) and its end on time.monotonic(): the client's own end time, which a
drain is measured against.
"""
import http.client
import json
import threading
import time

from tests.support.net import LOOPBACK


def stream(port, max_tokens, host=LOOPBACK, timeout=60, api_key=None):
    """One streamed /v1/completions with ignore_eos; a dict: status, texts, finish, done, error, end."""
    out = {"status": None, "texts": [], "finish": None, "done": False, "error": None}
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("POST", "/v1/completions", body=json.dumps({
            "model": "m", "prompt": "Say something long.", "max_tokens": max_tokens, "ignore_eos": True,
            "stream": True}), headers=dict({"Content-Type": "application/json"},
                                           **({"Authorization": "Bearer " + api_key} if api_key else {})))
        res = conn.getresponse()
        out["status"] = res.status
        for line in iter(res.readline, b""):
            payload = line.strip()[len(b"data: "):] if line.startswith(b"data: ") else None
            if payload == b"[DONE]":
                out["done"] = True
            elif payload:
                for choice in json.loads(payload).get("choices", []):
                    out["texts"].append(choice["text"])
                    out["finish"] = choice["finish_reason"] or out["finish"]
    except (OSError, http.client.HTTPException, ValueError) as exc:
        out["error"] = exc
    finally:
        conn.close()
        out["end"] = time.monotonic()
    return out


class Streams:
    """Requests started in threads of their own; results[key] once each has ended."""

    def __init__(self, port, host=LOOPBACK, api_key=None):
        self.port, self.host, self.api_key = port, host, api_key
        self.results = {}
        self.threads = []

    def start(self, key, max_tokens):
        def run():
            self.results[key] = stream(self.port, max_tokens, self.host, api_key=self.api_key)
        thread = threading.Thread(target=run, name="stream-%s" % key, daemon=True)
        thread.start()
        self.threads.append(thread)
        return thread

    def join(self, timeout=60):
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self.threads if t.is_alive()]
        assert not alive, "streams still running after %s s: %s" % (timeout, alive)
        return self.results

    def last_end(self):
        return max(r["end"] for r in self.results.values())
