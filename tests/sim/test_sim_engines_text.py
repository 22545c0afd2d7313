"""Both simulated engines on real text: prompt tokens, acceptance by text (the model in
sim/pypath/_simcore/text.py), SGLang's return_spec_tokens_details, and /metrics as
prometheus_client writes and reads it.

Each engine is one EAGLE-3 server (TP1, fast calibration) shared by the module's tests;
each test stops nothing but what the fixtures started.
"""
import ast
import http.client
import json
import os
import subprocess
import sys

import pytest
from _server_fixtures import EAGLE, HOST, Server, VllmServer, sse_events
from _server_fixtures import sim_text as text

from tests.support import paths, real_sources

DRAFT_TOKENS = 4  # --speculative-num-draft-tokens / num_speculative_tokens + 1
ACCEPT = 2.4
FAST_TPS = ["--sim-single-stream-tps", "2000", "--sim-peak-tps", "40000"]
PROSE = ("Tell me a slow story about a fisherman who rows out before dawn, listens to the gulls "
         "and the water against the boat, and wonders whether his daughter will want the same life "
         "when she is grown, or whether she will leave the village for the city across the bay.")
JSON_TEXT = ('{"hosts": [{"name": "gpu-01", "gpus": 8, "free_mib": [97871, 97871, 97871, 97871]}, '
             '{"name": "gpu-02", "gpus": 8, "free_mib": [97871, 97871, 0, 97871]}], "port": 30000}')
PROM_REFERENCE = os.path.join(paths.REPO, "tests", "support", "scripts", "prom_reference.py")


@pytest.fixture(scope="module")
def sglang(tmp_path_factory):
    server = Server(tmp_path_factory.mktemp("sglang-text"), [
        "--enable-metrics", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", EAGLE,
        "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", str(DRAFT_TOKENS), "--sim-accept-length", str(ACCEPT)] + FAST_TPS, tp=1)
    try:
        yield server.wait_ready()
    finally:
        server.stop()


@pytest.fixture(scope="module")
def vllm(tmp_path_factory):
    spec = json.dumps({"method": "eagle3", "model": EAGLE, "num_speculative_tokens": DRAFT_TOKENS - 1})
    server = VllmServer(tmp_path_factory.mktemp("vllm-text"), None, "--speculative-config", spec,
                        "--sim-accept-length", str(ACCEPT), *FAST_TPS, tp=1)
    try:
        yield server.wait_ready()
    finally:
        server.stop()


@pytest.fixture(params=["sglang", "vllm"])
def engine(request):
    return request.getfixturevalue(request.param)


def post(server, path, body):
    conn = http.client.HTTPConnection(HOST, server.port, timeout=60)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        res = conn.getresponse()
        if not body.get("stream"):
            raw = res.read()
            assert res.status == 200, raw[:300]
            return json.loads(raw)
        assert res.status == 200
        events = list(sse_events(res))
        res.read()
        return events
    finally:
        conn.close()


def get_metrics(server):
    conn = http.client.HTTPConnection(HOST, server.port, timeout=30)
    try:
        conn.request("GET", "/metrics")
        res = conn.getresponse()
        assert res.status == 200
        return res.read().decode()
    finally:
        conn.close()


def counters(server):
    """{sample name: value summed over labels} (`_created` left out), by a plain split."""
    out = {}
    for line in get_metrics(server).splitlines():
        if line and not line.startswith("#"):
            name = line.split("{")[0].split()[0]
            if not name.endswith("_created"):
                out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


# --- prompt tokens -------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["completion", "chat"])
def test_usage_prompt_tokens_are_the_text_model(engine, kind):
    if kind == "chat":
        contents = [PROSE, "A short answer.", JSON_TEXT]
        roles = ["user", "assistant", "user"]
        body = {"model": "m", "max_tokens": 2, "messages": [{"role": r, "content": c} for r, c in zip(roles, contents)]}
        out = post(engine, "/v1/chat/completions", body)
        expected = text.chat_prompt_tokens(contents)
    else:
        out = post(engine, "/v1/completions", {"model": "m", "prompt": JSON_TEXT, "max_tokens": 2})
        expected = text.prompt_tokens(JSON_TEXT)
    assert out["usage"]["prompt_tokens"] == expected


# --- acceptance by text --------------------------------------------------------------

