# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Workload files in the formats users bring, read the way the tools that define them read them.

A loader returns a `Source`: the file's raw entries (parsed once, not yet turned into
Items), which of them are candidates, whether the order is shuffled with the seed, and
a function that turns one entry into an Item (or None when the tools would skip it).
Entries become Items only when sampled, so a 100,000-item file costs about one json
parse. The rules, with the file each follows:

- sharegpt: a JSON list; entries with at least two turns in `conversations`
  (`conversation` also, as SGLang) are candidates; they are shuffled with
  `random.seed(seed); random.shuffle(...)`; the prompt is turn 0's `value` and the
  reference answer turn 1's, whatever their `from` (vllm/benchmarks/datasets/datasets.py
  ShareGPTDataset.load_data and sample; sglang/benchmark/datasets/sharegpt.py
  sample_sharegpt_requests, seeded by random.seed(args.seed) in sglang/benchmark/serving.py).
- sglang-custom: JSONL; `conversations` (or `conversation`) of at least two turns, text in
  `content` or else `value`; shuffled the same way (sglang/benchmark/datasets/custom.py).
- vllm-custom: JSONL with a `prompt` on every line and an optional `output_tokens`;
  every line shuffled the same way (datasets.py CustomDataset.load_data and sample).
- openai: JSONL of chat requests, `messages` sent as given, `max_tokens` the reference
  output length (256 when absent), the other fields passed through; the first lines in
  file order, not shuffled; lines without messages skipped
  (sglang/benchmark/datasets/openai_dataset.py sample_openai_requests).
- mtbench: MT-Bench's question.jsonl (`question_id`, `category`, `turns`): every turn is
  sent, later ones after the model's answers; shuffled like vllm-custom.
- jsonl: this collection's format; one object a line with `prompt` (text), `messages`
  (chat history ending in a user turn) or `turns` (user turns of one conversation), and
  optional `category`, `output_len` (or `output_tokens`) and `id`; shuffled like vllm-custom.

The tools' token-length pruning (vLLM: prompt under 4 or over 1024 tokens, prompt plus
output over 2048; SGLang: under 2 tokens or over --sharegpt-context-len) needs the model's
tokenizer, which the host does not have: here only empty prompts and answers are skipped,
so a file whose items all pass those bounds gives the same prompts, in the same order,
in all three tools.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from typing import Any, Callable

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.items import ROLES, Item, WorkloadError

FORMATS = ("auto", "sharegpt", "jsonl", "mtbench", "sglang-custom", "vllm-custom", "openai")

# Fields of an openai-format line that are not passed through (openai_dataset.py EXCLUDED_FIELDS),
# plus the streaming fields this client sets itself.
_OPENAI_EXCLUDED = frozenset(("messages", "max_tokens", "max_completion_tokens", "model", "stream", "stream_options"))
# bench_serving's default output length for an openai-format line without max_tokens.
OPENAI_DEFAULT_MAX_TOKENS = 256
# Bounds of a workload file, which may come from anyone: the largest common dataset
# (ShareGPT_V3_unfiltered_cleaned_split.json) is 642 MiB; one JSONL line holds one item, and a
# prompt of a million tokens is about 4 MiB; reading stops after READ_SECONDS (a hung mount).
MAX_BYTES = 1024 ** 3
MAX_LINE_BYTES = 16 * 1024 ** 2
READ_SECONDS = 300.0
_CHUNK = 1024 ** 2
# A lone surrogate: valid in a JSON escape (\ud800), not encodable as UTF-8 when sent or written.
_SURROGATE = re.compile("[\ud800-\udfff]")


class Source:
    """The raw entries of a file, which are candidates, and how to turn one into an Item."""

    def __init__(self, fmt: str, entries: list, candidates: list, convert: Callable, shuffled: bool = True) -> None:
        self.format = fmt
        self.entries = entries
        self.candidates = candidates   # indices into entries, in file order
        self.convert = convert         # (index) -> Item or None (skipped as the tools skip it)
        self.shuffled = shuffled
        self.sha256 = None

    def category(self, index: int) -> str | None:
        entry = self.entries[index]
        value = entry.get("category") if isinstance(entry, dict) else None
        return None if value is None else str(value)


