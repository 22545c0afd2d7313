# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A router_probe result made up for the report's tests: 3 workers, w2 out of the router from 4 s to
7 s, one request failed and one stream broken while it was out."""

W1, W2, W3 = "http://10.0.0.1:30000", "http://10.0.0.2:30000", "http://10.0.0.3:30000"


def _request(start, end, outcome="ok", ttft=0.05, tpot=0.01, tokens=100):
    return {"start": start, "end": end, "ttft": ttft if outcome != "failed" else None,
            "tpot": tpot if outcome == "ok" else None, "tokens": tokens if outcome != "failed" else 0,
            "outcome": outcome, "status": 200 if outcome != "failed" else 503,
            "error": None if outcome == "ok" else "HTTP 503: no_available_workers"}


def _sample(t, healthy):
    return {"t": t, "healthy": sorted(healthy), "listed": sorted(healthy), "error": None}


def probe():
    requests = [_request(s, s + 1.0) for s in (0.0, 1.0, 2.0, 3.0, 4.5, 5.5, 8.0, 9.0)]
    requests += [_request(5.0, 5.1, "failed"), _request(6.0, 6.5, "broken", tpot=None)]
    samples = [_sample(t, [W1, W2, W3]) for t in (0.0, 1.0, 2.0, 3.0)]
    samples += [_sample(t, [W1, W3]) for t in (4.0, 5.0, 6.0)]
    samples += [_sample(t, [W1, W2, W3]) for t in (7.0, 8.0, 9.0, 10.0)]
    samples.append({"t": 10.5, "healthy": None, "listed": None, "error": "the router at x does not answer"})
    return {"router_url": "http://127.0.0.1:30000", "clients": 2, "output_len": 100, "stopped_s": 9.0,
            "duration_s": 10.5, "requests": sorted(requests, key=lambda r: r["start"]), "samples": samples}


DRAINS = {"sim-h2": {"worker": W2, "drain_s": 1.25, "aborted": 0, "error": None}, "sim-h1": None}
