#!/usr/bin/env python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""llm_benchmark and SGLang 0.5.23's own bench_serving, reading one JSONL file, against the
simulated EAGLE-3 SGLang, and both against the server's own counter.

One file in SGLang's custom format (`conversations`: a user turn and an answer; the texts are
the collection's built-in set, numbered, no dataset text), one seed: both tools take the same prompts
in the same order (tests/unit/plugins/module_utils/_bench/workload/test_formats.py checks that against
sample_custom_requests). At each concurrency, N prompts, chat API, a fixed output length with
ignore_eos:

  llm_benchmark   output_tok_s (its window, docs/benchmark.md), and the server's
                  sglang:generation_tokens_total delta over the level span (server_tok_s)
  bench_serving   `python -m sglang.bench_serving --backend sglang-oai-chat --dataset-name
                  custom`, its own "Output token throughput" (output tokens / duration), and
                  the counter's delta over its run (warm-up excluded: --warmup-requests 0)
                  over its duration

bench_serving needs what the project's venv does not have: transformers and tqdm (SGLang
0.5.23 pins transformers 5.19.0, tokenizers 0.23.2), plus ipython and datasets, which
`import sglang` pulls in. Give an interpreter that has them with --bench-python (its
sys.path must also see numpy, aiohttp, msgspec, orjson and requests; a venv with a .pth
naming .venv's site-packages does). The real SGLang is build/sglang-real (`make setup`);
torch and triton are the simulator kit's stand-ins (sim/standins), and one import bench_serving
makes for disaggregation only (sglang.srt.disaggregation.utils, which imports the model
configs and torchvision) is given its one constant, FAKE_BOOTSTRAP_HOST. The tokenizer is a
word-level one built with `tokenizers` from the file's words and saved as tokenizer.json: it
decides only the prompts' token counts bench_serving prints and its two-token floor (every
prompt here is longer); output tokens come from the server's usage, as both tools read them.

    .venv/bin/python bench/bench_serving_agreement.py --bench-python /tmp/bs-venv/bin/python \\
        [--levels 16 64] [--prompts 4] [--output-len 256]

--prompts: prompts per level, as a multiple of the concurrency. Prints one row per tool and
level; asserts nothing about time.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "build", "collections"))
sys.path.insert(0, HERE)

REAL_SGLANG = os.path.join(REPO, "build", "sglang-real")
STANDINS = os.path.join(REPO, "sim")
COUNTER = "sglang:generation_tokens_total"


def write_dataset(path, count):
    """COUNT items of SGLang custom JSONL: the built-in set's first turns, each numbered (so every
    prompt differs), with an answer (the item's second turn, or a fixed line: bench_serving wants
    two turns; the fixed output length makes the answer's length irrelevant). bench_serving
    sends each item at most once, so the file holds more than a level's prompts and warm-up."""
    from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.builtin import builtin_items
    items = list(builtin_items())
    with open(path, "w") as f:
        for i in range(count):
            category, turns = items[i % len(items)]
            answer = turns[1] if len(turns) > 1 else "An answer about %s, for the record." % category
            f.write(json.dumps({"conversations": [{"role": "user", "content": "%s (request %d)" % (turns[0], i)},
                                                  {"role": "assistant", "content": answer}]}) + "\n")


def write_tokenizer(directory, dataset):
    """A word-level tokenizer of the file's words (tokenizers), as AutoTokenizer reads it offline."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    words = {"[UNK]": 0}
    with open(dataset) as f:
        for line in f:
            for turn in json.loads(line)["conversations"]:
                for word in turn["content"].split():
                    words.setdefault(word, len(words))
    tok = Tokenizer(models.WordLevel(words, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(os.path.join(directory, "tokenizer.json"))
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]"}, f)


def counter(url):
    from ansible_collections.gpufleet.serving.plugins.module_utils._bench.accept import parse_prometheus
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        return parse_prometheus(r.read().decode())[COUNTER]


def inner(argv):
    """Run bench_serving's own cli_main in this interpreter (--bench-python), as its CLI would."""
    sys.path[:0] = [REAL_SGLANG, STANDINS]
    import types

    import standins
    standins.install()
    import sglang.srt.disaggregation
    stub = types.ModuleType("sglang.srt.disaggregation.utils")
    stub.FAKE_BOOTSTRAP_HOST = "2.2.2.2"  # srt/disaggregation/utils.py of 0.5.23
    sys.modules["sglang.srt.disaggregation.utils"] = stub
    sglang.srt.disaggregation.utils = stub
    from sglang.benchmark import serving
    sys.argv = ["sglang.bench_serving"] + argv
    serving.cli_main()


