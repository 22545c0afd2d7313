# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Workload files: every format read from a file the test writes, multi-turn items, the
seed's order (checked against SGLang 0.5.23's and vLLM 0.33.0's own loaders, run here on the
same file),
and every bad input's message (file, line or JSON path, field)."""

from __future__ import annotations

import abc
import ast
import dataclasses
import importlib.util
import json
import logging
import os
import random
import socket
import sys
import threading
import types
import typing

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.client import Conversation
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload import formats
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.formats import load_file
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.items import WorkloadError
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.sample import choose, load_workload
from tests.support.real_sources import sources, vllm_sources


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _sharegpt_rows(n):
    rows = []
    for i in range(n):
        turns = [{"from": "human", "value": "question %d asks about item %d" % (i, i * 7)},
                 {"from": "gpt", "value": "answer %d " % i + "word " * (i % 5 + 1)}]
        rows.append({"id": "c%d" % i, "conversations": turns if i % 9 else turns[:1]})  # every 9th is too short
    return rows


def _prompts(items):
    return [item.messages[-1]["content"] for item in items]


# --------------------------------------------------------------------------- formats
def test_sharegpt_takes_turn_zero_skips_short_conversations_and_estimates_the_answer(tmp_path):
    path = tmp_path / "sg.json"
    rows = _sharegpt_rows(20)
    path.write_text(json.dumps(rows))
    source = load_file(str(path))
    assert source.format == "sharegpt"
    items, available = choose(source, seed=3)
    assert available == len([r for r in rows if len(r["conversations"]) >= 2]) == 17
    expected = [r for r in rows if len(r["conversations"]) >= 2]
    random.Random(3).shuffle(expected)
    assert _prompts(items) == [r["conversations"][0]["value"] for r in expected]
    answer = expected[0]["conversations"][1]["value"]
    assert items[0].output_len == (len(answer.encode()) + 3) // 4 and items[0].estimated
    assert items[0].ref == "%s [%d]" % (path, rows.index(expected[0]))


def test_jsonl_prompt_messages_turns_with_categories_and_lengths(tmp_path):
    path = _jsonl(tmp_path / "w.jsonl", [
        {"prompt": "plain text", "category": "a", "output_len": 12},
        {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}], "category": "b"},
        {"turns": ["one", "two", "three"], "category": "a", "output_tokens": 7},
    ])
    source = load_file(path)
    assert source.format == "jsonl"
    items, unused = choose(source, seed=0)
    by_cat = sorted((i.category, i.turns, i.output_len, i.text) for i in items)
    assert by_cat == [("a", 1, 12, "plain text"), ("a", 3, 7, None), ("b", 1, None, None)]


def test_mtbench_questions_are_multi_turn(tmp_path):
    path = _jsonl(tmp_path / "question.jsonl", [
        {"question_id": 81, "category": "writing", "turns": ["Write a note.", "Rewrite it shorter."]},
        {"question_id": 82, "category": "math", "turns": ["Add 2 and 3.", "Now double it."]},
    ])
    source = load_file(path)
    assert source.format == "mtbench"
    items, unused = choose(source, seed=1, categories=["math"])
    assert [(i.category, i.messages, i.followups) for i in items] == [
        ("math", [{"role": "user", "content": "Add 2 and 3."}], ("Now double it.",))]


def test_openai_lines_keep_file_order_max_tokens_and_extra_fields(tmp_path):
    path = _jsonl(tmp_path / "oa.jsonl", [
        {"messages": [{"role": "user", "content": "first"}], "max_tokens": 40, "top_p": 0.9, "model": "x"},
        {"messages": []},
        {"messages": [{"role": "user", "content": "second"}], "tools": [{"type": "function"}]},
    ])
    source = load_file(path)
    assert source.format == "openai"
    items, available = choose(source, seed=5)
    assert available == 2 and _prompts(items) == ["first", "second"]  # no shuffle, empty messages skipped
    assert [i.output_len for i in items] == [40, 256]
    assert items[0].extra == {"top_p": 0.9} and items[1].extra == {"tools": [{"type": "function"}]}
    body = json.loads(Conversation(items[0], "chat", "m", 16, 0.0, True).first())
    assert body["top_p"] == 0.9 and body["max_tokens"] == 16 and body["model"] == "m"


def test_vllm_custom_needs_prompt_and_shuffles_every_line(tmp_path):
    rows = [{"prompt": "p%d" % i, "output_tokens": 10 + i} for i in range(12)]
    path = _jsonl(tmp_path / "v.jsonl", rows)
    items, unused = choose(load_file(path, "vllm-custom"), seed=0)
    expected = list(rows)
    random.Random(0).shuffle(expected)  # datasets.py CustomDataset: random.seed(seed); random.shuffle(data)
    assert [(i.text, i.output_len) for i in items] == [(r["prompt"], r["output_tokens"]) for r in expected]
    bad = _jsonl(tmp_path / "bad.jsonl", [{"messages": [{"role": "user", "content": "x"}]}])
    with pytest.raises(WorkloadError, match=r"bad.jsonl line 1: a vllm-custom line needs `prompt`"):
        choose(load_file(bad, "vllm-custom"), seed=0)


