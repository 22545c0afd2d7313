# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The workload of a run: its items, chosen from the built-in set or a file with a seed.

Order: the candidates (after the category filter) are shuffled with
`random.Random(seed).shuffle`, the same permutation as the tools' `random.seed(seed);
random.shuffle(...)` (formats.py cites them), unless the format keeps file order
(openai). Then they are walked in that order, skipping what the tools skip, until
`sample` items are taken (all of them without `sample`).
"""

from __future__ import annotations

import hashlib
import json
import random

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.builtin import (
    BUILTIN,
    BUILTIN_NAME,
    builtin_items,
)
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.formats import Source, load_file
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.items import Item, WorkloadError

SOURCES = ("random", "builtin", "file")


class Workload:
    """The sampled items and the description the result carries."""

    def __init__(self, items: list, info: dict) -> None:
        self.items = items
        self.info = info

    def take(self, start: int, count: int) -> list:
        """`count` items from position `start` on, wrapping round the sample."""
        n = len(self.items)
        return [self.items[(start + i) % n] for i in range(count)]

    def of_category(self, category: str) -> Workload:
        """The sample's items of CATEGORY, in the sample's order (a pass of that category alone)."""
        return Workload([item for item in self.items if item.category == category], self.info)

    def items_for(self, counted: int, warmup: int) -> list:
        """A level's items, warm-up first: the counted ones from the sample's start, the warm-up after them."""
        return self.take(counted, warmup) + self.take(0, counted)


def builtin_source() -> Source:
    entries, seen = [], {}
    for category, turns in builtin_items():
        seen[category] = seen.get(category, 0) + 1
        entries.append({"category": category, "turns": turns, "ref": "%s %s/%d" % (BUILTIN_NAME, category, seen[category])})

    def convert(i):
        entry = entries[i]
        return Item(entry["ref"], entry["category"], [{"role": "user", "content": entry["turns"][0]}], entry["turns"][1:])
    source = Source(BUILTIN_NAME, entries, list(range(len(entries))), convert)
    source.sha256 = hashlib.sha256(json.dumps(BUILTIN, sort_keys=True).encode("utf-8")).hexdigest()
    return source


def choose(source: Source, seed: int, sample: int | None = None, categories: list | None = None,
           where: str = "") -> tuple:
    """(items, candidates after the category filter) from a Source, in the seed's order."""
    candidates = source.candidates
    if not candidates:
        raise WorkloadError(where or source.format, "no items: the dataset is empty (%s format)" % source.format)
    if categories:
        wanted = set(str(c) for c in categories)
        candidates = [i for i in candidates if source.category(i) in wanted]
        if not candidates:
            known = {}
            for i in source.candidates:
                c = source.category(i)
                known[c] = known.get(c, 0) + 1
            listed = ", ".join("%s (%d)" % (c, n) for c, n in sorted(known.items(), key=lambda kv: str(kv[0])))
            raise WorkloadError(where or source.format, "categories %s match no item; the items' categories are: %s"
                                % (sorted(wanted), listed or "none"))
    order = list(candidates)
    if source.shuffled:
        random.Random(seed).shuffle(order)
    limit = len(order) if not sample else sample
    items = []
    for i in order:
        if len(items) >= limit:
            break
        item = source.convert(i)
        if item is not None:
            items.append(item)
    if not items:
        raise WorkloadError(where or source.format, "no usable items (every prompt or answer is empty)")
    return items, len(candidates)


def category_counts(items: list) -> dict | None:
    counts = {}
    for item in items:
        if item.category is not None:
            counts[item.category] = counts.get(item.category, 0) + 1
    return counts or None


def load_workload(spec: dict | None, seed: int) -> Workload | None:
    """The Workload of the `workload` option, or None for random prompts."""
    spec = spec or {}
    source_name = spec.get("source") or "random"
    if source_name == "random":
        return None
    if source_name not in SOURCES:
        raise WorkloadError("source", "unknown source %r (use one of %s)" % (source_name, ", ".join(SOURCES)))
    if spec.get("seed") is not None:
        seed = spec["seed"]
    sample = spec.get("sample")
    if sample is not None and sample < 1:
        raise WorkloadError("sample", "must be >= 1, got %s" % sample)
    if source_name == "builtin":
        source, path = builtin_source(), None
    else:
        path = spec.get("path")
        if not path:
            raise WorkloadError("path", "source: file needs workload.path (a file on the controller, or on "
                                        "the host with location: host)")
        source = load_file(path, spec.get("format") or "auto")
    items, available = choose(source, seed, sample, spec.get("categories"), where=path or BUILTIN_NAME)
    info = {
        "source": source_name,
        "name": BUILTIN_NAME if path is None else None,
        "path": path,
        "format": source.format,
        "sha256": source.sha256,
        "seed": seed,
        "sample": len(items),
        "available": available,
        "categories_filter": list(spec["categories"]) if spec.get("categories") else None,
        "categories": category_counts(items),
        "multi_turn_items": sum(1 for item in items if item.followups),
        "output_len_mode": spec.get("output_len_mode") or "fixed",
    }
    return Workload(items, info)
