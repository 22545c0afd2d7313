# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A worker put into or taken out of a router, and what the router says of its workers.

Every operation lists the workers first: a router that does not answer fails the task before
anything changes, and a removal that would leave fewer than `min_healthy` healthy workers is
refused before the router is asked. The results have one shape, for router_worker, router_info
and the playbooks that drain a server: workers [{url, id, healthy}], healthy (their count),
added / removed, elapsed_s.
"""

from __future__ import annotations

import time
from typing import Any, Callable
from urllib.parse import urlsplit

from ansible_collections.gpufleet.serving.plugins.module_utils import _prom
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._http import HttpClient
from ansible_collections.gpufleet.serving.plugins.module_utils._router import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._router.kind import (
    RouterError,
    RouterKind,
    RouterUnreachable,
    Worker,
    same_url,
)


def client(router_url: str, api_key: str | None = None, validate_certs: bool = True,
           timeout: float = 10.0) -> HttpClient:
    """The admin API client of the router at ROUTER_URL (http:// or https://)."""
    if not router_url.startswith(("http://", "https://")):
        raise InvalidInput("router_url %r is not an http:// or https:// URL (example: http://router-host:30000)"
                           % router_url)
    return HttpClient(router_url, api_key=api_key, validate_certs=validate_certs,
                      user_agent="gpufleet.serving.router", timeout=timeout)


def find(workers: list, url: str) -> Worker | None:
    return next((w for w in workers if same_url(w.url, url)), None)


def listing(workers: list) -> dict:
    """The fields every result carries: the workers and how many are healthy."""
    return {"workers": [w.as_dict() for w in workers], "healthy": sum(1 for w in workers if w.healthy)}


def present(kind: RouterKind, api: HttpClient, url: str, worker_api_key: str | None = None, wait: bool = True,
            timeout: float = 300.0, poll_interval: float = 0.5, check_mode: bool = False,
            clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], Any] = time.sleep) -> dict:
    """Add URL to the router unless it lists it; with `wait`, return once the router calls it healthy.

    A worker the router lists already is left as it is (changed false), and still waited for."""
    started = clock()
    workers = kind.workers(api)
    found = find(workers, url)
    worker_id = found.id if found else None
    added = found is None
    if added and not check_mode:
        worker_id = kind.add(api, url, worker_api_key)
    if wait and not check_mode:
        deadline = started + timeout
        while not (found and found.healthy):
            if clock() >= deadline:
                result = dict(_result(workers, found, url, worker_id, started, clock), added=added, changed=added)
                why = kind.pending(api, url, worker_id) if found is None else "listed, unhealthy"
                raise RouterError("worker %s is not healthy in the router at %s after %.0f s (%s); the router keeps"
                                  " trying it: check the server at that URL, or remove it with state=absent"
                                  % (url, api.base_url, timeout, why or "not listed"), result=result)
            sleep(poll_interval)
            workers = kind.workers(api)
            found = find(workers, url)
    return dict(_result(workers, found, url, worker_id, started, clock), added=added, changed=added)


def absent(kind: RouterKind, api: HttpClient, url: str, min_healthy: int = 1, check_mode: bool = False,
           clock: Callable[[], float] = time.monotonic, missing: str = "ignore") -> dict:
    """Remove URL from the router, unless that would leave fewer than MIN_HEALTHY healthy workers.

    A URL the router does not list is nothing to do (changed false, removed false), or, with
    MISSING "fail", a refusal: a rollout expects every running server of the fleet in its router, and
    one that is not there says the router was restarted without it (or never had it)."""
    started = clock()
    workers = kind.workers(api)
    found = find(workers, url)
    if found is None and missing == "fail":
        raise RouterError("refusing to take worker %s out of the router at %s: the router does not list it (it lists"
                          " %d worker(s)%s); was the router restarted without the fleet's servers? Nothing was"
                          " changed: put them back (playbooks/router.yml, or router_worker state=present) and run"
                          " again" % (url, api.base_url, len(workers),
                                      ": " + ", ".join(w.url for w in workers) if workers else ""),
                          result=dict(_result(workers, None, url, None, started, clock), removed=False))
    if found is None:
        return dict(_result(workers, None, url, None, started, clock), removed=False, changed=False)
    left = sum(1 for w in workers if w.healthy and w is not found)
    if left < min_healthy:
        raise RouterError("refusing to remove worker %s from the router at %s: %d healthy worker(s) would be left,"
                          " fewer than min_healthy=%d; nothing was changed (wait for other workers to be healthy,"
                          " or lower min_healthy)" % (url, api.base_url, left, min_healthy),
                          result=dict(_result(workers, found, url, found.id, started, clock), removed=False))
    if check_mode:
        workers = [w for w in workers if w is not found]
    else:
        kind.remove(api, found)
        workers = _until_gone(kind, api, url, clock)
    return dict(_result(workers, found, url, found.id, started, clock), removed=True, changed=True)


