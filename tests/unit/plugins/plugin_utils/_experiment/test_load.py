# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading an experiment file (plugin_utils/_experiment/load.py): every refusal names the file, the
line and the key path; matrices expand in order with their generated names; hosts share variants
with spread; the fingerprint follows the settings; the seed campaigns in docs/examples load."""

from __future__ import annotations

import pathlib
import textwrap
import time

import pytest
import yaml

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import gates as gt
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import load as ld
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import preset, schema, server_requests
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.source import Source
from tests.support.paths import REPO

SG, VL = registry.names()[0], registry.names()[1]

GOOD = """\
reference: tp8
benchmark: {levels: [1, 8], input_len: 16}
gates:
  max_failed_requests: 0
  min_speedup: {levels: [1], value: 1.1}
variants:
  - name: tp8
    engine: %(sg)s
    server: {model_path: /m, tp_size: 8}
  - name: ep
    engine: %(sg)s
    server:
      model_path: /m
      extra_args: [--ep-size, 8]
  - name: spec
    engine: %(vl)s
    speculative: {draft_model_path: /d, num_steps: 3}
""" % {"sg": SG, "vl": VL}


def write(tmp_path, text, name="exp.experiment.yml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_good_file(tmp_path):
    exp = ld.load(write(tmp_path, GOOD), ["h1"])
    assert exp["name"] == "exp" and exp["reference"] == "tp8" and exp["spread"] is False
    assert exp["category_level"] is None
    # The goodput SLOs and the category level are settings an experiment file takes.
    slo = GOOD.replace("reference: tp8\n", "reference: tp8\ncategory_level: 8\n").replace(
        "input_len: 16", "input_len: 16, slo_ttft_ms: 500, slo_tpot_ms: 40.5")
    with_slo = ld.load(write(tmp_path, slo, "slo.experiment.yml"), ["h1"])
    assert with_slo["category_level"] == 8
    assert with_slo["variants"][0]["benchmark"]["slo_ttft_ms"] == 500
    assert with_slo["variants"][0]["benchmark"]["slo_tpot_ms"] == 40.5
    assert exp["file"] == str(tmp_path / "exp.experiment.yml") and exp["checksum"].startswith("sha256:")
    tp8, ep, spec = exp["variants"]
    assert [tp8["name"], ep["name"], spec["name"]] == ["tp8", "ep", "spec"]
    assert tp8["role"] == SG + "_server" and tp8["vars_prefix"] == SG + "_server_"
    assert ep["server"]["extra_args"] == ["--ep-size", "8"]  # a flag's number reaches the role as a word
    assert ep["benchmark"] == {"levels": [1, 8], "input_len": 16}
    assert "min_speedup" not in tp8["gates"] and ep["gates"]["min_speedup"] == {"levels": [1], "value": 1.1}
    assert spec["speculative"] == {"draft_model_path": "/d", "num_steps": 3} and tp8["speculative"] is None
    assert exp["assignments"] == {"h1": ["tp8", "ep", "spec"]}


# (file text, key path, a piece of the line the error must name - its last line -, words the message must hold)
BAD = [
    ("reference: a\nvariantz: []\n", "variantz", "variantz", ["did you mean variants"]),
    ("reference: a\nvariants:\n  - name: a\n    engine: %s\n    servr: {}\n" % SG,
     "variants[0].servr", "servr", ["did you mean server"]),
    (GOOD.replace("tp_size: 8}", "tp_sise: 8}"), "variants[0].server.tp_sise", "tp_sise", ["did you mean tp_size"]),
    (GOOD.replace("  - name: ep\n", "  - nam: ep\n"), "variants[1].nam", "nam: ep", ["did you mean name"]),
    (GOOD.replace("  - name: ep\n    engine: %s\n" % SG, "  - engine: %s\n" % SG), "variants[1]", "- engine",
     ["name is missing"]),
    (GOOD.replace("  - name: ep\n    engine: %s\n" % SG, "  - name: ep\n"), "variants[1]", "name: ep",
     ["engine is missing", SG, VL]),
    (GOOD.replace("engine: %s" % VL, "engine: %sx" % VL), "variants[2].engine", "engine: %sx" % VL,
     ["unknown engine", "did you mean %s" % VL]),
    (GOOD.replace("name: spec", "name: ep"), "variants[2].name", "name: ep",
     ["a second variant named ep"]),
    (GOOD.replace("reference: tp8", "reference: tp7"), "reference", "reference", ["not a variant", "tp8"]),
    (GOOD.replace("reference: tp8\n", ""), "(top level)", "benchmark", ["reference is missing"]),
    (GOOD.replace("    server:\n      model_path: /m\n", "    matrix: {tp_size: []}\n    server:\n"),
     "variants[1].matrix.tp_size", "matrix", ["expands to zero"]),
    (GOOD.replace("max_failed_requests: 0", "max_failed_reqs: 0"), "gates.max_failed_reqs", "max_failed_reqs",
     ["unknown gate", "did you mean max_failed_requests"]),
    (GOOD.replace("max_failed_requests: 0", "max_failed_requests: -1"), "gates.max_failed_requests",
     "max_failed_requests", ["whole number"]),
    (GOOD.replace("{levels: [1], value: 1.1}", "{levels: [64], value: 1.1}"), "variants[1].gates.min_speedup.levels",
     "name: ep", ["concurrency 64 is not a benchmark level"]),
    (GOOD.replace("tp_size: 8}", "tp_size: '8'}"), "variants[0].server.tp_size", "tp_size", ["whole number"]),
    (GOOD.replace("extra_args: [--ep-size, 8]", "extra_args: --ep-size 8"), "variants[1].server.extra_args",
     "extra_args", ["must be a list"]),
    (GOOD.replace("tp_size: 8}", "state: stopped}"), "variants[0].server.state", "state", ["the playbook"]),
    (GOOD.replace("draft_model_path: /d", "draft_model: /d"), "variants[2].speculative.draft_model",
     "draft_model", ["did you mean draft_model_path"]),
    (GOOD.replace("{draft_model_path: /d, num_steps: 3}", "{num_steps: 3}"), "variants[2].speculative",
     "speculative", ["draft_model_path is required"]),
    (GOOD.replace("{draft_model_path: /d, num_steps: 3}", "eagle-drafter"), "variants[2].speculative",
     "speculative", ["eagle_drafter (each host's eagle_drafter_* variables)", "'eagle-drafter'"]),
    (GOOD.replace("input_len: 16", "input_length: 16"), "benchmark.input_length", "input_length",
     ["did you mean input_len"]),
    (GOOD.replace("benchmark: {levels: [1, 8]", "benchmark: {levels: [1, x]"), "benchmark.levels",
     "benchmark", ["item 1 must be a whole number"]),
    (GOOD.replace("tp_size: 8}", "tp_size: 8, tp_size: 4}"), "variants[0].server.tp_size", "tp_size: 4",
     ["set twice"]),
    (GOOD.replace("reference: tp8\n", "reference: tp8\nspread: yes please\n"), "spread", "spread", ["true or false"]),
    # Values llm_benchmark refuses are refused in the plan, before any server is launched.
    (GOOD.replace("input_len: 16}", "input_len: 16, repeats: 0}"), "benchmark.repeats", "benchmark",
     ["repeats must be >= 1, got 0"]),
    (GOOD.replace("server: {model_path: /m, tp_size: 8}", "server: {model_path: /m, tp_size: 8}\n"
                  "    benchmark: {requests_per_level: -4}"), "variants[0].benchmark.requests_per_level",
     "requests_per_level", ["requests_per_level must be >= 1, got -4"]),
    (GOOD.replace("reference: tp8\n", "reference: tp8\ncategory_level: 0\n"), "category_level", "category_level",
     ["a concurrency level"]),
    (GOOD.replace("  max_failed_requests: 0\n", "  max_failed_requests: 0\n  per_category: {code: {min_speedup: 2}}\n"),
     "gates.per_category.code.min_speedup", "per_category", ["unknown per-category gate"]),
    (GOOD.replace("input_len: 16", "input_len: 16, slo_ttft_ms: fast"), "benchmark.slo_ttft_ms", "benchmark",
     ["must be a number"]),
]


@pytest.mark.parametrize("text, path, marker, words", BAD, ids=[c[1] + ":" + c[3][0] for c in BAD])
def test_bad_input_names_file_line_and_key(tmp_path, text, path, marker, words):
    file = write(tmp_path, text)
    line = max(i for i, row in enumerate(textwrap.dedent(text).splitlines(), 1) if marker in row)
    with pytest.raises(InvalidInput) as err:
        ld.load(file, ["h1"])
    msg = str(err.value)
    assert msg.startswith("%s:%d: %s: " % (file, line, path)), msg
    for word in words:
        assert word in msg, msg


@pytest.mark.parametrize("hosts", [[], ["h1", "h1"]])
def test_bad_hosts(tmp_path, hosts):
    with pytest.raises(InvalidInput, match="hosts"):
        ld.load(write(tmp_path, GOOD), hosts)


MATRIX = """\
reference: ep-tp_size4-mem_fraction_static0.7
max_variants: %d
variants:
  - name: ep
    engine: %s
    server: {model_path: /m}
    matrix: {tp_size: [4, 8], mem_fraction_static: [0.7, 0.75]}
  - name: last
    engine: %s