def estimate_tokens(text: str) -> int:
    """A reference answer's length without a tokenizer: one token per 4 UTF-8 bytes, at least 1."""
    return max(1, (len(text.encode("utf-8")) + 3) // 4)


# --------------------------------------------------------------------------- reading
def regular_file_problem(info: os.stat_result) -> str | None:
    """Why a file of this stat cannot be a workload (a device, FIFO or socket, or too large), or None."""
    if not stat.S_ISREG(info.st_mode):
        return ("not a regular file (a device, FIFO, socket or directory: /dev/zero never ends and a FIFO "
                "blocks); give the path of a dataset file")
    if info.st_size > MAX_BYTES:
        return "%d bytes, more than %d: take a sample of the dataset into a smaller file" % (info.st_size, MAX_BYTES)
    return None


def _read_bounded(path: str) -> bytes:
    """The bytes of PATH: a regular file within MAX_BYTES, read within READ_SECONDS."""
    problem = regular_file_problem(os.stat(path))  # a socket cannot be opened at all
    if problem:
        raise WorkloadError(path, problem)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        problem = regular_file_problem(os.fstat(fd))
        if problem:
            raise WorkloadError(path, problem)
        deadline, chunks, size = time.monotonic() + READ_SECONDS, [], 0
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > MAX_BYTES:
                raise WorkloadError(path, "grew past %d bytes while read" % MAX_BYTES)
            if time.monotonic() > deadline:
                raise WorkloadError(path, "reading took more than %d s (%d bytes read): copy the file to a "
                                          "local disk" % (READ_SECONDS, size))
            chunks.append(chunk)
    finally:
        os.close(fd)


def surrogate_field(value: Any, field: str = "") -> str | None:
    """The field path ('.messages[0].content') of the first text or key of VALUE holding a lone
    surrogate, or None."""
    if isinstance(value, str):
        return field or "(the item)" if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            sub = "%s.%s" % (field, key)
            if isinstance(key, str) and _SURROGATE.search(key):
                return sub
            found = surrogate_field(item, sub)
            if found:
                return found
    elif isinstance(value, list):
        for n, item in enumerate(value):
            found = surrogate_field(item, "%s[%d]" % (field, n))
            if found:
                return found
    return None


def _refuse_surrogates(where: str, value: Any) -> None:
    field = surrogate_field(value)
    if field:
        raise WorkloadError(where + ("" if field == "(the item)" else field),
                            "holds a lone surrogate (an escape \\ud800-\\udfff without its pair), which is not "
                            "valid Unicode and cannot be sent: fix or remove that text")


def read_text(path: str) -> tuple:
    """(the file as text, its sha256), or a WorkloadError naming the file (and the line of a bad byte)."""
    try:
        raw = _read_bounded(path)
    except FileNotFoundError:
        raise WorkloadError(path, "file not found on the host (set workload.location: controller "
                                  "to send a file from the controller)")
    except OSError as exc:
        raise WorkloadError(path, "cannot read: %s" % exc)
    try:
        return raw.decode("utf-8"), hashlib.sha256(raw).hexdigest()
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise WorkloadError("%s line %d" % (path, line),
                            "not UTF-8 (byte 0x%02x at offset %d): save the file as UTF-8"
                            % (raw[exc.start], exc.start))


def parse_json(path: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        line, col = getattr(exc, "lineno", "?"), getattr(exc, "colno", "?")
        raise WorkloadError("%s line %s column %s" % (path, line, col), "malformed JSON: %s" % getattr(exc, "msg", exc))


def parse_jsonl(path: str, text: str) -> tuple:
    """([object of each non-empty line], [its line number]); a bad line is an error naming it."""
    objs, lines = [], []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            raise WorkloadError("%s line %d" % (path, number), "a line of %d characters, more than %d: one line "
                                "holds one item" % (len(line), MAX_LINE_BYTES))
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise WorkloadError("%s line %d" % (path, number), "malformed JSON: %s" % getattr(exc, "msg", exc))
        if not isinstance(obj, dict):
            raise WorkloadError("%s line %d" % (path, number), "a line must be a JSON object, got %s"
                                % type(obj).__name__)
        _refuse_surrogates("%s line %d" % (path, number), obj)
        objs.append(obj)
        lines.append(number)
    return objs, lines


def detect(path: str, text: str) -> str:
    """The format of a file from its content (format: auto)."""
    head = text.lstrip("\ufeff \t\r\n")[:1]
    if head == "[":
        data = parse_json(path, text)
        first = next((e for e in data if isinstance(e, dict)), {}) if isinstance(data, list) else {}
        if "conversations" in first or "conversation" in first:
            return "sharegpt"
        raise WorkloadError(path, "a JSON list whose items have no `conversations`: set workload.format "
                                  "(one of %s)" % ", ".join(FORMATS[1:]))
    for line in text.split("\n"):
        if line.strip():
            if len(line) > MAX_LINE_BYTES:
                return "jsonl"  # whose reader refuses the line, naming it
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise WorkloadError("%s line %d" % (path, text[:text.index(line)].count("\n") + 1),
                                    "malformed JSON: %s" % getattr(exc, "msg", exc))
            if not isinstance(obj, dict):
                break
            if "question_id" in obj and "turns" in obj:
                return "mtbench"
            if "conversations" in obj or "conversation" in obj:
                return "sglang-custom"
            if "messages" in obj and ("max_tokens" in obj or "tools" in obj):
                return "openai"
            return "jsonl"
    if not text.strip():
        raise WorkloadError(path, "the file is empty: no items")
    raise WorkloadError(path, "cannot tell the format: set workload.format (one of %s)" % ", ".join(FORMATS[1:]))


# --------------------------------------------------------------------------- formats
def _turn_text(path, where, turn, keys):
    if not isinstance(turn, dict):
        raise WorkloadError("%s %s" % (path, where), "a turn must be an object with %s" % " or ".join(keys))
    for key in keys:
        if key in turn:
            value = turn[key]
            if not isinstance(value, str):
                raise WorkloadError("%s %s.%s" % (path, where, key), "must be text, got %s" % type(value).__name__)
            return value
    raise WorkloadError("%s %s" % (path, where), "a turn has no %s" % " or ".join("`%s`" % k for k in keys))


def _conversation(entry):
    convs = entry.get("conversations", entry.get("conversation", [])) if isinstance(entry, dict) else []
    return convs if isinstance(convs, list) else []


def _first_two(path, where, entry, keys, key_name):
    convs = _conversation(entry)
    prompt = _turn_text(path, "%s.%s[0]" % (where, key_name), convs[0], keys)
    answer = _turn_text(path, "%s.%s[1]" % (where, key_name), convs[1], keys)
    return prompt, answer


def _two_turn_item(path, where, entry, keys, key_name):
    prompt, answer = _first_two(path, where, entry, keys, key_name)
    if not prompt.strip() or not answer.strip():
        return None  # the tools prune these as too short
    category = entry.get("category")
    return Item(where, None if category is None else str(category), [{"role": "user", "content": prompt}],
                output_len=estimate_tokens(answer), estimated=True)


def load_sharegpt(path: str, text: str) -> Source:
    data = parse_json(path, text)
    if not isinstance(data, list):
        raise WorkloadError(path, "ShareGPT is a JSON list of conversations, got %s" % type(data).__name__)
    for i, entry in enumerate(data):
        _refuse_surrogates("%s [%d]" % (path, i), entry)
    candidates = [i for i, e in enumerate(data) if len(_conversation(e)) >= 2]

    def convert(i):
        key = "conversations" if "conversations" in data[i] else "conversation"
        return _two_turn_item(path, "%s [%d]" % (path, i), data[i], ("value",), key)
    return Source("sharegpt", data, candidates, convert)


def load_sglang_custom(path: str, text: str) -> Source:
    objs, lines = parse_jsonl(path, text)
    candidates = [i for i, e in enumerate(objs) if len(_conversation(e)) >= 2]

    def convert(i):
        key = "conversations" if "conversations" in objs[i] else "conversation"
        return _two_turn_item(path, "%s line %d" % (path, lines[i]), objs[i], ("content", "value"), key)
    return Source("sglang-custom", objs, candidates, convert)


def _check_messages(where, messages):
    if not isinstance(messages, list) or not messages:
        raise WorkloadError(where + ".messages", "must be a non-empty list of {role, content}")
    for n, m in enumerate(messages):
        if not isinstance(m, dict):
            raise WorkloadError("%s.messages[%d]" % (where, n), "must be an object with role and content")
        role = m.get("role")
        if role not in ROLES:
            raise WorkloadError("%s.messages[%d].role" % (where, n),
                                "unknown role %r (use one of %s)" % (role, ", ".join(ROLES)))
    return messages


def _length(where, field, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value < 1:
        raise WorkloadError("%s.%s" % (where, field), "must be a whole number >= 1, got %r" % (value,))
    return int(value)


def _text(where, field, value):
    if not isinstance(value, str):
        raise WorkloadError("%s.%s" % (where, field), "must be text, got %s" % type(value).__name__)
    return value


def _jsonl_item(where, obj):
    category = obj.get("category")
    category = None if category is None else str(category)
    out_len = None
    for field in ("output_len", "output_tokens"):
        if obj.get(field) is not None:
            out_len = _length(where, field, obj[field])
            break
    if "messages" in obj:
        messages = _check_messages(where, obj["messages"])
        if messages[-1].get("role") != "user":
            raise WorkloadError("%s.messages[%d].role" % (where, len(messages) - 1),
                                "the last message must be the user's (the model answers it)")
        return Item(where, category, messages, output_len=out_len)
    if "turns" in obj:
        turns = obj["turns"]
        if not isinstance(turns, list) or not turns:
            raise WorkloadError(where + ".turns", "must be a non-empty list of texts")
        texts = [_text(where, "turns[%d]" % n, t) for n, t in enumerate(turns)]
        return Item(where, category, [{"role": "user", "content": texts[0]}], texts[1:], output_len=out_len)
    if "prompt" in obj:
        return Item(where, category, [{"role": "user", "content": _text(where, "prompt", obj["prompt"])}],
                    output_len=out_len)
    raise WorkloadError(where, "the item has neither `prompt`, `messages` nor `turns`")


def load_jsonl(path: str, text: str, fmt: str = "jsonl") -> Source:
    objs, lines = parse_jsonl(path, text)

    def convert(i):
        where = "%s line %d" % (path, lines[i])
        if fmt == "vllm-custom" and "prompt" not in objs[i]:
            raise WorkloadError(where, "a vllm-custom line needs `prompt` (datasets.py CustomDataset)")
        if fmt == "mtbench" and "turns" not in objs[i]:
            raise WorkloadError(where, "an MT-Bench question needs `turns`")
        return _jsonl_item(where, objs[i])
    return Source(fmt, objs, list(range(len(objs))), convert)


def load_openai(path: str, text: str) -> Source:
    objs, lines = parse_jsonl(path, text)
    candidates = [i for i, e in enumerate(objs) if e.get("messages")]

    def convert(i):
        where = "%s line %d" % (path, lines[i])
        obj = objs[i]
        messages = _check_messages(where, obj["messages"])
        max_tokens = obj.get("max_tokens")
        out_len = OPENAI_DEFAULT_MAX_TOKENS if max_tokens is None else _length(where, "max_tokens", max_tokens)
        extra = {k: v for k, v in obj.items() if k not in _OPENAI_EXCLUDED and k != "category"}
        category = obj.get("category")
        return Item(where, None if category is None else str(category), messages, output_len=out_len,
                    extra=extra or None)
    return Source("openai", objs, candidates, convert, shuffled=False)


def load_file(path: str, fmt: str = "auto") -> Source:
    """The Source of a workload file on this host."""
    path = os.path.expanduser(path)
    text, sha = read_text(path)
    if not text.strip():
        raise WorkloadError(path, "the file is empty: no items")
    if fmt == "auto":
        fmt = detect(path, text)
    if fmt == "sharegpt":
        source = load_sharegpt(path, text)
    elif fmt == "sglang-custom":
        source = load_sglang_custom(path, text)
    elif fmt == "openai":
        source = load_openai(path, text)
    elif fmt in ("jsonl", "vllm-custom", "mtbench"):
        source = load_jsonl(path, text, fmt)
    else:
        raise WorkloadError(path, "unknown format %r (use one of %s)" % (fmt, ", ".join(FORMATS)))
    source.sha256 = sha
    return source