def run_bench_serving(python, url, dataset, tokenizer, concurrency, prompts, output_len, out):
    argv = ["--backend", "sglang-oai-chat", "--base-url", url, "--dataset-name", "custom",
            "--dataset-path", dataset, "--num-prompts", str(prompts), "--max-concurrency", str(concurrency),
            "--sharegpt-output-len", str(output_len), "--tokenizer", tokenizer, "--seed", "0",
            "--warmup-requests", "0", "--output-file", out]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    before = counter(url)
    proc = subprocess.run([python, os.path.abspath(__file__), "--inner"] + argv, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    after = counter(url)
    if proc.returncode != 0:
        raise SystemExit("bench_serving failed (%d):\n%s" % (proc.returncode, (proc.stdout + proc.stderr)[-4000:]))
    with open(out) as f:
        result = json.loads(f.read().strip().splitlines()[-1])
    return result, after - before


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        inner(sys.argv[2:])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--write-tokenizer":
        write_tokenizer(sys.argv[2], sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-python", required=True, help="an interpreter with transformers 5.19.0 and tqdm")
    ap.add_argument("--levels", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--prompts", type=int, default=4, help="prompts per level, times the concurrency")
    ap.add_argument("--output-len", type=int, default=256)
    args = ap.parse_args()

    from client_accuracy import params, start_eagle3_sim

    from ansible_collections.gpufleet.serving.plugins.module_utils._bench.run import run_benchmark
    work = tempfile.mkdtemp(prefix="bench-serving-agreement-")
    dataset = os.path.join(work, "builtin-custom.jsonl")
    write_dataset(dataset, (args.prompts + 1) * max(args.levels))
    # `tokenizers` is the --bench-python's.
    subprocess.run([args.bench_python, os.path.abspath(__file__), "--write-tokenizer", work, dataset], check=True)
    srv = start_eagle3_sim()
    print("simulated EAGLE-3 SGLang, %s, output %d tokens (ignore_eos), chat API" % (dataset, args.output_len))
    print("%5s %8s %-14s %10s %14s %10s %8s" % ("conc", "prompts", "tool", "tok/s", "counter tok/s", "ratio",
                                                "accept"))
    try:
        for c in args.levels:
            n = args.prompts * c
            p = params(srv.url, c, args.output_len)
            p.update(api="chat", requests_per_level=n, warmup_requests=None,
                     workload={"source": "file", "path": dataset, "format": "sglang-custom"})
            lv = run_benchmark(p)["levels"][0]
            print("%5d %8d %-14s %10.1f %14.1f %9.4fx %8s" % (
                c, n, "llm_benchmark", lv["output_tok_s"], lv["server_tok_s"], lv["output_tok_s"] / lv["server_tok_s"],
                lv["accept_length"]))
            theirs, delta = run_bench_serving(args.bench_python, srv.url, dataset, work, c, n, args.output_len,
                                              os.path.join(work, "bench-serving-%d.jsonl" % c))
            server = delta / theirs["duration"]
            print("%5d %8d %-14s %10.1f %14.1f %9.4fx %8s" % (
                c, theirs["completed"], "bench_serving", theirs["output_throughput"], server,
                theirs["output_throughput"] / server, theirs.get("accept_length")))
            print("%5d %8s %-14s %9.4fx" % (c, "", "llm/bench_serving", lv["output_tok_s"] / theirs["output_throughput"]))
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
