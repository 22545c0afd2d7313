# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prometheus parsing, engine detection and acceptance from counter deltas."""

from __future__ import annotations

import ast

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import accept as ba
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._http import Response
from tests.support.real_sources import vllm_sources

SGLANG, VLLM = registry.get("sglang"), registry.get("vllm")

PAGE = """# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="kimi {k2}",tp_rank="0"} 1000.0
sglang:generation_tokens_total{model_name="kimi {k2}",tp_rank="1"} 500.0
sglang:generation_tokens_created{model_name="kimi {k2}"} 1.7e+09
sglang:spec_verify_calls_total{model_name="kimi \\"q\\" x"} 600 1712345678000
sglang:spec_accept_length 2.5
bad_line_without_value
"""


def test_parse_sums_label_sets_and_drops_created():
    m = ba.parse_prometheus(PAGE)
    assert m["sglang:generation_tokens_total"] == 1500.0
    assert m["sglang:spec_verify_calls_total"] == 600.0
    assert m["sglang:spec_accept_length"] == 2.5
    assert "sglang:generation_tokens_created" not in m


@pytest.mark.parametrize("names, expected", [
    ("sglang:spec_verify_calls", 600.0),
    (("sglang:spec_verify_calls", "sglang:spec_verify_ct"), 600.0),
    ("sglang:spec_accept_length", 2.5),
    ("vllm:spec_decode_num_drafts", None),
])
def test_counter_with_or_without_total(names, expected):
    assert ba.counter(ba.parse_prometheus(PAGE), names) == expected


def test_sglang_acceptance_is_the_delta_not_the_total():
    before = {"sglang:generation_tokens_total": 1e6, "sglang:spec_verify_calls_total": 1e6}
    after = {"sglang:generation_tokens_total": 1e6 + 300, "sglang:spec_verify_calls_total": 1e6 + 100}
    assert ba.acceptance(SGLANG.accept_length, before, after) == (3.0, "metrics")


def test_sglang_alias_counter_name():
    before = {"sglang:generation_tokens_total": 10, "sglang:spec_verify_ct_total": 5}
    after = {"sglang:generation_tokens_total": 35, "sglang:spec_verify_ct_total": 15}
    assert ba.acceptance(SGLANG.accept_length, before, after) == (2.5, "metrics")


def test_no_verify_step_means_not_speculative():
    m = {"sglang:generation_tokens_total": 10, "sglang:spec_verify_calls_total": 5}
    assert ba.acceptance(SGLANG.accept_length, m, dict(m)) == (None, "metrics")
    assert ba.acceptance(SGLANG.accept_length, {"sglang:generation_tokens_total": 1}, {"sglang:generation_tokens_total": 9}) \
        == (None, None)


def test_vllm_acceptance_one_plus_accepted_per_draft():
    before = {"vllm:spec_decode_num_drafts_total": 500.0, "vllm:spec_decode_num_accepted_tokens_total": 250.0}
    after = {"vllm:spec_decode_num_drafts_total": 600.0, "vllm:spec_decode_num_accepted_tokens_total": 400.0}
    assert ba.acceptance(VLLM.accept_length, before, after) == (2.5, "metrics")
    assert ba.acceptance(VLLM.accept_length, before, None) == (None, None)


@pytest.mark.parametrize("info, expected", [
    ({"speculative_algorithm": "EAGLE3", "internal_states": [{"avg_spec_accept_length": 2.71}]}, (2.71, "server_info")),
    ({"speculative_algorithm": None, "internal_states": [{"avg_spec_accept_length": 1.0}]}, (None, "server_info")),
    ({"internal_states": [{}]}, (None, None)),
    (None, (None, None)),
])
def test_server_info_fallback(info, expected):
    assert ba.server_info_acceptance(info, SGLANG.server_info_accept_length) == expected


@pytest.mark.parametrize("models, metrics, info, engine", [
    ({"data": [{"id": "m", "owned_by": "sglang"}]}, "", None, "sglang"),
    ({"data": [{"id": "m", "owned_by": "vllm"}]}, "", None, "vllm"),
    ({"data": [{"id": "m", "owned_by": "me"}]}, "vllm:num_requests_running 0\n", None, "vllm"),
    ({"data": [{"id": "m", "owned_by": "me"}]}, "", {"tp_size": 8, "internal_states": []}, "sglang"),
    (None, "", None, "unknown"),
])
def test_detect_engine(models, metrics, info, engine):
    assert ba.detect_engine(models, metrics, info) == engine


class FakeClient:
    def __init__(self, pages, info=None):
        self.pages = list(pages)
        self.info = info

    def get(self, path):
        assert path == "/metrics"
        if not self.pages:
            return Response(404, b"")
        return Response(200, self.pages.pop(0).encode())

    def get_json(self, path):
        return self.info


def test_meter_falls_back_to_server_info_without_metrics():
    meter = ba.AcceptanceMeter(FakeClient([], {"speculative_algorithm": "EAGLE3",
                                               "internal_states": [{"avg_spec_accept_length": 3.1}]}), "sglang")
    before = meter.snapshot()
    assert before is None
    assert meter.measure(before) == (3.1, "server_info")


def test_meter_unknown_engine_reads_nothing():
    meter = ba.AcceptanceMeter(FakeClient([]), "unknown")
    assert meter.snapshot() is None and meter.measure(None) == (None, None)


# --- vLLM 0.33.0's own metric definitions (tests/support/real_sources.py finds the wheel) ---