def test_second_turn_request_carries_the_first_answer():
    item = load_workload({"source": "builtin", "categories": ["math"]}, 0).items
    item = next(i for i in item if i.followups)
    conv = Conversation(item, "chat", "m", 8, 0.0, True)
    first = json.loads(conv.first())
    second = json.loads(conv.next(1, "ANSWER"))
    assert first["messages"] == item.messages
    assert second["messages"] == item.messages + [{"role": "assistant", "content": "ANSWER"},
                                                  {"role": "user", "content": item.followups[0]}]


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("name, content, fmt, message", [
    ("latin1.jsonl", b'{"prompt": "ok"}\n{"prompt": "caf\xe9"}\n', "auto",
     r"latin1.jsonl line 2: not UTF-8 \(byte 0xe9 at offset 32\)"),
    ("broken.json", b'[{"conversations": [\n  {"from": "human", "value": "x"},,\n]}]', "sharegpt",
     r"broken.json line 2 column 35: malformed JSON"),
    ("broken.jsonl", b'{"prompt": "a"}\n{"prompt": \n', "jsonl", r"broken.jsonl line 2: malformed JSON"),
    ("empty.jsonl", b"\n\n", "auto", r"empty.jsonl: the file is empty: no items"),
    ("neither.jsonl", b'{"prompt": "a"}\n{"category": "x", "text": "b"}\n', "jsonl",
     r"neither.jsonl line 2: the item has neither `prompt`, `messages` nor `turns`"),
    ("roles.jsonl", b'{"messages": [{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}]}\n', "jsonl",
     r"roles.jsonl line 1.messages\[1\].role: unknown role 'bot' \(use one of system, developer, user"),
    ("noturns.json", b'[{"conversations": [{"from": "human"}, {"from": "gpt", "value": "b"}]}]', "auto",
     r"noturns.json \[0\].conversations\[0\]: a turn has no `value`"),
    ("short.json", b'[{"conversations": [{"from": "human", "value": "only one"}]}]', "auto",
     r"short.json: no items: the dataset is empty"),
])
def test_bad_input_names_file_line_and_field(tmp_path, name, content, fmt, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(WorkloadError, match=message):
        load_workload({"source": "file", "path": str(path), "format": fmt}, 0)


def test_missing_file_and_unmatched_categories(tmp_path):
    with pytest.raises(WorkloadError, match=r"workload .*nope.jsonl: file not found on the host"):
        load_workload({"source": "file", "path": str(tmp_path / "nope.jsonl")}, 0)
    with pytest.raises(WorkloadError, match=r"categories \['poetry'\] match no item; the items' categories are: "
                                            r"chat \(10\), code \(10\), creative \(10\)"):
        load_workload({"source": "builtin", "categories": ["poetry"]}, 0)


# --------------------------------------------------------------------------- the real loaders
def _load_sglang_dataset_module(monkeypatch, name):
    """sglang/benchmark/datasets/NAME.py from the 0.5.23 sources, with what it imports beside the
    loader (transformers, the HF download helper) stubbed: the loader's own code runs as shipped."""
    root, unused = sources("sglang")
    for pkg in ("sglang", "sglang.benchmark", "sglang.benchmark.datasets"):
        mod = types.ModuleType(pkg)
        mod.__path__ = []
        monkeypatch.setitem(sys.modules, pkg, mod)
    transformers = types.ModuleType("transformers")
    transformers.PreTrainedTokenizerBase = object
    monkeypatch.setitem(sys.modules, "transformers", transformers)
    utils = types.ModuleType("sglang.benchmark.utils")
    utils.remove_suffix = lambda text, suffix: text[:-len(suffix)] if suffix and text.endswith(suffix) else text
    utils.is_file_valid_json = lambda path: True
    utils.download_and_cache_hf_file = None
    monkeypatch.setitem(sys.modules, "sglang.benchmark.utils", utils)
    for mod_name in ("common", name):
        full = "sglang.benchmark.datasets." + mod_name
        spec = importlib.util.spec_from_file_location(full, str(root / "benchmark" / "datasets" / (mod_name + ".py")))
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, full, module)
        spec.loader.exec_module(module)
    return sys.modules["sglang.benchmark.datasets." + name]


class _WordTokenizer:
    """Enough of a tokenizer for the loaders' length checks: one token a word."""

    bos_token = None

    def encode(self, text):
        return text.split()


