# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which server this is, and its speculative acceptance length for one level only.

Server-wide counters include every request the server ever served, so the
acceptance of a level is computed from counter deltas taken around it:

- SGLang (--enable-metrics): d(sglang:generation_tokens_total) /
  d(sglang:spec_verify_calls_total), the tokens each verify step produced,
  the same quantity as completion_tokens / meta_info.spec_verify_ct.
- SGLang without metrics: /server_info internal_states[0].avg_spec_accept_length
  read after the level (the server's own recent average; source says so).
- vLLM: 1 + d(vllm:spec_decode_num_accepted_tokens) / d(vllm:spec_decode_num_drafts).

None when no speculative step ran during the level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ansible_collections.gpufleet.serving.plugins.module_utils._http import HttpClient


def parse_prometheus(text: str) -> dict:
    """{metric name: sum over its label sets} from Prometheus text format.

    Counters are summed across labels (SGLang labels by model and, in some
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


SGLANG_TOKENS = "sglang:generation_tokens"
# SGLang's counter is spec_verify_calls; spec_verify_ct is accepted as an alias
# (the name of the per-request field, used by some builds and stand-ins).
SGLANG_VERIFY = ("sglang:spec_verify_calls", "sglang:spec_verify_ct")
# vLLM 0.33.0: vllm/v1/spec_decode/metrics.py SpecDecodingProm (prometheus_client Counters, so
# scraped with `_total`; labels model_name and engine). The per-position counter
# vllm:spec_decode_num_accepted_tokens_per_pos_total shares the prefix but not the name.
VLLM_DRAFTS = "vllm:spec_decode_num_drafts"
VLLM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens"


def detect_flavor(models_json: dict | None, metrics_text: str, server_info: dict | None) -> str:
    """'sglang', 'vllm' or 'unknown', from what the server already answered."""
    for card in (models_json or {}).get("data") or []:
        owner = str(card.get("owned_by", "")).lower()
        if owner in ("sglang", "vllm"):
            return owner
    if metrics_text:
        if "sglang:" in metrics_text:
            return "sglang"
        if "vllm:" in metrics_text:
            return "vllm"
    if isinstance(server_info, dict) and ("internal_states" in server_info or "tp_size" in server_info):
        return "sglang"
    return "unknown"


class AcceptanceMeter:
    """snapshot() before a level, measure() after it."""

    def __init__(self, client: HttpClient, flavor: str) -> None:
        self.client = client  # an _http.HttpClient
        self.flavor = flavor

    def _metrics(self):
        answer = self.client.get("/metrics")
        return parse_prometheus(answer.text) if answer.status == 200 else None

    def snapshot(self) -> dict | None:
        if self.flavor not in ("sglang", "vllm"):
            return None
        return self._metrics()

    def snapshot_after(self, before: dict | None) -> dict | None:
        """The counters after a level (None when there was no snapshot before it)."""
        return self._metrics() if before is not None else None

    def measure(self, before: dict | None, after: dict | None | bool = False) -> tuple:
        """(accept length or None, source or None) for the span since `before`.

        after: the snapshot taken after the span; read now when not given.
        """
        if self.flavor not in ("sglang", "vllm"):
            return None, None
        if after is False:
            after = self._metrics() if before is not None else None
        if self.flavor == "vllm":
            return vllm_acceptance(before, after)
        length, source = sglang_acceptance(before, after)
        if source is None:  # no usable counters: ask the server itself
            return sglang_server_info_acceptance(self._server_info())
        return length, source

    def _server_info(self):
        return read_server_info(self.client)


def read_server_info(client: HttpClient) -> dict | None:
    """SGLang's /server_info (/get_server_info before 0.4.4), or None."""
    return client.get_json("/server_info") or client.get_json("/get_server_info")


def _delta(before, after, name):
    if before is None or after is None:
        return None
    a, b = counter(after, name), counter(before, name)
    if a is None or b is None:
        return None
    return a - b


def sglang_acceptance(before: dict | None, after: dict | None) -> tuple:
    verify = _delta(before, after, SGLANG_VERIFY)
    tokens = _delta(before, after, SGLANG_TOKENS)
    if verify is None or tokens is None:
        return None, None
    if verify <= 0:
        return None, "metrics"  # counters exist, no speculative step ran: not speculative
    return round(tokens / verify, 3), "metrics"


def vllm_acceptance(before: dict, after: dict | None) -> tuple:
    drafts = _delta(before, after, VLLM_DRAFTS)
    accepted = _delta(before, after, VLLM_ACCEPTED)
    if drafts is None or accepted is None:
        return None, None
    if drafts <= 0:
        return None, "metrics"
    return round(1.0 + accepted / drafts, 3), "metrics"


def sglang_server_info_acceptance(info: dict | None) -> tuple:
    if not isinstance(info, dict):
        return None, None
    if "speculative_algorithm" in info and not info.get("speculative_algorithm"):
        return None, "server_info"
    states = info.get("internal_states") or []
    value = states[0].get("avg_spec_accept_length") if states and isinstance(states[0], dict) else None
    if value is None:
        return None, None
    return round(float(value), 3), "server_info"