def _vllm_counters(root):
    """(name, documentation) of vLLM's spec-decode counters, the per-position counter's name and
    the label names, read from vllm/v1/spec_decode/metrics.py (SpecDecodingProm) and
    vllm/v1/metrics/loggers.py (labelnames = ["model_name", "engine"])."""
    tree = ast.parse((root / "v1/spec_decode/metrics.py").read_text(encoding="utf-8"))
    specs = [tuple(ast.literal_eval(node)) for node in ast.walk(tree)
             if isinstance(node, ast.Tuple) and len(node.elts) == 2
             and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
             and node.elts[0].value.startswith("vllm:spec_decode_")]
    (per_pos,) = [kw.value.value for node in ast.walk(tree) if isinstance(node, ast.Call) for kw in node.keywords
                  if kw.arg == "name" and isinstance(kw.value, ast.Constant)
                  and str(kw.value.value).startswith("vllm:spec_decode_")]
    loggers = ast.parse((root / "v1/metrics/loggers.py").read_text(encoding="utf-8"))
    (labels,) = {tuple(ast.literal_eval(node.value)) for node in ast.walk(loggers) if isinstance(node, ast.Assign)
                 and any(getattr(t, "id", None) == "labelnames" for t in node.targets)
                 and isinstance(node.value, ast.List)}
    return specs, per_pos, list(labels)


def _vllm_page(root, counts, engines=("0",), positions=3):
    """vLLM's /metrics page as a scrape shows it: the counters registered as vLLM registers them,
    written by the real prometheus_client (beside vllm in build/vllm-real) when it is there, else
    in its exposition format by hand (a Counter `x` is scraped as `x_total`, plus `x_created`)."""
    specs, per_pos, labels = _vllm_counters(root)
    try:
        import prometheus_client  # pylint: disable=import-outside-toplevel
    except ImportError:
        prometheus_client = None
    if prometheus_client is not None:
        registry = prometheus_client.CollectorRegistry()
        for name, doc in specs:
            metric = prometheus_client.Counter(name=name, documentation=doc, labelnames=labels, registry=registry)
            for engine in engines:
                metric.labels("m", engine).inc(counts[name])
        by_pos = prometheus_client.Counter(name=per_pos, documentation="Accepted tokens per draft position.",
                                           labelnames=labels + ["position"], registry=registry)
        for engine in engines:
            for pos in range(positions):
                by_pos.labels("m", engine, str(pos)).inc(7)
        return prometheus_client.generate_latest(registry).decode()
    lines = []
    for name, doc in specs:
        lines += ["# HELP %s_total %s" % (name, doc), "# TYPE %s_total counter" % name]
        for engine in engines:
            lines.append('%s_total{engine="%s",model_name="m"} %s' % (name, engine, float(counts[name])))
            lines.append('%s_created{engine="%s",model_name="m"} 1.7e+09' % (name, engine))
    for engine in engines:
        for pos in range(positions):
            lines.append('%s_total{engine="%s",model_name="m",position="%d"} 7.0' % (per_pos, engine, pos))
    return "\n".join(lines) + "\n"


@pytest.fixture
def vllm_root(monkeypatch):
    root = vllm_sources()
    monkeypatch.syspath_prepend(str(root.parent))  # build/vllm-real also holds prometheus_client
    return root


def test_vllm_counter_names_are_the_wheels(vllm_root):
    specs, per_pos, labels = _vllm_counters(vllm_root)
    names = [name for name, _doc in specs]
    assert VLLM.accept_length.denominator[0] in names and VLLM.accept_length.numerator[0] in names
    assert names == ["vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
                     "vllm:spec_decode_num_accepted_tokens"]
    assert per_pos == "vllm:spec_decode_num_accepted_tokens_per_pos" and labels == ["model_name", "engine"]
    # SpecDecodingProm's own docstring gives the same formula
    assert "1 + (\n      rate(vllm:spec_decode_num_accepted_tokens_total[$interval]) /\n" \
           "      rate(vllm:spec_decode_num_drafts_total[$interval]))" in (
               vllm_root / "v1/spec_decode/metrics.py").read_text()


@pytest.mark.parametrize("engines", [("0",), ("0", "1")])  # data parallel: one series per engine, summed
def test_vllm_acceptance_from_a_scraped_page(vllm_root, engines):
    before_counts = {"vllm:spec_decode_num_drafts": 500, "vllm:spec_decode_num_draft_tokens": 1500,
                     "vllm:spec_decode_num_accepted_tokens": 250}
    after_counts = {"vllm:spec_decode_num_drafts": 600, "vllm:spec_decode_num_draft_tokens": 1800,
                    "vllm:spec_decode_num_accepted_tokens": 400}
    before_page = _vllm_page(vllm_root, before_counts, engines)
    assert 'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 500.0' in before_page
    before, after = ba.parse_prometheus(before_page), ba.parse_prometheus(_vllm_page(vllm_root, after_counts, engines))
    assert not any(name.endswith("_created") for name in after)
    # the per-position counter shares the accepted counter's prefix but is a series of its own
    assert after["vllm:spec_decode_num_accepted_tokens_total"] == 400.0 * len(engines)
    assert after["vllm:spec_decode_num_accepted_tokens_per_pos_total"] == 21.0 * len(engines)
    assert ba.detect_engine(None, _vllm_page(vllm_root, after_counts, engines), None) == "vllm"
    assert ba.acceptance(VLLM.accept_length, before, after) == (2.5, "metrics")  # 1 + 150 / 100
    assert ba.acceptance(VLLM.accept_length, after, dict(after)) == (None, "metrics")  # no draft in the span