@pytest.mark.parametrize("fmt", ["sharegpt", "custom"])
def test_same_prompts_in_the_same_order_as_sglang_bench_serving(tmp_path, monkeypatch, fmt):
    pytest.importorskip("numpy")
    rows = _sharegpt_rows(40)
    if fmt == "sharegpt":
        path = tmp_path / "sg.json"
        path.write_text(json.dumps(rows))
        ours_format = "sharegpt"
    else:  # sglang's custom JSONL reads `content` (or `value`) of `conversations`
        rows = [{"conversations": [{"role": "user" if n == 0 else "assistant", "content": t["value"]}
                                   for n, t in enumerate(r["conversations"])]} for r in rows]
        path = tmp_path / "custom.jsonl"
        _jsonl(path, rows)
        ours_format = "sglang-custom"
    module = _load_sglang_dataset_module(monkeypatch, fmt)
    seed, n = 42, 25
    random.seed(seed)  # sglang/benchmark/serving.py: random.seed(args.seed) before loading
    sample = module.sample_sharegpt_requests if fmt == "sharegpt" else module.sample_custom_requests
    theirs = sample(dataset_path=str(path), num_requests=n, tokenizer=_WordTokenizer())
    ours = load_workload({"source": "file", "path": str(path), "sample": n, "format": ours_format}, seed)
    assert _prompts(ours.items) == [row.prompt for row in theirs]
    assert len(theirs) == n


def test_openai_lines_match_sglang_bench_serving(tmp_path, monkeypatch):
    pytest.importorskip("numpy")
    rows = [{"messages": [{"role": "user", "content": "q%d" % i}], "max_tokens": 10 + i, "temperature": 0.5}
            for i in range(6)]
    path = _jsonl(tmp_path / "oa.jsonl", rows)
    module = _load_sglang_dataset_module(monkeypatch, "openai_dataset")

    class Tok(_WordTokenizer):
        def apply_chat_template(self, messages, **kw):
            return [m["content"] for m in messages]

    theirs = module.sample_openai_requests(dataset_path=path, num_requests=4, tokenizer=Tok())
    ours = load_workload({"source": "file", "path": path, "sample": 4}, 0)
    assert [i.messages for i in ours.items] == [row.prompt for row in theirs]
    assert [i.output_len for i in ours.items] == [row.output_len for row in theirs]
    assert [i.extra for i in ours.items] == [row.extra_request_body for row in theirs]


def _vllm_dataset_classes(monkeypatch):
    """vLLM 0.33.0's SampleRequest, BenchmarkDataset, is_valid_sequence, ShareGPTDataset and
    CustomDataset, their source compiled from vllm/benchmarks/datasets/datasets.py as shipped.
    The module itself imports vLLM, PIL and pandas; only these definitions are taken, with the
    names they use: pandas' read_json(lines=True) is stood in for by a reader of JSON lines."""
    root = vllm_sources()
    tree = ast.parse((root / "benchmarks" / "datasets" / "datasets.py").read_text())
    wanted = {"SampleRequest", "BenchmarkDataset", "is_valid_sequence", "ShareGPTDataset", "CustomDataset"}
    body = [node for node in tree.body if getattr(node, "name", None) in wanted]
    assert {node.name for node in body} == wanted

    class Frame:
        def __init__(self, rows):
            self.rows = rows
            self.columns = sorted({key for row in rows for key in row})

        def iterrows(self):
            for n, row in enumerate(self.rows):
                yield n, types.SimpleNamespace(to_dict=lambda row=row: dict(row))

    def read_json(path_or_buf, lines):
        assert lines
        with open(path_or_buf) as f:
            return Frame([json.loads(line) for line in f if line.strip()])

    namespace = {
        "ABC": abc.ABC, "abstractmethod": abc.abstractmethod, "dataclass": dataclasses.dataclass,
        "replace": dataclasses.replace, "Any": typing.Any, "cast": typing.cast, "json": json, "random": random,
        "logger": logging.getLogger("vllm-datasets"), "MultiModalDataDict": dict, "LoRARequest": object,
        "TokenizerLike": object, "pd": types.SimpleNamespace(read_json=read_json),
    }
    module = types.ModuleType("vllm_datasets_under_test")  # dataclasses look their module up
    module.__dict__.update(namespace)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    source = compile(ast.Module(body=body, type_ignores=[]), "vllm/benchmarks/datasets/datasets.py", "exec")
    # The wheel's own code, read above.
    exec(source, module.__dict__)  # pylint: disable=exec-used
    return module.__dict__


class _CallableWordTokenizer:
    def __call__(self, text):
        return types.SimpleNamespace(input_ids=text.split())


