# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which server this is, and its speculative acceptance length for one level only.

Server-wide counters include every request the server ever served, so the
acceptance of a level is computed from counter deltas taken around it, with each
engine's formula (Engine.accept_length in _engines/):

- PLUS_ONE + d(NUMERATOR) / d(DENOMINATOR): tokens per verify step (SGLang with
  --enable-metrics), or 1 + accepted tokens per draft (vLLM);
- an engine whose metrics are off but whose server info carries its own recent
  average (Engine.server_info_accept_length, SGLang's /server_info
  internal_states[0].avg_spec_accept_length) gives that, read after the level.

None when no speculative step ran during the level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._engines.engine import AcceptLength, Engine

if TYPE_CHECKING:
    from ansible_collections.gpufleet.serving.plugins.module_utils._http import HttpClient


def parse_prometheus(text: str) -> dict:
    """{metric name: sum over its label sets} from Prometheus text format.

    Counters are summed across labels (an engine may label by model and, in some
    versions, by rank). `_created` samples are timestamps, not counts: dropped.
    """
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            name = line[:line.index("{")]
            rest = line[_label_end(line) + 1:]
        else:
            name, unused, rest = line.partition(" ")
        fields = rest.split()
        if not fields or name.endswith("_created"):
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        out[name] = out.get(name, 0.0) + value
    return out


def _label_end(line):
    """Index of the '}' closing the label set, skipping quoted values."""
    quoted = False
    i = line.index("{") + 1
    while i < len(line):
        c = line[i]
        if quoted and c == "\\":
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == "}" and not quoted:
            return i
        i += 1
    raise ValueError("unterminated label set")


def counter(metrics: dict, names: str | tuple) -> float | None:
    """A counter by its base name (or the first present of several), with or without `_total`."""
    for name in (names,) if isinstance(names, str) else names:
        if name + "_total" in metrics:
            return metrics[name + "_total"]
        if name in metrics:
            return metrics[name]
    return None


def detect_engine(models_json: dict | None, metrics_text: str, server_info: dict | None) -> str:
    """An engine's name or 'unknown', from what the server already answered: the model card's
    owner, else the metrics' prefix, else keys only one engine's server info has (registry order)."""
    for card in (models_json or {}).get("data") or []:
        owner = str(card.get("owned_by", "")).lower()
        if owner in _registry.names():
            return owner
    if metrics_text:
        for engine in _registry.engines():
            if engine.metric_prefix in metrics_text:
                return engine.name
    if isinstance(server_info, dict):
        for engine in _registry.engines():
            if any(key in server_info for key in engine.server_info_keys):
                return engine.name
    return "unknown"


class AcceptanceMeter:
    """snapshot() before a level, measure() after it."""

    def __init__(self, client: HttpClient, engine: str) -> None:
        self.client = client  # an _http.HttpClient
        self.engine = _registry.find(engine)  # None for 'unknown': no counters to read

    def _metrics(self):
        answer = self.client.get("/metrics")
        return parse_prometheus(answer.text) if answer.status == 200 else None

    def snapshot(self) -> dict | None:
        if self.engine is None:
            return None
        return self._metrics()

    def snapshot_after(self, before: dict | None) -> dict | None:
        """The counters after a level (None when there was no snapshot before it)."""
        return self._metrics() if before is not None else None

    def measure(self, before: dict | None, after: dict | None | bool = False) -> tuple:
        """(accept length or None, source or None) for the span since `before`.

        after: the snapshot taken after the span; read now when not given.
        """
        if self.engine is None:
            return None, None
        if after is False:
            after = self._metrics() if before is not None else None
        length, source = acceptance(self.engine.accept_length, before, after)
        if source is None and self.engine.server_info_accept_length:  # no usable counters: ask the server
            return server_info_acceptance(read_server_info(self.client, self.engine),
                                          self.engine.server_info_accept_length)
        return length, source


def read_server_info(client: HttpClient, engine: Engine | None = None) -> dict | None:
    """The first server-info answer among ENGINE's paths (every engine's when None), or None."""
    for one in (engine,) if engine else _registry.engines():
        for path in one.server_info_paths:
            info = client.get_json(path)
            if info:
                return info
    return None


def _delta(before, after, name):
    if before is None or after is None:
        return None
    a, b = counter(after, name), counter(before, name)
    if a is None or b is None:
        return None
    return a - b


def acceptance(formula: AcceptLength, before: dict | None, after: dict | None) -> tuple:
    """(PLUS_ONE + d(NUMERATOR) / d(DENOMINATOR) or None, "metrics" or None): None, None without the
    counters; None, "metrics" when they exist but no speculative step ran."""
    denominator = _delta(before, after, formula.denominator)
    numerator = _delta(before, after, formula.numerator)
    if denominator is None or numerator is None:
        return None, None
    if denominator <= 0:
        return None, "metrics"  # counters exist, no speculative step ran: not speculative
    return round((1.0 if formula.plus_one else 0.0) + numerator / denominator, 3), "metrics"


def server_info_acceptance(info: dict | None, key: str) -> tuple:
    """The server's own recent average, internal_states[0][KEY], or None (None, "server_info" when
    the server says it runs no speculative algorithm)."""
    if not isinstance(info, dict):
        return None, None
    if "speculative_algorithm" in info and not info.get("speculative_algorithm"):
        return None, "server_info"
    states = info.get("internal_states") or []
    value = states[0].get(key) if states and isinstance(states[0], dict) else None
    if value is None:
        return None, None
    return round(float(value), 3), "server_info"