"""


def test_matrix_names_order_and_count(tmp_path):
    exp = ld.load(write(tmp_path, MATRIX % (32, SG, SG)), ["h1"])
    assert [v["name"] for v in exp["variants"]] == [
        "ep-tp_size4-mem_fraction_static0.7", "ep-tp_size4-mem_fraction_static0.75",
        "ep-tp_size8-mem_fraction_static0.7", "ep-tp_size8-mem_fraction_static0.75", "last"]
    first = exp["variants"][0]
    assert first["matrix_values"] == {"tp_size": 4, "mem_fraction_static": 0.7}
    assert first["server"] == {"model_path": "/m", "tp_size": 4, "mem_fraction_static": 0.7}
    assert exp["variants"][-1]["matrix_values"] == {}
    assert len({v["fingerprint"] for v in exp["variants"]}) == 5


@pytest.mark.parametrize("confirm_large, confirm, refused", [
    (False, False, True), (True, False, False), (False, True, False)])
def test_more_variants_than_the_limit_need_confirmation(tmp_path, confirm_large, confirm, refused):
    text = MATRIX % (4, SG, SG) + ("confirm_large: true\n" if confirm_large else "")
    file = write(tmp_path, text)
    if refused:
        with pytest.raises(InvalidInput, match=r":3: variants: 5 variants after the matrices, more than "
                                               r"max_variants \(4\); set confirm_large: true"):
            ld.load(file, ["h1"], confirm=confirm)
    else:
        assert len(ld.load(file, ["h1"], confirm=confirm)["variants"]) == 5


def test_the_default_limit_is_the_callers(tmp_path):
    file = write(tmp_path, (MATRIX % (1, SG, SG)).replace("max_variants: 1\n", ""))
    with pytest.raises(InvalidInput, match="more than max_variants \\(3\\)"):
        ld.load(file, ["h1"], max_variants_default=3)


FIVE = "reference: v0\nspread: %s\nvariants:\n" + "".join(
    "  - {name: v%d, engine: %s}\n" % (i, SG) for i in range(5))


@pytest.mark.parametrize("spread, expected", [
    ("true", {"h1": ["v0", "v2", "v4"], "h2": ["v1", "v3"]}),
    ("false", {"h1": ["v0", "v1", "v2", "v3", "v4"], "h2": ["v0", "v1", "v2", "v3", "v4"]}),
])
def test_spread_assignment(tmp_path, spread, expected):
    assert ld.load(write(tmp_path, FIVE % spread), ["h1", "h2"])["assignments"] == expected


def test_fingerprint_follows_the_settings_not_the_gates(tmp_path):
    def prints(text):
        return [v["fingerprint"] for v in ld.load(write(tmp_path, text), ["h1"])["variants"]]
    base = prints(GOOD)
    assert prints(GOOD.replace("max_failed_requests: 0", "max_failed_requests: 3")) == base
    changed = prints(GOOD.replace("tp_size: 8}", "tp_size: 4}"))
    assert changed[0] != base[0] and changed[1:] == base[1:]


def test_server_options_come_from_the_role_specs():
    for name in registry.names():
        options = schema.server_options(name + "_server")
        assert "model_path" in options and "tp_size" in options
        assert not set(options) & set(schema.SERVER_OWN_KEYS)
    assert "draft_model_path" in schema.speculative_options()
    assert set(schema.benchmark_options()) == {"levels", "requests_per_level", "warmup_requests", "input_len",
                                               "output_len", "workload", "repeats", "category_passes",
                                               "slo_ttft_ms", "slo_tpot_ms", "slo_e2e_ms"}


@pytest.mark.parametrize("name, variants", [
    ("kimi-k25-eagle3", 4),
    ("glm5-tp8-vs-ep8", 2),
])
def test_the_seed_campaigns_load(name, variants):
    exp = ld.load(pathlib.Path(REPO) / "docs" / "examples" / ("%s.experiment.yml" % name), ["gpu01", "gpu02"])
    assert exp["name"] == name and len(exp["variants"]) == variants
    assert exp["assignments"]["gpu01"] == exp["assignments"]["gpu02"] == [v["name"] for v in exp["variants"]]


@pytest.mark.parametrize("text", [
    GOOD,
    "base: &b {q: 1, r: [1, 2]}\nm:\n  <<: *b\n  r: 2\nn: *b\nx: [yes, 0.75, null, '8', 1e3]\n",
])
def test_the_file_reads_as_yaml_safe_load_reads_it(tmp_path, text):
    assert Source(write(tmp_path, text)).data == yaml.safe_load(text)


def test_the_module_documentation_names_every_key_the_code_takes():
    text = (pathlib.Path(REPO) / "plugins" / "modules" / "experiment_plan.py").read_text()
    keys = schema.TOP_KEYS + schema.VARIANT_KEYS + tuple(schema.benchmark_options()) + gt.GATE_NAMES \
        + tuple(schema.speculative_options())
    assert [k for k in keys if "C(%s)" % k not in text] == []


def test_an_engine_without_a_server_role_is_refused_at_its_line(tmp_path, monkeypatch):
    """An engine with its registry file only (tests/integration/test_new_engine.py) runs through
    launch.yml and its peers; an experiment variant needs the engine's role, and says so."""
    from tests.support.engines import toyserve_engine

    monkeypatch.setattr(registry, "ENGINES", registry.ENGINES + (toyserve_engine.ENGINE,))
    path = write(tmp_path, GOOD.replace("engine: %s\n    speculative" % VL, "engine: toyserve\n    speculative"))
    with pytest.raises(InvalidInput) as err:
        ld.load(path, ["h1"])
    assert str(err.value).startswith("%s:16: variants[2].engine: engine 'toyserve' has no server role" % path), err.value
    assert "launch.yml, benchmark.yml and teardown.yml" in str(err.value)