@pytest.mark.parametrize("fmt", ["sharegpt", "vllm-custom"])
def test_same_prompts_in_the_same_order_as_vllm_bench_serve(tmp_path, monkeypatch, fmt):
    classes = _vllm_dataset_classes(monkeypatch)
    seed, n = 0, 25
    if fmt == "sharegpt":
        path = tmp_path / "sg.json"
        path.write_text(json.dumps(_sharegpt_rows(40)))
        dataset = classes["ShareGPTDataset"](dataset_path=str(path), random_seed=seed)
        theirs = dataset.sample(_CallableWordTokenizer(), n, output_len=16)
    else:
        path = tmp_path / "custom.jsonl"
        _jsonl(path, [{"prompt": "custom prompt number %d" % i, "output_tokens": 5 + i} for i in range(40)])
        dataset = classes["CustomDataset"](dataset_path=str(path), random_seed=seed)
        theirs = dataset.sample(_CallableWordTokenizer(), n, skip_chat_template=True)
    ours = load_workload({"source": "file", "path": str(path), "sample": n, "format": fmt}, seed)
    assert _prompts(ours.items) == [row.prompt for row in theirs]
    if fmt == "vllm-custom":
        assert [i.output_len for i in ours.items] == [row.expected_output_len for row in theirs]


# --- bounds: only regular files, sizes, line lengths, a read deadline, lone surrogates ---

def load(path, fmt="auto"):
    return load_workload({"source": "file", "path": str(path), "format": fmt}, 1)


def refused_within(seconds, path):
    """The message loading PATH is refused with; fails if it took longer than SECONDS (or blocked)."""
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(pytest.raises(WorkloadError, load, path)), daemon=True)
    reader.start()
    reader.join(seconds)
    assert not reader.is_alive(), "reading %s blocked" % path
    assert outcome, "no WorkloadError"
    return outcome[0].value.msg


def test_a_device_is_refused_not_read():
    assert "workload /dev/zero: not a regular file" in refused_within(5, "/dev/zero")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "w.jsonl"
    os.mkfifo(fifo)
    try:
        assert "not a regular file" in refused_within(5, fifo)
    finally:  # a reader still blocked in open() gets its writer, so the run ends
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "w.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        assert "not a regular file" in refused_within(5, path)


def test_a_file_over_the_size_bound_is_refused_unread(tmp_path, monkeypatch):
    path = tmp_path / "w.jsonl"
    path.write_text('{"prompt": "hello"}\n' * 10)
    monkeypatch.setattr(formats, "MAX_BYTES", 100)
    assert "%d bytes, more than 100" % path.stat().st_size in refused_within(5, path)


def test_a_line_over_the_length_bound_names_its_line(tmp_path, monkeypatch):
    path = tmp_path / "w.jsonl"
    path.write_text('{"prompt": "hello"}\n{"prompt": "%s"}\n' % ("x" * 200))
    monkeypatch.setattr(formats, "MAX_LINE_BYTES", 100)
    assert "workload %s line 2: a line of 214 characters, more than 100" % path in refused_within(5, path)
    path.write_text('{"prompt": "%s"}\n' % ("x" * 200))  # the first line, read to tell the format
    assert "workload %s line 1: a line of" % path in refused_within(5, path)


def test_a_read_past_the_deadline_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "w.jsonl"
    path.write_text('{"prompt": "hello"}\n')
    monkeypatch.setattr(formats, "READ_SECONDS", -1.0)
    assert "reading took more than" in refused_within(5, path)


@pytest.mark.parametrize("rows, fmt, where", [
    ([{"prompt": "ok"}, {"prompt": "bad \ud800 text"}], "jsonl", "line 2.prompt"),
    ([{"prompt": "ok", "category": "c\udfff"}], "jsonl", "line 1.category"),
    ([{"messages": [{"role": "user", "content": "x\ud83d"}], "max_tokens": 4}], "openai", "line 1.messages[0].content"),
    ([{"conversations": [{"value": "q"}, {"value": "a"}]},
      {"conversations": [{"value": "q"}, {"value": "\udc00"}]}], "sharegpt", "[1].conversations[1].value"),
])
def test_a_lone_surrogate_is_refused_naming_file_line_and_field(tmp_path, rows, fmt, where):
    path = tmp_path / "w.json"
    text = json.dumps(rows) if fmt == "sharegpt" else "".join(json.dumps(r) + "\n" for r in rows)
    assert "\\ud" in text  # written as JSON escapes, as a careless converter writes them
    path.write_text(text)
    with pytest.raises(WorkloadError) as info:
        load(path, fmt)
    assert "workload %s %s: holds a lone surrogate" % (path, where) in info.value.msg, info.value.msg


def test_a_paired_surrogate_escape_is_one_character(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text('{"prompt": "smile \\ud83d\\ude00"}\n')
    assert load(path, "jsonl").items[0].messages[0]["content"] == "smile \U0001f600"


def test_the_controller_refuses_a_device_before_copying_it():
    assert formats.regular_file_problem(os.stat("/dev/zero")).startswith("not a regular file")
