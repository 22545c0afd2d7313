# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/bad-inputs.md quotes the messages the code raises: each quoted message of a refused
input is one the code can produce, word for word.

The code's messages are read without running it: every string constant of plugins/ and sim/
(Python, read with ast; adjacent literals, `+`, f-strings and %-formats joined, each value
standing for "anything") and every string of roles/ (YAML, with each Jinja expression standing
for "anything" between its own literals). A quoted message matches when its words appear in one
of them in order, where the doc's own stand-ins (`...`, a number, a quoted or bracketed value,
an upper-case placeholder such as N or UUID, a value from the row's input) may be anything.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "bad-inputs.md"
ANY = "\x00"  # a value the code fills in

# The sections whose rows quote the code's own message for a refused input.
SECTIONS = re.compile(r"^## (Refused inputs|Promises under attack)")
# Words in a quoted message that are not the collection's (each a stand-in for the part the code
# takes from elsewhere): Python's re error, the OS's strerror, and Ansible's argument validation
# (ansible.module_utils.common.parameters and validation: mutually exclusive, missing, choices,
# unsupported parameters), which the sim_fleet role's argument_specs run.
FOREIGN = ["missing ), unterminated subpattern at position 0", "Not a directory", "mutually exclusive",
           "kind is gpu_held but all of the following are missing: gpu, mib", "value of", "must be one of:", "got:",
           "Supported parameters include:"]
# A quoted span shorter than this many words is a value or a field name, not a message.
MIN_WORDS = 4
# How much of a quoted phrase the code must spell out itself (the rest may be its values): this
# share of its characters, or this many.
LITERAL, LITERAL_CHARS = 0.3, 30
PLACEHOLDER = r"\b(?:N|K|P|U|UUID|DIR|PY|COMMAND|TITLE)\b|/PATH(?:/TO)?/\S+"
# Values written in a message: numbers, quoted or bracketed values, option and field names
# (snake_case), class names (CamelCase), names with a number (eagle3) and process titles (a::b).
VALUES = [r"\.\.\.", r"(?<!\w)'[^']*'(?!\w)", r"\[[^\]]*\]", r"(?<![\w.])\d+(?:\.(?:\d+|x+))?(?!\w)", r"\S+::\S+",
          r"\b[a-z0-9]+(?:_[a-z0-9]+)+(?:\.[a-z]+)?\b", r"\b[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+\b", r"\b[a-z]+\d+\b"]