def test_a_preset_is_checked_as_a_file_is_and_named_by_its_origin():
    origin = "compare_engines.yml (compare_variants)"
    good = preset.compare_experiment([SG, SG + "+eagle3", VL], benchmark={"levels": [1, 8]})
    exp = ld.load(Source.given(good, origin), ["h1", "h2"])
    assert exp["name"] == "compare_engines" and exp["reference"] == SG and exp["file"] == origin
    by_name = {v["name"]: v for v in exp["variants"]}
    assert [v["name"] for v in exp["variants"]] == [SG, SG + "+eagle3", VL]
    assert by_name[SG + "+eagle3"]["speculative"] == ld.FROM_DRAFTER_ROLE
    assert by_name[SG + "+eagle3"]["launch_role"] == "eagle_drafter" and by_name[SG]["launch_role"] == SG + "_server"
    assert all(v["benchmark"] == {"levels": [1, 8]} for v in exp["variants"])
    # The drafter is set by eagle_drafter when it launches: the variant itself sets no drafter.
    planned = server_requests.add_server_requests(exp)
    requests = {v["name"]: v["server_request"] for v in planned["variants"] if v["engine"] == SG}
    assert requests[SG]["overrides"]["speculative"] == {} and not requests[SG]["drafter"]
    assert requests[SG + "+eagle3"]["drafter"] and "speculative" not in requests[SG + "+eagle3"]["overrides"]
    with pytest.raises(InvalidInput) as err:
        ld.load(Source.given(preset.compare_experiment([VL], reference=None), origin), ["h1"])
    assert str(err.value).startswith(origin + ": reference: %r is not a variant" % SG)
    with pytest.raises(ValueError, match="unknown variant 'sglang-eagle3'; the variants are %s, %s, " % (SG, VL)):
        preset.compare_experiment([SG + "-eagle3"])