def sglang_accept(server, prompt, n, max_tokens):
    """Per-request spec_accept_length (sglext) of n requests continuing PROMPT, pooled."""
    tokens = steps = 0
    for i in range(n):
        out = post(server, "/v1/completions", {"model": "m", "prompt": prompt, "max_tokens": max_tokens,
                                               "ignore_eos": True, "seed": i, "return_spec_tokens_details": True})
        details = out["sglext"]["spec_tokens_details"]
        assert details["spec_accept_length"] == pytest.approx(
            out["usage"]["completion_tokens"] / details["spec_verify_ct"])
        tokens += out["usage"]["completion_tokens"]
        steps += details["spec_verify_ct"]
    return tokens / steps


def vllm_accept(server, prompt, n, max_tokens):
    """1 + accepted / drafts from the spec_decode counters around n requests continuing PROMPT."""
    before = counters(server)
    for i in range(n):
        post(server, "/v1/completions", {"model": "m", "prompt": prompt, "max_tokens": max_tokens,
                                         "ignore_eos": True, "seed": i})
    after = counters(server)
    drafts = after["vllm:spec_decode_num_drafts_total"] - before["vllm:spec_decode_num_drafts_total"]
    accepted = (after["vllm:spec_decode_num_accepted_tokens_total"]
                - before["vllm:spec_decode_num_accepted_tokens_total"])
    return 1 + accepted / drafts


@pytest.mark.parametrize("name", ["sglang", "vllm"])
def test_acceptance_follows_the_text(request, name):
    server = request.getfixturevalue(name)
    measure = sglang_accept if name == "sglang" else vllm_accept
    measured = {label: measure(server, prompt, 4, 400) for label, prompt in (("prose", PROSE), ("json", JSON_TEXT))}
    expected = {"prose": text.expected_accept_length(ACCEPT, DRAFT_TOKENS, PROSE),
                "json": text.expected_accept_length(ACCEPT, DRAFT_TOKENS, JSON_TEXT)}
    # About 600 verify steps a text: the mean's standard error is about 0.035.
    assert measured["prose"] == pytest.approx(expected["prose"], abs=0.15), (measured, expected)
    assert measured["json"] == pytest.approx(expected["json"], abs=0.15), (measured, expected)
    assert expected["json"] > expected["prose"] + 0.5


# --- return_spec_tokens_details (SGLang) -------------------------------------------

def spec_tokens_details_fields():
    """The fields of SpecTokensDetails in the pinned wheel's protocol.py, in order."""
    root, unused = real_sources.sources("sglang")
    source = (root / "srt" / "entrypoints" / "openai" / "protocol.py").read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == "SpecTokensDetails":
            return [s.target.id for s in node.body if isinstance(s, ast.AnnAssign)]
    raise AssertionError("no SpecTokensDetails in protocol.py")


def check_details(details, completion_tokens):
    assert list(details) == spec_tokens_details_fields()
    steps = details["spec_verify_ct"]
    hist = details["spec_correct_drafts_histogram"]
    assert sum(hist) == steps
    assert details["spec_num_correct_drafts"] == sum(i * c for i, c in enumerate(hist))
    assert details["spec_num_proposed_drafts"] == steps * (DRAFT_TOKENS - 1)
    assert details["spec_accept_rate"] == pytest.approx(details["spec_num_correct_drafts"] / (steps * 3))
    assert details["spec_accept_length"] == pytest.approx(completion_tokens / steps)


@pytest.mark.parametrize("kind", ["completion", "chat"])
@pytest.mark.parametrize("stream", [False, True])
def test_spec_tokens_details_where_sglang_puts_them(sglang, kind, stream):
    path = "/v1/chat/completions" if kind == "chat" else "/v1/completions"
    body = {"model": "m", "max_tokens": 40, "ignore_eos": True, "stream": stream,
            "return_spec_tokens_details": True}
    body.update({"messages": [{"role": "user", "content": PROSE}]} if kind == "chat" else {"prompt": PROSE})
    if stream:
        body["stream_options"] = {"include_usage": True}
        events = post(sglang, path, body)
        # serving_completions.py / serving_chat.py: the content chunks, then one chunk with
        # choices [] and the sglext, then the usage chunk.
        ext = [i for i, e in enumerate(events) if "sglext" in e]
        assert len(ext) == 1 and ext[0] == len(events) - 2, events[-3:]
        chunk = events[ext[0]]
        assert chunk["choices"] == [] and chunk["usage"] is None
        assert all(e["choices"] for e in events[:ext[0]])
        check_details(chunk["sglext"]["spec_tokens_details"], events[-1]["usage"]["completion_tokens"])
    else:
        out = post(sglang, path, body)
        check_details(out["sglext"]["spec_tokens_details"], out["usage"]["completion_tokens"])
    body.pop("return_spec_tokens_details")
    answer = post(sglang, path, body)
    assert all("sglext" not in e for e in answer) if stream else "sglext" not in answer


