# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What every router kind answers: its workers, adding one, removing one, where its metrics are.

A kind speaks its router's admin API through an HttpClient the caller built (so the key, the
TLS switch and the timeout are the caller's) and raises RouterError with the router's own words
when the router refuses; a router that does not answer at all is RouterUnreachable.
"""

from __future__ import annotations

from typing import Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError

# A worker's fields as the modules return them (router_info's and router_worker's RETURN
# `workers[]` and `worker`: scripts/gen_docs.py writes them there from here): name, type, meaning.
WORKER_FIELDS = (
    ("url", "str", "The worker's URL as the router keeps it."),
    ("id", "str", "The id the router gave the worker."),
    ("healthy", "bool", "Whether the router calls the worker healthy."),
)


class Worker(NamedTuple):
    """One worker as the router lists it."""

    url: str
    id: str
    healthy: bool

    def as_dict(self) -> dict:
        return {"url": self.url, "id": self.id, "healthy": self.healthy}


class RouterError(GpuFleetError):
    """The router answered, but not with what was asked (the message says what it said)."""


class RouterUnreachable(RouterError):
    """Nothing answered at the router's URL."""


def same_url(a: str, b: str) -> bool:
    """Worker URLs compared as the routers keep them: a trailing slash is no difference."""
    return a.rstrip("/") == b.rstrip("/")


def answered(response: Any, router_url: str, what: str) -> Any:
    """`response` when the router answered; RouterUnreachable naming the URL when it did not;
    RouterError with the status and body when it said no (401/403: which key to give)."""
    if response.status is None:
        raise RouterUnreachable("the router at %s does not answer (%s) while %s; check router_url and that the"
                                " router runs (gpufleet.serving.router role)" % (router_url, response.error, what))
    if response.status in (401, 403):
        raise RouterError("the router at %s refused %s with HTTP %d (%s): give its admin key as api_key (the"
                          " router role's router_admin_api_key)"
                          % (router_url, what, response.status, response.text.strip()[:200]))
    if response.status >= 300:
        raise RouterError("the router at %s answered HTTP %d while %s: %s"
                          % (router_url, response.status, what, response.text.strip()[:300]))
    return response


class RouterKind:
    """The base of the router kinds; each subclass is one file of this package."""

    name = ""
    default_metrics_port = 0
    # The label that names the worker on the per-worker samples of worker_metric_names().
    worker_label = "worker"

    def workers(self, client: Any) -> list:  # pragma: no cover - every kind overrides it
        raise NotImplementedError

    def add(self, client: Any, url: str, worker_api_key: str | None) -> str:  # pragma: no cover
        raise NotImplementedError

    def remove(self, client: Any, worker: Worker) -> None:  # pragma: no cover
        raise NotImplementedError

    def pending(self, client: Any, url: str, worker_id: str | None) -> str | None:
        """Why an added worker is not listed yet, in the router's words; None when it cannot say."""
        return None

    def metrics_url(self, router_url: str) -> str:
        """Where the router's /metrics page is when nobody says: its host at the kind's metrics port."""
        parts = urlsplit(router_url)
        netloc = parts.hostname or ""
        if ":" in netloc:
            netloc = "[%s]" % netloc
        return urlunsplit((parts.scheme, "%s:%d" % (netloc, self.default_metrics_port), "/metrics", "", ""))

    def metric_names(self) -> tuple:
        """The sample names router_info reports, summed over their labels."""
        return ()

    def worker_metric_names(self) -> tuple:
        """The per-worker sample names router_info reports for each worker URL."""
        return ()
