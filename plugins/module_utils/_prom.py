# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A /metrics page (the engines' and the router's) read with the Prometheus project's own parser.

prometheus_client's text parser is the exposition format's reference reader: counters keep their
`_total` sample name, histograms their `_bucket`/`_sum`/`_count` samples, labels are unescaped as
the format says. Reading the page by hand would be a second, weaker copy of that grammar.
"""

from __future__ import annotations

from typing import Any, NamedTuple

try:
    from prometheus_client.parser import text_string_to_metric_families
    HAS_PROMETHEUS_CLIENT = True
except ImportError:  # pragma: no cover - exercised on hosts without prometheus_client
    text_string_to_metric_families = None
    HAS_PROMETHEUS_CLIENT = False


class Sample(NamedTuple):
    """One line of a metrics page: its sample name, its labels and its value."""

    name: str
    labels: dict
    value: float


class MetricsPageError(ValueError):
    """A page that is not Prometheus text; the message names where it came from."""


def samples(text: str, source: str = "metrics page") -> list:
    """Every sample of `text`, in page order; a page the parser refuses raises MetricsPageError."""
    try:
        return [Sample(s.name, dict(s.labels), float(s.value))
                for family in text_string_to_metric_families(text) for s in family.samples]
    except (ValueError, TypeError, IndexError) as exc:
        raise MetricsPageError("%s is not Prometheus text: %s" % (source, exc)) from exc


def total(page: Any, name: str, **labels: str) -> Any:
    """The sum of the samples named `name` whose labels include `labels`; None when there is none.

    `page` is the text or the list samples() returned. A gauge exported once per engine rank
    (vLLM's engine label, SGLang's tp_rank) adds up to the server's own figure.
    """
    rows = samples(page) if isinstance(page, str) else page
    found = [s.value for s in rows
             if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
    return sum(found) if found else None