def _template(node):
    """The text of a string expression with each value as ANY, or None when it is no string."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else ANY for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        left = _template(node.left)
        if left is None:
            return None
        if isinstance(node.op, ast.Mod):
            return re.sub(r"%[-+ #0]*\d*(?:\.\d+)?[sdfrxi]", ANY, left)
        return left + (_template(node.right) or ANY)
    return None


def _built_up(tree):
    """Messages a function builds up in one variable (`text = "..."`, then `text += "..."`), joined."""
    out = []
    for func in ast.walk(tree):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parts = {}
            for node in ast.walk(func):
                if isinstance(node, (ast.Assign, ast.AugAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    text = _template(node.value)
                    for target in targets:
                        if isinstance(target, ast.Name) and text:
                            parts.setdefault(target.id, []).append(text)
            out.extend("".join(p) for p in parts.values() if len(p) > 1)
    return out


def _python_messages(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [t for t in (_template(n) for n in ast.walk(tree)) if t] + _built_up(tree)


def _yaml_strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _yaml_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _yaml_strings(v)


def _jinja_template(text):
    """A Jinja string with each {{ expression }} as its own string literals joined by ANY."""
    def literals(found):
        return ANY + ANY.join(re.findall(r"'([^']*)'", found.group(1))) + ANY
    return re.sub(r"\{\{(.*?)\}\}", literals, text, flags=re.S)


def code_messages():
    out = []
    for root in ("plugins", "sim"):
        for path in sorted((REPO / root).rglob("*.py")):
            out.extend(_python_messages(path))
    for path in sorted((REPO / "roles").rglob("*.yml")):
        out.extend(_jinja_template(s) for s in _yaml_strings(yaml.safe_load(path.read_text(encoding="utf-8"))))
    return out


HEADERS = ("input", "module, input", "role input", "input or situation")


def _cells(line):
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def quoted_messages():
    """(line number, input cell, quoted message) for every message the doc's sections quote."""
    section, out = None, []
    for number, line in enumerate(DOC.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("## "):
            section = SECTIONS.match(line)
            continue
        cells = _cells(line) if section and line.startswith("|") else []
        if len(cells) < 3 or set(cells[1]) <= {"-", " "} or cells[0] in HEADERS:
            continue
        for span in re.findall(r"``(.+?)``|`([^`]+)`", cells[1]):
            text = (span[0] or span[1]).replace("\\|", "|")
            if len(text.split()) >= MIN_WORDS:
                out.append((number, cells[0], text))
    return out


def doc_pattern(text, given):
    """The literal pieces of the quoted TEXT between its stand-ins (which, like the values GIVEN in the
    row's input, may be anything)."""
    stand_ins = [re.escape(f) for f in FOREIGN] + VALUES + [PLACEHOLDER]
    stand_ins += [r"\b%s\b" % re.escape(v) for v in sorted(set(given), key=len, reverse=True) if v]
    pieces = re.split("(%s)" % "|".join(stand_ins), text)
    # A message may be joined from several strings at its clauses ("GPUs not released: " and each
    # problem; "... (got %s)" around a reason): each clause is checked on its own.
    return [c.strip() for p in pieces[::2] for c in re.split(r": |; | \(|\)", p) if c.strip()]


def covered(piece, template):
    """Whether PIECE is part of some text TEMPLATE stands for (an ANY there: any text), with at least
    LITERAL of PIECE's characters matched by the template's own characters (not by an ANY)."""
    n, best, done = len(piece), {}, -1
    for ch in template:
        new = {0: 0}
        for i, count in list(best.items()) + [(0, 0)]:
            if ch == ANY:
                for k in range(i, n + 1):  # the value eats piece[i:k]
                    new[k] = max(new.get(k, -1), count)
            elif i < n and piece[i] == ch:
                new[i + 1] = max(new.get(i + 1, -1), count + 1)
        best = new
        done = max(done, best.get(n, -1))
    return done >= min(LITERAL * n, LITERAL_CHARS)  # matches()'s bound assumes this


def matches(literals, messages):
    """Whether each of LITERALS (the doc's words between stand-ins) is covered by one of MESSAGES
    (a message may be joined from several, e.g. "GPUs not released: " and each problem)."""
    for piece in literals:
        if not re.search(r"[A-Za-z]{3}", piece):
            continue  # punctuation between two values
        words = re.findall(r"[A-Za-z]+", piece)
        # At most the piece less its words the message lacks can be literal: skip messages short of it.
        needed = min(LITERAL * len(piece), LITERAL_CHARS)
        if not any(covered(piece, m) for m in messages
                   if len(piece) - sum(len(w) for w in words if w not in m) >= needed):
            return False
    return True


def _given(cell):
    """The words of the values the input cell gives (`timeout: nan` gives nan, `eagle4` gives eagle4)."""
    return [w for span in re.findall(r"`([^`]+)`", cell)
            for w in re.findall(r"[\w.-]+", span.split(": ", 1)[-1])]


MESSAGES = quoted_messages()


@pytest.fixture(scope="module")
def corpus():
    return code_messages()


@pytest.mark.parametrize("line, given, text", MESSAGES, ids=["line%d" % m[0] for m in MESSAGES])
def test_each_quoted_message_is_one_the_code_raises(line, given, text, corpus):
    literals = doc_pattern(text, _given(given))
    assert matches(literals, corpus), (
        "docs/bad-inputs.md line %d quotes a message no code in plugins/, sim/ or roles/ raises: %s" % (line, text))


def test_the_doc_quotes_messages_to_check():
    assert len(MESSAGES) >= 30


def test_a_drifted_message_fails():
    corpus = ["nothing to release: give patterns or engine, or leave sweep enabled",
              "gpus: %s not present on this host, which has %d GPUs" % (ANY, 0)]
    drifted = doc_pattern("nothing to release: give patterns, or leave sweep enabled", [])
    current = doc_pattern("nothing to release: give patterns or engine, or leave sweep enabled", [])
    assert not matches(drifted, corpus) and matches(current, corpus)
    values = doc_pattern("gpus: 9 not present on this host, which has 8 GPUs", ["gpus"])
    assert matches(values, corpus[1:]) and not matches(values, corpus[:1])
