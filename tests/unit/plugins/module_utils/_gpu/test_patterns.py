# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kill patterns: refused when empty, invalid or broad; SGLang/vLLM patterns accepted."""

from __future__ import annotations

import re

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import patterns

SGLANG_TITLES = [
    "python3 -m sglang.launch_server --model-path /models/kimi-k2.5 --tp-size 8 --port 30000",
    "sglang::scheduler_TP0",
    "sglang::scheduler_TP7",
    "sglang::scheduler_DP0_TP0_EP0",
    "sglang::detokenizer",
    "sglang::data_parallel_controller",
]
# The entry point sglang 0.5.23 recommends (a console script: python runs bin/sglang).
SERVE_TITLE = "/opt/sglang/.venv/bin/python3 /opt/sglang/.venv/bin/sglang serve --model-path /models/kimi-k2.5 --tp-size 8"
VLLM_TITLES = [
    "/usr/bin/python3 -m vllm.entrypoints.openai.api_server --model /models/glm-5 -tp 8",
    "VLLM::EngineCore",
    "VLLM::Worker_TP3",
]


@pytest.mark.parametrize("raw", ["", " ", "\t\n", None])
def test_empty_pattern_refused(raw):
    with pytest.raises(InvalidInput, match="empty pattern matches every process"):
        patterns.compile_patterns(["sglang::", raw])


@pytest.mark.parametrize("force_broad", [False, True])
@pytest.mark.parametrize("raw", ["(", "sglang::[", "a{2,1}", "(?P<x>a)(?P<x>b)", "*sglang"])
def test_invalid_regex_refused_even_with_force_broad(raw, force_broad):
    with pytest.raises(InvalidInput, match="not a valid regular expression") as err:
        patterns.compile_patterns([raw], force_broad=force_broad)
    assert repr(raw) in err.value.msg


@pytest.mark.parametrize("raw", [".*", "x*", "a|", "|sglang::", "^", "$", "(sglang::)?", "sglang::|", "(?:)", "z?"])
def test_empty_string_matchers_refused(raw):
    with pytest.raises(InvalidInput, match="matches the empty command line") as err:
        patterns.compile_patterns([raw])
    assert "force_broad" in err.value.msg


@pytest.mark.parametrize("raw, canary", [
    ("python", "/usr/bin/python3 /usr/bin/networkd-dispatcher --run-startup-triggers"),
    ("python3", "/usr/bin/python3 /usr/bin/networkd-dispatcher --run-startup-triggers"),
    ("bash", "-bash"),
    ("sh", "sshd: root@pts/0"),
    ("(?i)PYTHON3 TRAIN", "python3 train.py --epochs 10"),
    ("ipykernel", "/opt/conda/bin/python -m ipykernel_launcher -f /root/kernel.json"),
    ("nvidia", "/usr/bin/nvidia-persistenced --user nvidia-persistenced"),
    ("dcgm", "/usr/bin/nv-hostengine -n --service-account nvidia-dcgm"),
    (r"\s", "sshd: root@pts/0"),
    ("/usr/bin/", "/usr/bin/containerd"),
    ("[a-z]", "/sbin/init"),
])
def test_canary_hits_refused_naming_first_hit(raw, canary):
    with pytest.raises(InvalidInput, match="too broad") as err:
        patterns.compile_patterns([raw])
    assert repr(canary) in err.value.msg
    # the message names the first canary hit, so the fixture's `canary` must be it
    assert [c for c in patterns.CANARY_CMDLINES if re.search(raw, c)][0] == canary


def test_one_broad_pattern_among_good_ones_refuses_all():
    with pytest.raises(InvalidInput, match="'python'"):
        patterns.compile_patterns([r"sglang::", "python", r"VLLM::"])


@pytest.mark.parametrize("raw, hits", [
    (r"sglang::|sglang\.launch_server", SGLANG_TITLES),
    ("|".join(patterns.ENGINE_PATTERNS["sglang"]), SGLANG_TITLES + [SERVE_TITLE]),
    (r"sglang serve", [SERVE_TITLE]),
    (r"sglang::", SGLANG_TITLES[1:]),
    (r"sglang\.launch_server", SGLANG_TITLES[:1]),
    (r"sglang::scheduler_TP\d+$", ["sglang::scheduler_TP0", "sglang::scheduler_TP7"]),
    ("sglang", SGLANG_TITLES + [SERVE_TITLE]),  # seed 2's pkill -f word is specific enough against the canaries
    (r"vllm\.entrypoints|VLLM::", VLLM_TITLES),
    (r"VLLM::(EngineCore|Worker_TP\d+)", VLLM_TITLES[1:]),
])
def test_server_patterns_accepted_and_match_titles(raw, hits):
    (regex,) = patterns.compile_patterns([raw])
    assert regex.pattern == raw
    for title in SGLANG_TITLES + [SERVE_TITLE] + VLLM_TITLES:
        assert patterns.matches_any([regex], title) is (title in hits), title
    assert not any(patterns.matches_any([regex], c) for c in patterns.CANARY_CMDLINES)


@pytest.mark.parametrize("raw", patterns.ENGINE_PATTERNS["sglang"])
def test_each_of_sglang_kill_set_accepted(raw):
    assert [r.pattern for r in patterns.compile_patterns([raw])] == [raw]


def test_order_kept_and_none_or_empty_list_compiles_to_nothing():
    assert [r.pattern for r in patterns.compile_patterns(["b::", "a::"])] == ["b::", "a::"]
    assert patterns.compile_patterns(None) == []
    assert patterns.compile_patterns([]) == []


@pytest.mark.parametrize("raw", [".*", "x*", "a|", "python", "bash", "python3 train"])
def test_force_broad_accepts_broad_patterns(raw):
    (regex,) = patterns.compile_patterns([raw], force_broad=True)
    assert regex.pattern == raw


@pytest.mark.parametrize("raw", ["", "   ", None])
def test_force_broad_still_refuses_empty(raw):
    with pytest.raises(InvalidInput, match="empty pattern"):
        patterns.compile_patterns([raw], force_broad=True)


def test_non_string_pattern_is_compiled_as_text():
    (regex,) = patterns.compile_patterns([12345])
    assert patterns.matches_any([regex], "python3 -m server --port 12345")


@pytest.mark.parametrize("cmdline, expected", [
    ("sglang::scheduler_TP0", True),
    ("python3 -m vllm.entrypoints.openai.api_server", True),
    ("python3 monitor.py", False),
    ("", False),
])
def test_matches_any(cmdline, expected):
    regexes = patterns.compile_patterns([r"sglang::", r"vllm\.entrypoints"])
    assert patterns.matches_any(regexes, cmdline) is expected
    assert patterns.matches_any([], cmdline) is False