@pytest.mark.parametrize("baseline", [True, False])
def test_the_swap_preset_is_its_two_steps_against_the_base_server(baseline):
    origin = "swap_to_eagle.yml (engine, swap_baseline, benchmark)"
    exp = ld.load(Source.given(preset.swap_experiment(VL, baseline, {"levels": [1]}), origin), ["h1", "h2"])
    steps = [preset.SWAP_BASELINE, preset.SWAP_CANDIDATE] if baseline else [preset.SWAP_CANDIDATE]
    assert [v["name"] for v in exp["variants"]] == steps and exp["reference"] == steps[0]
    by_name = {v["name"]: v for v in exp["variants"]}
    assert by_name[preset.SWAP_CANDIDATE]["launch_role"] == "eagle_drafter"
    assert by_name[preset.SWAP_CANDIDATE]["role"] == VL + "_server"
    assert all(v["engine"] == VL and v["benchmark"] == {"levels": [1]} for v in exp["variants"])
    if baseline:
        assert by_name[preset.SWAP_BASELINE]["speculative"] is None
        assert by_name[preset.SWAP_BASELINE]["launch_role"] == VL + "_server"
    # Every host runs both steps, in order.
    assert exp["assignments"] == {"h1": steps, "h2": steps}
    with pytest.raises(ValueError, match="engine must be one of .*not 'tgi'"):
        preset.swap_experiment("tgi")


