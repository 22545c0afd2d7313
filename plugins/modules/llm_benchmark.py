#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: llm_benchmark
short_description: Sweep an OpenAI-compatible LLM server over concurrency levels
version_added: 0.1.0
description:
  - Runs a closed-loop load against an OpenAI-compatible server (SGLang, vLLM) at each
    concurrency level in O(levels) and reports throughput, latency and speculative
    acceptance per level.
  - At a level of C, C workers each open one persistent keep-alive connection before the
    clock starts; all start at once and each sends its next request as soon as its previous
    one ends, so C requests stay in flight. The client is standard-library asyncio, parsing
    in the socket callback; one core sustains far more tokens per second than the servers
    it measures.
  - Prompts are random and fixed-length, unique per request (no prefix-cache hits), and
    C(ignore_eos) is sent so every output reaches O(output_len); or natural text from
    O(workload) - the built-in set of eight categories, or a file in the format of ShareGPT,
    MT-Bench, sglang.bench_serving or C(vllm bench serve) (docs/benchmark.md cites each
    loader followed). Speculative acceptance depends on the text, so measure a drafter on a
    natural-text workload.
  - Output tokens are the server's own C(usage.completion_tokens) (requested with
    C(stream_options.include_usage)), never a re-tokenization. A level's measurement window
    runs from the first counted request sent to the last counted request ended; output tok/s
    is every token of a completed request that arrived inside it, whichever request carried it
    (the warm-up's tail included), over the window, so variable-length outputs (speculative
    decoding, EOS) do not bias it. Requests per second count each request's share of tokens
    inside the window. With C(/metrics) on, the server's own counters give RV(levels[].server_tok_s),
    RV(levels[].server_ratio) and RV(levels[].server_req_s) over the whole level. docs/benchmark.md defines every figure
    next to sglang.bench_serving's and C(vllm bench serve)'s.
  - A request fails on an HTTP error, an error or malformed stream event, a cut stream, a
    timeout or no content; it fails alone, never the run. Failed requests' tokens are never in
    tok/s, TPOT or ITL (RV(levels[].failed_output_tokens) reports them). A usage count that
    the stream cannot explain (negative, decreasing, fewer than the content chunks, more than
    O(output_len)) is not believed; the content count is used and the request is counted in
    RV(levels[].usage_suspect). When no request of any level completed the task fails, with
    the first errors and the partial result. docs/bad-inputs.md lists every fault.
  - TTFT is the arrival of the first non-empty content chunk (reasoning text counts).
    TPOT is (latency - TTFT) / (tokens - 1). ITL is per token, pooled over the level's
    requests; a chunk carrying k tokens after a gap g gives k entries of g/k. Tokens per
    chunk come from the running C(usage.completion_tokens) of each chunk
    (C(stream_options.continuous_usage_stats), honoured by SGLang and vLLM); when a server
    does not send it, a request's tokens are spread evenly over its chunks. RV(levels[].itl_token_source)
    says which applied. RV(levels[].itl_chunk_ms) is the gap between chunks, as sglang.bench_serving's
    ITL; on a speculative server, one verify step.
  - Speculative acceptance length is measured for each level only, from server counters
    read just before and just after the level (warm-up included, other traffic excluded).
    SGLang with C(--enable-metrics) gives d(C(sglang:generation_tokens_total)) /
    d(C(sglang:spec_verify_calls_total)) (tokens per verify step, as
    C(completion_tokens / meta_info.spec_verify_ct)); SGLang without metrics falls back to
    C(/server_info) C(internal_states[0].avg_spec_accept_length) read after the level (the
    server's own recent average). vLLM gives 1 + d(C(vllm:spec_decode_num_accepted_tokens)) /
    d(C(vllm:spec_decode_num_drafts)). It is null when no speculative step ran.
author:
  - gpufleet.serving maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.ACTIONGROUP_ENDPOINT
  - gpufleet.serving.endpoint
attributes:
  check_mode:
    support: partial
    details:
      - The load is sent and measured in check mode too (it changes nothing on the server),
        but O(output) and O(request_records) are not written; C(changed) then says whether it would have been.
  diff_mode:
    support: none
options:
  # BEGIN GENERATED benchmark-options (scripts/gen_docs.py)
  levels:
    description:
      - 'Concurrency levels, run in the order given.'
    type: list
    elements: int
    default: [1, 2, 4, 8, 16, 32, 64, 128]
  requests_per_level:
    description:
      - 'Counted requests at each level.'
      - 'When not set, max(2 x level, 8) rounded up to a multiple of the level, so every level ends with full
        waves and its wall time is not stretched by a half-empty tail.'
      - 'A value set here is used as given.'
      - 'With O(request_rates), the level in that formula is O(max_concurrency) (1 without it).'
      - 'With a O(workload) this counts items; a multi-turn item sends one request per turn, so
        RV(levels[].requests) can be larger.'
    type: int
  warmup_requests:
    description:
      - 'Requests sent at the start of each level, at the level''s concurrency, and not counted. When not
        set, one per connection (the level''s start-up burst, which also warms the server for that batch
        size). V(0) disables warm-up.'
    type: int
  input_len:
    description:
      - 'Prompt length. With O(api=completions) the prompt is this many random token ids (exact). With
        O(api=chat) it is this many random common words (about one token each); the server''s
        C(usage.prompt_tokens) is reported.'
    type: int
    default: 512
  output_len:
    description:
      - 'C(max_tokens) of every request; C(ignore_eos) is sent so outputs reach it. Outputs that end short
        are counted in RV(levels[].short_outputs).'
    type: int
    default: 256
  workload:
    description:
      - 'What the prompts are. Without it, random prompts (O(workload.source=random)).'
    type: dict
    suboptions:
      source:
        description:
          - 'V(random) - random prompts of O(input_len) (pure throughput sweeps).'
          - 'V(builtin) - the collection''s own natural-text set, 80 items in eight categories (chat, code, math,
            reasoning, summarisation, extraction to JSON, translation, creative writing), some multi-turn.'
          - 'V(file) - a dataset file, O(workload.path).'
        type: str
        choices: ["random", "builtin", "file"]
        default: "random"
      path:
        description:
          - 'The dataset file with O(workload.source=file).'
        type: path
      location:
        description:
          - 'V(controller) - O(workload.path) is on the controller; the action plugin copies it to a temporary
            file on the host for the run and removes it afterwards.'
          - 'V(host) - O(workload.path) is already on the host.'
        type: str
        choices: ["controller", "host"]
        default: "controller"
      format:
        description:
          - 'The file''s format. V(auto) tells them apart by content (a JSON list of C(conversations) is
            ShareGPT; a JSONL line with C(question_id) and C(turns) is MT-Bench, with C(conversations)
            sglang-custom, with C(messages) and C(max_tokens) or C(tools) openai, anything else jsonl).'
          - 'V(sharegpt) - a JSON list of C({conversations - [{from, value}, ...]}); turn 0 is the prompt and
            turn 1 the reference answer, as both tools read it.'
          - 'V(jsonl) - one object a line with C(prompt) (text), C(messages) (chat history ending in a user turn)
            or C(turns) (user turns of one conversation); optional C(category), C(output_len) (or
            C(output_tokens)).'
          - 'V(mtbench) - MT-Bench''s C(question.jsonl) (C(question_id), C(category), C(turns)).'
          - 'V(sglang-custom) - sglang.bench_serving''s C(--dataset-name custom) JSONL.'
          - 'V(vllm-custom) - C(vllm bench serve --dataset-name custom) JSONL (C(prompt), C(output_tokens)).'
          - 'V(openai) - sglang.bench_serving''s C(--dataset-name openai) JSONL of chat requests, sent as given;
            taken in file order.'
        type: str
        choices: ["auto", "sharegpt", "jsonl", "mtbench", "sglang-custom", "vllm-custom", "openai"]
        default: "auto"
      categories:
        description:
          - 'Keep only items of these categories (an error when none matches; the message lists the file''s
            categories).'
        type: list
        elements: str
      sample:
        description:
          - 'How many items to take, in the seed''s order. Default all. Each level''s counted requests take items
            from the start of the sample (wrapping round when a level needs more), its warm-up the items after
            them.'
        type: int
      seed:
        description:
          - 'Seed of the sample and its order (default O(seed)); the same seed gives the same items in the same
            order, and the same order as the tools'' C(--seed).'
        type: int
      output_len_mode:
        description:
          - 'V(fixed) - every request asks for O(output_len) tokens.'
          - 'V(dataset) - the item''s reference length where the dataset gives one (C(output_len) or
            C(output_tokens) of a JSONL line, C(max_tokens) of an openai line, the first answer of a ShareGPT or
            sglang-custom conversation estimated as its UTF-8 bytes / 4, since the host has no tokenizer), else
            O(output_len).'
        type: str
        choices: ["fixed", "dataset"]
        default: "fixed"
  repeats:
    description:
      - 'Run each level this many times, one after another, to state the run-to-run spread.'
      - 'With more than one, RV(levels[].output_tok_s), RV(levels[].accept_length), the request rates
        (RV(levels[].requests_per_s), RV(levels[].goodput_req_s)) and every latency percentile (TTFT, TPOT,
        ITL, E2E; each run''s percentile, averaged over the runs) are the means over the runs, so a latency
        figure and a latency gate use every run; the counts (RV(levels[].requests), RV(levels[].completed),
        RV(levels[].failed), RV(levels[].goodput_requests) and the token counts) are the sums over the runs
        and RV(levels[].errors) holds the error samples of every run, so a failure in any run shows; every
        other figure of the level is the first run''s, and RV(levels[].repeats) gives each run''s figures
        and a 95% confidence interval (Student t) of output tok/s, TTFT p50 and p99, TPOT p50 and p99 and
        acceptance length.'
    type: int
    default: 1
  category_passes:
    description:
      - 'After each level (and its repeats), run one more pass per category of the level''s counted requests,
        with only that category''s items of the O(workload), at the same concurrency (or rate), request
        count and warm-up. The categories share the server within a level, so this is what measures tok/s
        per category (RV(levels[].categories)).'
      - 'For an engine that answers no acceptance per request (vLLM), the category''s acceptance length comes
        from the server''s counter deltas around its pass (C(accept_source) C(pass_metrics)).'
      - 'Each pass sends as many requests as its level again, so the run takes about one level''s time more
        per category. The passes'' requests are not written to O(request_records).'
      - 'Needs a O(workload) whose items have categories.'
    type: bool
    default: false
  slo_ttft_ms:
    description:
      - 'Goodput SLO - a request counts in RV(levels[].goodput_req_s) (the reports'' C(goodput req/s), an
        experiment''s C(min_goodput_fraction) gate) only with TTFT at most this, and within every other SLO
        given.'
    type: float
  slo_tpot_ms:
    description:
      - 'Goodput SLO on TPOT (milliseconds), as O(slo_ttft_ms).'
    type: float
  slo_e2e_ms:
    description:
      - 'Goodput SLO on end-to-end latency (milliseconds), as O(slo_ttft_ms).'
    type: float
  # END GENERATED benchmark-options
  api:
    description:
      - Which endpoint to load. V(completions) is C(/v1/completions), V(chat) is
        C(/v1/chat/completions).
      - When not set, V(completions) for random prompts and V(chat) for a O(workload) (a
        multi-turn item needs V(chat); V(completions) sends a one-turn item's text as C(prompt)).
    type: str
    choices: [completions, chat]
  request_records:
    description:
      - Path on the target host of a JSONL file that gets one line per request sent (warm-up
        included, flagged) - level, item, category, turn, prompt and output tokens, TTFT, E2E,
        per-chunk ITL summary, error, and SGLang's per-request acceptance when it gives it
        (C(return_spec_tokens_details) is sent to an SGLang server when records are kept or the
        workload has categories). Written after each level, outside its timing.
    type: path
  request_records_to:
    description:
      - Path on the controller to copy O(request_records) to when the run ends, in the same task (the action
        plugin does it over the connection; through C(slurp) when the task becomes another user). Not in check
        mode (nothing is written then) and not with C(async).
    type: path
  temperature:
    description:
      - Sampling temperature sent with every request.
    type: float
    default: 0.0
  seed:
    description:
      - Seed of the random prompts; the same seed gives the same prompts.
    type: int
    default: 0
  request_timeout:
    description:
      - Seconds one request may take, connection included, before it counts as failed.
    type: float
    default: 600
  max_error_samples:
    description:
      - Distinct error messages kept per level in RV(levels[].errors).
    type: int
    default: 5
  output:
    description:
      - Path on the target host to write the result to as JSON (written atomically; parent
        directories are created).
    type: path
  request_rates:
    description:
      - Open-loop levels instead of O(levels) - one level per rate, in requests per second.
        Arrival gaps are Gamma-distributed with shape O(burstiness) and mean 1/rate, as
        C(vllm bench serve --request-rate --burstiness) (burstiness 1 is Poisson, like
        sglang.bench_serving).
    type: list
    elements: float
  burstiness:
    description:
      - Gamma shape of the arrival gaps with O(request_rates); below 1 is burstier, above 1
        more regular.
    type: float
    default: 1.0
  max_concurrency:
    description:
      - With O(request_rates), at most this many requests in flight; later arrivals wait for a
        free slot (bench_serving's C(--max-concurrency)). Also the default warm-up count and
        the number of connections opened ahead.
    type: int
  range_ratio:
    description:
      - Random input and output lengths, uniform in [max(int(len x ratio), 1), len] for
        O(input_len) and O(output_len), drawn from O(seed) (bench_serving's
        C(--random-range-ratio)). V(1) keeps every length fixed.
    type: float
    default: 1.0
  ignore_eos:
    description:
      - Send C(ignore_eos) so outputs reach C(max_tokens). V(false) lets the model stop early.
    type: bool
    default: true
  connection:
    description:
      - V(keep_alive) opens connections ahead and reuses them; TTFT then excludes connection
        set-up. V(per_request) opens a new connection for every request and starts its clock
        before connecting, as sglang.bench_serving's cold-connection TTFT.
    type: str
    choices: [keep_alive, per_request]
    default: keep_alive
  progress_file:
    description:
      - A file on the target host that gets one line as each level (each repeat of it, numbered C(repeat 2/3)) starts
        and ends (C(tail -f) it; Ansible shows nothing until the task returns). A start line says how many requests
        it sends, warm-up and counted; the end line's C(M/M ok) counts the counted ones, summed over the repeats.
    type: path
  telemetry:
    description:
      - Sample the server's GPUs through NVML at 10 Hz during every level (in a child process,
        not the load client's) and add energy, tokens per joule, power, SM clocks and throttling
        to each level (RV(levels[].energy_j) and the keys after it; docs/telemetry.md defines each).
      - When not set, on when nvidia-ml-py is installed on the host and the GPUs are known
        (O(gpus), or the server found listening on O(base_url)'s port on this host); RV(telemetry)
        says why it was off. V(true) makes either missing an error; V(false) turns it off.
      - A sampler that dies or hangs, or a reading a GPU does not support, never fails the run - its
        figures are null and C(notes) of RV(levels[].telemetry) says why.
    type: bool
  gpus:
    description:
      - GPU indices (NVML's) the server uses, for O(telemetry). When not set, the
        C(CUDA_VISIBLE_DEVICES) of the process listening on O(base_url)'s port on this host,
        else the GPUs its process tree holds memory on.
    type: list
    elements: int
notes:
  - Runs on the host that reaches the server (usually the server's own host), with the
    Python standard library only.
  - Time per level is about (warm-up + counted requests) / level x one request's latency.
  - C(changed) is V(true) only when O(output) was (or, in check mode, would be) written;
    the benchmark itself changes nothing.
seealso:
  - module: gpufleet.serving.benchmark_report
"""

EXAMPLES = r"""
- name: Benchmark the local SGLang server
  gpufleet.serving.llm_benchmark:
    base_url: http://127.0.0.1:30000
    input_len: 1024
    output_len: 512
    output: /var/tmp/bench/baseline.json
  register: bench_baseline

- name: Benchmark an EAGLE-3 server on the built-in natural-text set, keeping every request
  gpufleet.serving.llm_benchmark:
    base_url: http://127.0.0.1:30000
    workload:
      source: builtin
    levels: [1, 16, 64]
    request_records: /var/tmp/bench/eagle3.requests.jsonl

- name: Benchmark on a ShareGPT file kept on the controller, 500 items, reference output lengths
  gpufleet.serving.llm_benchmark:
    base_url: http://127.0.0.1:30000
    workload:
      source: file
      path: datasets/ShareGPT_V3_unfiltered_cleaned_split.json
      sample: 500
      output_len_mode: dataset
    ignore_eos: false

- name: Quick check at three levels over the chat endpoint
  gpufleet.serving.llm_benchmark:
    base_url: http://127.0.0.1:30000
    api: chat
    levels: [1, 16, 128]
    requests_per_level: 256
    warmup_requests: 0
"""

RETURN = r"""
levels:
  description: One entry per concurrency level, in the order run. Times are milliseconds.
  returned: success
  type: list
  elements: dict
  contains:
    concurrency:
      description: Requests kept in flight.
      type: int
      sample: 128
    requests:
      description: Counted requests.
      type: int
      sample: 256
    warmup_requests:
      description: Warm-up requests sent before the counted ones and not counted.
      type: int
      sample: 128
    completed:
      description: Counted requests that streamed output and ended without error.
      type: int
      sample: 255
    failed:
      description: Counted requests that failed (HTTP error, stream error, timeout, no output).
      type: int
      sample: 1
    errors:
      description: Up to O(max_error_samples) distinct error messages of failed requests.
      type: list
      elements: str
      sample: ["HTTP 500: {\"error\": ...}"]
    duration_s:
      description: Wall time from the first counted request sent to the last counted one ended.
      type: float
      sample: 27.6
    output_tokens:
      description: Tokens of completed requests that arrived inside the window (warm-up included).
      type: int
      sample: 65280
    input_tokens:
      description: Sum of C(usage.prompt_tokens) of the completed counted requests.
      type: int
      sample: 130560
    output_tok_s:
      description: RV(levels[].output_tokens) / RV(levels[].duration_s); null when no request of the level completed.
      type: float
      sample: 2370.4
    requests_per_s:
      description: >-
        Requests' work inside the window / RV(levels[].duration_s): a counted request counts 1, a
        warm-up request the share of its tokens that arrived inside the window (sglang.bench_serving's
        completed / duration when only counted requests run in the window).
      type: float
      sample: 9.3
    counted_output_tokens:
      description: Sum of C(usage.completion_tokens) of the completed counted requests (the content count where it is suspect).
      type: int
    failed_output_tokens:
      description: Tokens the failed counted requests received before they failed; never part of a rate.
      type: int
      sample: 0
    usage_suspect:
      description: >-
        Counted requests whose C(usage.completion_tokens) the stream cannot explain (negative, decreasing,
        fewer than the content chunks, more than C(max_tokens)); their content count was used.
      type: int
      sample: 0
    request_rate:
      description: The level's request rate (open loop); null for a closed-loop level.
      type: float
    goodput_requests:
      description: Counted requests meeting every SLO given; null without SLOs.
      type: int
    goodput_req_s:
      description: RV(levels[].goodput_requests) / RV(levels[].duration_s); null without SLOs.
      type: float
    itl_estimated:
      description: True when no request had per-chunk usage, so ITL spreads tokens evenly over chunks.
      type: bool
    level_span_s:
      description: The whole level, first request sent (warm-up included) to last ended.
      type: float
    level_output_tokens:
      description: Tokens the client received in the whole level (warm-up included).
      type: int
    server_tok_s:
      description: >-
        The server's generation-token counter delta over the level / RV(levels[].level_span_s);
        null without C(/metrics).
      type: float
    server_ratio:
      description: RV(levels[].level_output_tokens) / the counter delta (1.0 when every token was seen).
      type: float
    server_req_s:
      description: >-
        The server's finished-request counter delta (C(sglang:num_requests_total),
        C(vllm:request_success_total)) over the level / RV(levels[].level_span_s); null without C(/metrics).
      type: float
    ttft_ms:
      description: Time to first token, C(mean), C(p50), C(p90), C(p99).
      type: dict
      sample: {"mean": 812.1, "p50": 790.2, "p90": 1010.5, "p99": 1203.3}
    itl_ms:
      description: Inter-token latency per token (see description), C(mean), C(p50), C(p90), C(p99).
      type: dict
    itl_chunk_ms:
      description: >-
        Gap between consecutive content chunks, one entry a gap (sglang.bench_serving's ITL),
        C(mean), C(p50), C(p90), C(p99); on a speculative server about accept length x RV(levels[].itl_ms).
      type: dict
    tpot_ms:
      description: Time per output token after the first, C(mean), C(p50), C(p90), C(p99).
      type: dict
    latency_ms:
      description: End-to-end request latency, C(mean), C(p50), C(p90), C(p99).
      type: dict
    itl_token_source:
      description: Requests whose tokens per chunk came from C(usage) deltas, or an even spread (C(average)).
      type: dict
      sample: {"usage": 255, "average": 0}
    usage_missing:
      description: Completed requests without C(usage); their chunk count stood in for tokens.
      type: int
      sample: 0
    short_outputs:
      description: Completed requests with fewer than O(output_len) tokens (C(ignore_eos) not honoured).
      type: int
      sample: 0
    accept_length:
      description: Speculative acceptance length during this level; null when not speculative or unknown.
      type: float
      sample: 2.71
    accept_source:
      description: Where RV(levels[].accept_length) came from, C(metrics) or C(server_info); null when unknown.
      type: str
      sample: metrics
    repeats:
      description: >-
        With O(repeats) above 1: C(n), C(runs) (each run's C(output_tok_s), C(ttft_p50_ms), C(accept_length),
        C(completed) and C(failed)),
        and for each of those three figures C(n), C(mean), C(low) and C(high) (the 95% confidence interval,
        Student t; null bounds from one value). Absent with one run.
      type: dict
    energy_j:
      description: >-
        Joules the server's GPUs drew together over the measurement window (RV(levels[].duration_s)): each GPU's
        energy counter (C(nvmlDeviceGetTotalEnergyConsumption)) interpolated at the window's two ends, summed; where a
        GPU has no counter, its power integrated over the samples (C(energy_source) of RV(levels[].telemetry) says
        C(power_integral)). Present with O(telemetry); null when it could not be measured.
      type: float
      sample: 5120.4
    joules_per_output_token:
      description: RV(levels[].energy_j) / RV(levels[].output_tokens).
      type: float
      sample: 0.078
    output_tokens_per_joule:
      description: RV(levels[].output_tokens) / RV(levels[].energy_j) (tok/J).
      type: float
      sample: 12.75
    power_avg_w:
      description: RV(levels[].energy_j) / RV(levels[].duration_s), the GPUs together.
      type: float
    power_peak_w:
      description: The highest sum of the GPUs' C(nvmlDeviceGetPowerUsage) at one sample inside the window.
      type: float
    sm_clock_min_mhz:
      description: Lowest SM clock of any GPU in a busy sample (utilisation 50% or more) inside the window.
      type: int
    sm_clock_median_mhz:
      description: Median SM clock over the busy samples of every GPU inside the window.
      type: float
    throttled:
      description: >-
        True when a sample inside the window had a hardware slowdown, thermal or power-brake clocks-event reason
        (C(nvmlDeviceGetCurrentClocksEventReasons) 0x8, 0x20, 0x40, 0x80), or a busy SM clock below 75% of the GPU's
        default clock (nvbench's throttle threshold). Null when unknown.
      type: bool
      sample: false
    throttle_reasons:
      description: >-
        What made the level throttled - C(hw_slowdown), C(sw_thermal_slowdown), C(hw_thermal_slowdown),
        C(hw_power_brake_slowdown), C(sm_clock_below_75pct_of_default); empty when not throttled.
      type: list
      elements: str
    telemetry:
      description: >-
        How the figures above were measured - C(gpus), C(samples), C(interval_ms), C(window_s) (the window in
        CLOCK_MONOTONIC seconds), C(energy_source) (C(counter) or C(power_integral)), C(sm_clock_default_mhz) (per
        GPU), C(mem_clock_min_mhz), C(temperature_max_c), C(memory_used_max_mib), C(violation_s) (C(power) and
        C(thermal): the largest growth of a GPU's C(nvmlDeviceGetViolationStatus) over the level) and C(notes)
        (calls not supported, a sampler that stopped).
      type: dict
    categories:
      description: >-
        With a O(workload) whose items have categories, the level's counted requests per category:
        C(requests), C(completed), C(failed), C(output_tokens), C(input_tokens), C(ttft_ms), C(tpot_ms),
        C(latency_ms) (as the level's), and C(accept_length) (completion tokens / SGLang's per-request
        C(spec_verify_ct), with C(accept_source) C(request); null when the server gave none). C(output_tok_s)
        only with O(category_passes), from the category's own pass (C(output_tok_s_source) C(pass)), since the
        categories share the server within a level; then C(own_pass) holds the pass's C(requests), C(completed),
        C(failed), C(output_tok_s), C(level_output_tokens), C(level_span_s), C(server_tok_s), C(server_ratio),
        C(ttft_ms), C(tpot_ms), C(accept_length) and C(accept_source) (the counters around it), and
        C(request_accept_length) (per request, where the engine answers it), and where the level had no
        per-request acceptance, C(accept_length) is the pass's, with C(accept_source) C(pass_metrics) or
        C(pass_server_info). Null without categories.
      type: dict
summary:
  description: The sweep at a glance.
  returned: success
  type: dict
  contains:
    single_stream_tok_s:
      description: Output tok/s at concurrency 1 (null when 1 is not a level).
      type: float
      sample: 63.6
    peak_tok_s:
      description: Highest output tok/s of any level.
      type: float
      sample: 2370.0
    peak_concurrency:
      description: The level of RV(summary.peak_tok_s).
      type: int
      sample: 128
    accept_length:
      description: Mean acceptance length over the levels that have one.
      type: float
    completed:
      description: Completed counted requests, all levels.
      type: int
    failed:
      description: Failed counted requests, all levels.
      type: int
server:
  description:
    - What was measured - C(base_url), C(model) and C(engine) (the O(engine) given or detected, V(unknown) when it
      could not be told); C(flavor), the same as C(engine), is deprecated and will be removed in 2.0.0.
  returned: success
  type: dict
  sample: {"base_url": "http://127.0.0.1:30000", "model": "kimi-k2.5-int4", "engine": "sglang", "flavor": "sglang"}
workload:
  description: >-
    The prompts - C(source), and for a natural-text workload C(name) (built-in), C(path), C(format),
    C(sha256) (of the file), C(seed), C(sample) (items taken), C(available) (candidates after the
    category filter), C(categories_filter), C(categories) (items per category), C(multi_turn_items)
    and C(output_len_mode).
  returned: success
  type: dict
  sample: {"source": "builtin", "name": "builtin-v1", "sample": 80, "seed": 0, "categories": {"code": 10}}
telemetry:
  description: >-
    Whether GPU telemetry ran - C(enabled), C(gpus), C(gpus_from) (the O(gpus) option, the server's
    C(CUDA_VISIBLE_DEVICES), or the GPUs its processes hold memory on) and C(reason) (why it was off).
  returned: success
  type: dict
  sample: {"enabled": true, "gpus": [0, 1], "gpus_from": "the gpus option", "reason": null}
request_records:
  description: Absolute path of the per-request JSONL file on the host.
  returned: when O(request_records) is set
  type: str
request_records_to:
  description: O(request_records_to), once the records were copied there.
  returned: when O(request_records_to) is set, not in check mode
  type: str
config:
  description: The load (api, input_len, output_len, requests_per_level, warmup_requests, temperature).
  returned: success
  type: dict
started:
  description: UTC start time, ISO 8601.
  returned: success
  type: str
  sample: "2026-05-01T12:00:00+00:00"
elapsed:
  description: Seconds the whole sweep took.
  returned: success
  type: float
  sample: 412.5
output:
  description: Absolute path of the written JSON file.
  returned: when O(output) is set and not in check mode
  type: str
  sample: /var/tmp/bench/baseline.json
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils._bench import options
from ansible_collections.gpufleet.serving.plugins.module_utils._bench.run import benchmark
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.bench_telemetry import for_benchmark


def main():
    module = AnsibleModule(
        argument_spec=dict(
            base_url=dict(type="str", required=True, aliases=["url"]),
            model=dict(type="str"),
            api=dict(type="str", choices=["completions", "chat"]),
            request_records=dict(type="path"),
            # Taken by the action plugin (a controller path); listed so the documentation matches.
            request_records_to=dict(type="path"),
            temperature=dict(type="float", default=0.0),
            seed=dict(type="int", default=0),
            request_timeout=dict(type="float", default=600),
            max_error_samples=dict(type="int", default=5),
            api_key=dict(type="str", no_log=True),
            validate_certs=dict(type="bool", default=True),
            output=dict(type="path"),
            engine=dict(type="str", choices=["auto"] + registry.names(), default="auto", aliases=["flavor"],
                        deprecated_aliases=[dict(name="flavor", version="2.0.0", collection_name="gpufleet.serving")]),
            request_rates=dict(type="list", elements="float"),
            burstiness=dict(type="float", default=1.0),
            max_concurrency=dict(type="int"),
            range_ratio=dict(type="float", default=1.0),
            ignore_eos=dict(type="bool", default=True),
            connection=dict(type="str", choices=["keep_alive", "per_request"], default="keep_alive"),
            progress_file=dict(type="path"),
            telemetry=dict(type="bool"),
            gpus=dict(type="list", elements="int"),
            **options.argument_spec(),
        ),
        supports_check_mode=True,
    )
    run_module(module, benchmark, module.params, check_mode=module.check_mode, telemetry=for_benchmark)


if __name__ == "__main__":
    main()
