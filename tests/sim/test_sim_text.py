"""The simulators' text models (sim/pypath/_simcore/text.py): prompt tokens against two real
BPE tokenizers' counts, and acceptance by text as the module's docstring defines it."""
import json
import os

import pytest
from _server_fixtures import sim_text as text

with open(os.path.join(os.path.dirname(__file__), "data", "token_samples.json"), encoding="utf-8") as _f:
    SAMPLES = json.load(_f)["samples"]
TOKENIZERS = ("cl100k_base", "o200k_base")


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_prompt_tokens_follow_a_real_bpe_count(tokenizer):
    model = [text.prompt_tokens(s["text"]) for s in SAMPLES]
    real = [s[tokenizer] for s in SAMPLES]
    errors = [abs(m - r) / r for m, r in zip(model, real)]
    assert abs(sum(model) - sum(real)) / sum(real) < 0.03
    english = [e for e, s in zip(errors, SAMPLES) if s["category"] != "translation"]
    assert sum(english) / len(english) < 0.04 and max(english) < 0.12
    # The len/4 rule on the same texts, for scale: far worse on both counts.
    quarter = [abs(len(s["text"]) // 4 - r) / r for s, r in zip(SAMPLES, real)]
    assert sum(quarter) / len(quarter) > 3 * sum(errors) / len(errors)


@pytest.mark.parametrize("sample, expected", [
    ("Hello, world!", 4),  # Hello | , | " world" | !
    ("12345", 2),  # 123 | 45
    ("internationalization", 5),  # 20 letters: 1 + ceil((20 - 10) / 3)
    (" something", 1),  # 9 letters
    ("x = {};\n", 4),  # x | " =" | " {};\n" (3 symbols: 2 tokens)
])
def test_prompt_tokens_by_hand(sample, expected):
    assert text.prompt_tokens(sample) == expected


def test_chat_prompt_adds_the_role_markers():
    contents = ["Hello, world!", "12345"]
    assert text.chat_prompt_tokens(contents) == 4 + 2 + 2 * text.CHAT_TOKENS_PER_MESSAGE


def test_features_by_hand():
    # 7 non-space characters { " a " : 1 }: 5 symbols, 1 digit; no bigram repeats.
    symbols, digits, repetition = text.features('{"a": 1}')
    assert (symbols, digits, repetition) == (pytest.approx(5 / 7), pytest.approx(1 / 7), 0.0)
    # "go go go go": pieces go, go, go, go -> bigrams (go, go) x3, two of them repeats.
    assert text.features("go go go go")[2] == pytest.approx(2 / 3)


@pytest.mark.parametrize("accept, score, expected", [
    (2.5, 0.0, 0.5),  # (2.5 - 1) / 3
    (2.5, 0.2, 0.6),  # + SLOPE * 0.2
    (2.5, 1.0, 0.95),  # capped at P_MAX
    (1.0, 0.0, 0.0),
])
def test_accept_probability_by_hand(accept, score, expected):
    assert text.accept_probability(accept, 4, score) == pytest.approx(expected)


def test_token_ids_accept_the_configured_length():
    assert text.expected_accept_length(2.6, 4, None) == pytest.approx(2.6)


def test_structured_text_accepts_more_than_prose():
    def mean(categories):
        picked = [text.expected_accept_length(2.6, 4, s["text"]) for s in SAMPLES if s["category"] in categories]
        return sum(picked) / len(picked)

    prose, structured = mean({"prose", "creative"}), mean({"code", "json", "markdown"})
    assert prose == pytest.approx(2.6, abs=0.05)
    assert structured > prose + 0.4