# --- /metrics as prometheus_client ---------------------------------------------------

def prometheus_view(body, mode):
    """prom_reference.py's reading of BODY with the pinned vLLM's prometheus_client."""
    site = real_sources.vllm_sources().parent
    if not (site / "prometheus_client").is_dir():
        real_sources.missing("no prometheus_client beside %s" % site)
    cp = subprocess.run([sys.executable, PROM_REFERENCE, mode], input=body, capture_output=True, text=True,
                        env=dict(os.environ, PYTHONPATH=str(site)), timeout=60, check=True)
    return json.loads(cp.stdout)


def blocks(body):
    """{family name: (HELP and TYPE lines, sorted sample lines)} of an exposition."""
    out, name = {}, None
    for line in body.splitlines():
        if line.startswith("# HELP "):
            name = line.split()[2]
            out[name] = ([line], [])
        elif line.startswith("# TYPE "):
            out[name][0].append(line)
        elif line:
            out[name][1].append(line)
    return {k: (head, sorted(samples)) for k, (head, samples) in out.items()}


@pytest.mark.parametrize("name, mode, counted", [
    ("sglang", "multiprocess", ("sglang:generation_tokens", "sglang:num_requests", "sglang:prompt_tokens",
                                "sglang:spec_verify_calls")),
    ("vllm", "plain", ("vllm:generation_tokens", "vllm:request_success", "vllm:prompt_tokens",
                       "vllm:spec_decode_num_drafts", "vllm:spec_decode_num_accepted_tokens")),
])
def test_metrics_are_prometheus_client_exposition(request, name, mode, counted):
    server = request.getfixturevalue(name)
    before = counters(server)
    for unused in range(3):
        post(server, "/v1/completions", {"model": "m", "prompt": PROSE, "max_tokens": 8, "ignore_eos": True})
    body = get_metrics(server)
    view = prometheus_view(body, mode)
    families = view["families"]
    for family in counted:
        assert families[family]["type"] == "counter", (family, families.get(family))
    requests = "sglang:num_requests" if name == "sglang" else "vllm:request_success"
    total = sum(s[2] for s in families[requests]["samples"] if s[0] == requests + "_total")
    assert total - before[requests + "_total"] == 3
    # Written as prometheus_client writes the same series (its _created times aside).
    ours = blocks(body.replace("\r", ""))
    for fam, (head, samples) in blocks(view["rebuilt"]).items():
        assert fam in ours, fam
        assert ours[fam][0] == head
        assert [s.rsplit(" ", 1)[0] if fam.endswith("_created") else s for s in ours[fam][1]] == \
               [s.rsplit(" ", 1)[0] if fam.endswith("_created") else s for s in samples]
    assert set(ours) == set(blocks(view["rebuilt"]))


def real_metric_docs(name):
    """{metric name: documentation} of every metric the pinned engine declares with constant
    `name=` and `documentation=` (SGLang: srt/observability/metrics_collector.py; vLLM:
    v1/metrics/loggers.py)."""
    if name == "sglang":
        root, unused = real_sources.sources("sglang")
        source = root / "srt" / "observability" / "metrics_collector.py"
    else:
        source = real_sources.vllm_sources() / "v1" / "metrics" / "loggers.py"
    out = {}
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            kw = {k.arg: k.value for k in node.keywords}
            if all(isinstance(kw.get(k), ast.Constant) for k in ("name", "documentation")):
                out[kw["name"].value] = kw["documentation"].value
    return out


@pytest.mark.parametrize("name, families", [
    ("sglang", ("sglang:prompt_tokens", "sglang:generation_tokens", "sglang:num_requests", "sglang:num_running_reqs",
                "sglang:num_queue_reqs", "sglang:gen_throughput", "sglang:spec_accept_length",
                "sglang:spec_accept_rate", "sglang:spec_verify_calls")),
    ("vllm", ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:prompt_tokens",
              "vllm:generation_tokens", "vllm:request_success")),
])
def test_metric_names_and_help_are_the_engines_own(request, name, families):
    server = request.getfixturevalue(name)
    real = real_metric_docs(name)
    helps = {}
    for line in get_metrics(server).splitlines():
        if line.startswith("# HELP "):
            metric, doc = line.split(" ", 3)[2:]
            helps[metric] = doc
    for family in families:
        # SGLang declares its counters with the `_total` name, vLLM without; both scrape as `_total`.
        declared = family if family in real else family + "_total"
        scraped = family + "_total" if family + "_total" in helps else family
        assert declared in real and scraped in helps, (family, declared in real, scraped in helps)
        assert real[declared] == helps[scraped], (family, real[declared], helps[scraped])