def _huge_matrix(confirm_large):
    # Eight axes that take whole numbers, so every value passes its type check (old code built them all).
    axes = sorted(k for k, v in schema.server_options(SG + "_server").items() if v.get("type") == "int")[:8]
    assert len(axes) == 8
    return ("reference: m\nconfirm_large: %s\nvariants:\n  - name: m\n    engine: %s\n    matrix:\n" % (confirm_large, SG)
            + "".join("      %s: [%s]\n" % (axis, ", ".join(str(i) for i in range(1, 11))) for axis in axes))


@pytest.mark.parametrize("confirm_large, words", [
    ("false", ":3: variants: 100000000 variants after the matrices, more than max_variants (32)"),
    ("true", ":3: variants: 100000000 variants after the matrices, more than %d, which no confirmation runs"
     % ld.MAX_VARIANTS_EVER),
])
def test_a_huge_matrix_is_counted_not_built(tmp_path, confirm_large, words):
    text = _huge_matrix(confirm_large)
    assert len(text) < 700
    start = time.monotonic()
    with pytest.raises(InvalidInput) as info:
        ld.load(write(tmp_path, text), ["h1"])
    assert time.monotonic() - start < 2 and words in info.value.msg, info.value.msg


TOPOLOGY = """\
reference: tp8
variants:
  - {name: tp8, engine: %(sg)s, server: {nodes: [h1], tp_size: 8}}
  - {name: tp16, engine: %(sg)s, server: {nodes: [h1, h2], tp_size: 16}}
  - {name: other, engine: %(sg)s, server: {nodes: %(other)s, tp_size: 16}}
"""


@pytest.mark.parametrize("other, words", [
    ("[h1, h3]", r":5: variants\[2\]\.server\.nodes: runs on h1, h3 and tp16 on h1, h2: every variant that spans "
                 r"hosts needs the same hosts"),
    ("[h1, h9]", r":5: variants\[2\]\.server\.nodes\[1\]: h9 is not a host of the play \(h1, h2, h3\)"),
])
def test_a_variant_nodes_must_be_play_hosts_and_every_group_the_same_hosts(tmp_path, other, words):
    path = write(tmp_path, TOPOLOGY % {"sg": SG, "other": other})
    with pytest.raises(InvalidInput, match=words):
        ld.load(path, ["h1", "h2", "h3"])


def test_a_variant_with_nodes_runs_on_those_hosts_only(tmp_path):
    path = write(tmp_path, TOPOLOGY % {"sg": SG, "other": "[h2, h1]"})
    assert ld.load(path, ["h1", "h2", "h3"])["assignments"] == {
        "h1": ["tp8", "tp16", "other"], "h2": ["tp16", "other"], "h3": []}
