# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sglang-router 0.3.2 (the Rust "SGLang Model Gateway", binaries smg / sglang-router).

Read in the wheel sglang_router-0.3.2 (sglang_router/router_args.py for the flags) and seen from
the running binary:
- `GET /workers`: {"workers": [{"id": UUID, "url", "is_healthy", "load", ...}], "total", "stats"}.
- `POST /workers` {"url", "api_key"}: 202 {"worker_id", ...}; the worker is listed only once the
  router reached its /health (the addition job retries in the background meanwhile, and
  `GET /workers/{id}` shows its `job_status`). Posting a URL it has returns the same id.
  `api_key` there is the key the router sends to that worker.
- `DELETE /workers/{id}` (the UUID, not the URL): 202, gone from the list at once; 404 for an id
  it does not know. No drain state exists in this version.
- The admin API needs `Authorization: Bearer KEY` only when the router was started with
  `--control-plane-api-keys ID:NAME:admin:KEY` (401 otherwise). `--api-key` is the key the
  router sends to workers, not one it asks of its clients.
- Metrics on their own listener, `--prometheus-host`/`--prometheus-port` (default 29000), `/metrics`.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.serving.plugins.module_utils._router.kind import (
    RouterError,
    RouterKind,
    Worker,
    answered,
)


class SglangRouter(RouterKind):
    name = "sglang-router"
    default_metrics_port = 29000

    def workers(self, client: Any) -> list:
        body = answered(client.get("/workers"), client.base_url, "listing its workers").json()
        if not isinstance(body, dict) or not isinstance(body.get("workers"), list):
            raise RouterError("the router at %s answered GET /workers with no worker list: is it sglang-router"
                              " 0.3.2 (router_kind)?" % client.base_url)
        return [Worker(str(w.get("url", "")), str(w.get("id", "")), bool(w.get("is_healthy")))
                for w in body["workers"] if isinstance(w, dict)]

    def add(self, client: Any, url: str, worker_api_key: str | None) -> str:
        payload = {"url": url}
        if worker_api_key:
            payload["api_key"] = worker_api_key
        body = answered(client.post_json("/workers", payload), client.base_url, "adding worker %s" % url).json()
        return str((body or {}).get("worker_id") or "")

    def remove(self, client: Any, worker: Worker) -> None:
        answered(client.delete("/workers/%s" % worker.id), client.base_url, "removing worker %s" % worker.url)

    def pending(self, client: Any, url: str, worker_id: str | None) -> str | None:
        if not worker_id:
            return None
        body = client.get_json("/workers/%s" % worker_id)
        job = (body or {}).get("job_status") if isinstance(body, dict) else None
        if not isinstance(job, dict):
            return None
        return "addition job %s%s" % (job.get("status"), ": %s" % job["message"] if job.get("message") else "")

    def metric_names(self) -> tuple:
        return ("smg_worker_pool_size", "smg_http_requests_total", "smg_router_request_errors_total",
                "smg_worker_retries_total", "smg_worker_retries_exhausted_total", "smg_http_connections_active")

    def worker_metric_names(self) -> tuple:
        return ("smg_worker_health", "smg_worker_cb_state", "smg_worker_requests_active")


KIND = SglangRouter()