# sglang-router 0.3.2 answers DELETE /workers/{id} with 202 and removes the worker in a job of its
# own: until its listing drops the worker, the router may still send it requests.
REMOVAL_WAIT_S = 10.0


def _until_gone(kind: RouterKind, api: HttpClient, url: str, clock: Callable[[], float]) -> list:
    """The router's workers once URL is no longer among them (within REMOVAL_WAIT_S)."""
    deadline = clock() + REMOVAL_WAIT_S
    while True:
        workers = kind.workers(api)
        if find(workers, url) is None:
            return workers
        if clock() > deadline:
            raise RouterError("the router at %s still lists worker %s %.0f s after it accepted its removal; look at"
                              " the router's log" % (api.base_url, url, REMOVAL_WAIT_S))
        time.sleep(0.05)


def info(kind: RouterKind, api: HttpClient, metrics_url: str | None = None, validate_certs: bool = True) -> dict:
    """The router's workers and, with METRICS_URL, its metrics: the kind's router-wide samples summed
    over their labels (`metrics`) and its per-worker samples by worker URL (`worker_metrics`)."""
    result = listing(kind.workers(api))
    result["total"] = len(result["workers"])
    if metrics_url:
        result.update(metrics(kind, metrics_url, validate_certs, api.timeout))
    return result


def metrics(kind: RouterKind, metrics_url: str, validate_certs: bool = True, timeout: float = 10.0) -> dict:
    parts = urlsplit(metrics_url)
    page = HttpClient("%s://%s" % (parts.scheme, parts.netloc), user_agent="gpufleet.serving.router",
                      accept="text/plain", validate_certs=validate_certs, timeout=timeout,
                      max_body=None).get(parts.path or "/metrics")
    if page.status != 200:
        raise RouterUnreachable("the router's metrics page %s answered %s; set metrics_url to where its"
                                " /metrics is (sglang-router: --prometheus-host/--prometheus-port)"
                                % (metrics_url, page.status or page.error))
    rows = _prom.samples(page.text, source=metrics_url)
    router_wide = {}
    for name in kind.metric_names():
        value = _prom.total(rows, name)
        if value is not None:
            router_wide[name] = value
    per_worker = {}
    for row in rows:
        if row.name in kind.worker_metric_names() and kind.worker_label in row.labels:
            per_worker.setdefault(row.labels[kind.worker_label], {})[row.name] = row.value
    return {"metrics": router_wide, "worker_metrics": per_worker}


def _result(workers: list, found: Worker | None, url: str, worker_id: str | None, started: float,
            clock: Callable[[], float]) -> dict:
    worker = found.as_dict() if found else {"url": url, "id": worker_id or "", "healthy": False}
    return dict(listing(workers), worker=worker, elapsed_s=round(clock() - started, 3))


def from_params(params: dict) -> tuple:
    """(kind, admin API client) from the router group's options (doc fragment gpufleet.serving.router)."""
    kind = registry.get(params["router_kind"])
    return kind, client(params["router_url"], params["api_key"], params["validate_certs"], params["request_timeout"])


def worker_task(params: dict, check_mode: bool = False) -> dict:
    """router_worker: state present (add, wait until healthy) or absent (remove, min_healthy first)."""
    kind, api = from_params(params)
    if params["state"] == "absent":
        return absent(kind, api, params["url"], params["min_healthy"], check_mode, missing=params["missing"])
    return present(kind, api, params["url"], params["worker_api_key"], params["wait"], params["timeout"],
                   params["poll_interval"], check_mode)


def info_task(params: dict) -> dict:
    """router_info: the workers and, unless metrics is false, the metrics page."""
    kind, api = from_params(params)
    metrics_url = (params["metrics_url"] or kind.metrics_url(params["router_url"])) if params["metrics"] else None
    result = info(kind, api, metrics_url, params["validate_certs"])
    result.update(changed=False, metrics_url=metrics_url)
    return result
