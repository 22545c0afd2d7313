#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What loading and sampling a large ShareGPT file costs llm_benchmark, against a plain json.load.

Writes a ShareGPT-shaped JSON file (N conversations of 1 to 6 turns, text of random common
words, about --chars characters a turn on average; every 10th conversation has one turn,
so the two-turn filter has work to do), then times, in the same run and alternating:
- plain: `json.load` of the file (the floor: any loader that reads every item pays it);
- ours: load_workload(source file, sample --sample) - read, sha256, parse, filter, shuffle
  with the seed, build the sampled items.
Prints the median of --runs of each and the ratio; asserts nothing about time.

    .venv/bin/python bench/workload_load.py [--items 100000] [--chars 600] [--sample 1000] [--runs 3]
"""
import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "build", "collections"))

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.sample import load_workload  # noqa: E402

WORDS = ("the of and to in is that for it as with was on be by this are from or have an not they which one "
         "you had all were but can there their what when more we time out use about if so some would how "
         "them into these two has could see other than now then like only its first new over also many").split()


def write_sharegpt(path, items, chars, seed=1):
    rng = random.Random(seed)
    mean_words = max(chars // 5, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write("[")
        for i in range(items):
            turns = 1 if i % 10 == 9 else rng.randint(2, 6)
            conv = [{"from": "human" if t % 2 == 0 else "gpt",
                     "value": " ".join(rng.choice(WORDS) for unused in range(rng.randint(1, 2 * mean_words)))}
                    for t in range(turns)]
            f.write(("," if i else "") + json.dumps({"id": "b%d" % i, "conversations": conv}))
        f.write("]")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=100000)
    p.add_argument("--chars", type=int, default=600, help="mean characters a turn")
    p.add_argument("--sample", type=int, default=1000)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sharegpt.json")
        write_sharegpt(path, args.items, args.chars)
        size = os.path.getsize(path)
        plain, ours = [], []
        for unused in range(args.runs):
            t0 = time.perf_counter()
            with open(path, encoding="utf-8") as f:
                json.load(f)
            plain.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            workload = load_workload({"source": "file", "path": path, "format": "sharegpt", "sample": args.sample}, 0)
            ours.append(time.perf_counter() - t0)
        p_med, o_med = statistics.median(plain), statistics.median(ours)
        print("file: %d conversations, %.1f MB; sampled %d (of %d with two turns)"
              % (args.items, size / 1e6, workload.info["sample"], workload.info["available"]))
        print("plain json.load: %.3f s (median of %d; %s)" % (p_med, args.runs, ", ".join("%.3f" % x for x in plain)))
        print("load_workload:   %.3f s (median of %d; %s)" % (o_med, args.runs, ", ".join("%.3f" % x for x in ours)))
        print("ratio load_workload / json.load: %.2fx" % (o_med / p_med))


if __name__ == "__main__":
    main()
