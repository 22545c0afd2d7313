"""The central batch loop: every running request advances together, one step at a time.

One thread owns the batch. A step's length comes from perf.Model for the batch size at
that step, so latency and throughput under concurrency follow the calibrated curve.
Requests over --max-running-requests wait in a queue. Each step hands each request its
new tokens (several at once under EAGLE-3) through the request's own queue. How many a
verify step accepts depends on the text the request continues (_simcore.text).
Engine-neutral: an engine's own per-batch log lines come from the `batch_log` it passes
(SGLang's "Prefill batch" / "Decode batch" lines: sglang/_sim/batchlog.py).
"""
import collections
import hashlib
import queue
import random
import threading
import time

from _simcore import gpus, text

WORDS = ("the", "model", "server", "token", "of", "a", "GPU", "to", "and", "batch", "is",
         "in", "fleet", "request", "memory", "cache", "that", "for", "with", "draft")
# Steps per throughput/acceptance window (the figures a batch log prints, /server_info's
# last_gen_throughput): SGLang's --decode-log-interval default, 40.
WINDOW_STEPS = 40


class Request:
    def __init__(self, rid, prompt_tokens, max_new_tokens, ignore_eos, seed_material, eos_prob, accept_score=0.0):
        self.rid = rid
        self.accept_score = accept_score  # text.predictability of the prompt
        self.prompt_tokens = prompt_tokens
        self.max_new_tokens = max(1, int(max_new_tokens))
        self.ignore_eos = ignore_eos
        digest = hashlib.sha256(seed_material.encode("utf-8", "replace")).digest()
        self.rng = random.Random(int.from_bytes(digest[:8], "big"))
        self.eos_prob = eos_prob
        self.completion_tokens = 0
        self.spec_verify_ct = 0
        self.spec_num_correct_drafts = 0  # accepted drafted tokens, the bonus token excluded
        self.spec_correct_drafts_histogram = []  # verify steps by their correct drafts
        self.finish_reason = None
        self.aborted = False
        self.streaming = False  # the is_streaming label of its metrics
        self.log_metrics = True  # False for /health's probe, as real
        self.events = queue.SimpleQueue()  # (texts: list[str], finished: bool)

    def take(self, n):
        """Produce up to n tokens; stops at max_new_tokens or a drawn EOS."""
        texts = []
        for unused in range(n):
            self.completion_tokens += 1
            if not self.ignore_eos and self.rng.random() < self.eos_prob:
                self.finish_reason = "stop"
                break
            texts.append(" " + WORDS[self.rng.randrange(len(WORDS))])
            if self.completion_tokens >= self.max_new_tokens:
                self.finish_reason = "length"
                break
        return texts


class Stats:
    """Counters as real SGLang keeps them: the request counters grow when a request finishes
    (TokenizerMetricsCollector.observe_one_finished_request, sglang/srt/observability/
    metrics_collector.py), per is_streaming label; spec_verify_calls by its spec_verify_ct.
    spec_verify_total/spec_accepted_total are live, for the scheduler's gauges."""

    def __init__(self):
        # is_streaming ("true"/"false") -> [prompt tokens, generation tokens, requests]
        self.finished = {"false": [0, 0, 0], "true": [0, 0, 0]}
        self.by_reason = collections.Counter()  # finished requests by finish_reason ("stop", "length")
        self.spec_verify_calls_total = 0
        self.spec_verify_total = 0
        self.spec_accepted_total = 0
        self.running = 0
        self.queued = 0
        self.gen_throughput = 0.0
        self.last_accept_length = 0.0
        self.last_accept_rate = 0.0

    def finish(self, req):
        if not req.log_metrics:
            return
        row = self.finished["true" if req.streaming else "false"]
        row[0] += req.prompt_tokens
        row[1] += req.completion_tokens
        row[2] += 1
        self.by_reason[req.finish_reason] += 1
        self.spec_verify_calls_total += req.spec_verify_ct

    @property
    def generation_tokens_total(self):
        return sum(row[1] for row in self.finished.values())

    def avg_accept_rate(self, draft_tokens):
        """Share of drafted tokens accepted (the bonus token of each verify step excluded)."""
        if not self.spec_verify_total or draft_tokens < 2:
            return 0.0
        drafted = self.spec_verify_total * (draft_tokens - 1)
        return (self.spec_accepted_total - self.spec_verify_total) / drafted

    def avg_accept_length(self):
        return self.spec_accepted_total / self.spec_verify_total if self.spec_verify_total else 0.0


class Engine:
    def __init__(self, model, max_running, accept_length, max_total_tokens, batch_log=None):
        """batch_log: an object with prefill(...) and decode(...) (see _admit, _end_window)
        that writes the engine's per-batch log lines; None writes none."""
        self.model = model
        self.batch_log = batch_log
        self.max_running = max_running
        self.accept_length = accept_length
        self.max_total_tokens = max(1, max_total_tokens)
        self.stats = Stats()
        self._cond = threading.Condition()
        self._waiting = collections.deque()
        self._running = []
        self._thread = threading.Thread(target=self._loop, name="engine", daemon=True)
        self._load = gpus.LoadReporter()  # the fake GPUs draw power by the batch's size

    def start(self):
        self._thread.start()

    def submit(self, req):
        with self._cond:
            self._waiting.append(req)
            self._count()
            self._cond.notify()

    def pending_rids(self):
        with self._cond:
            return [r.rid for r in self._running] + [r.rid for r in self._waiting]

    def counts(self):
        """(running, waiting) requests at this moment: what the engines' gauges report."""
        with self._cond:
            return len(self._running), len(self._waiting)

    def token_usage(self):
        with self._cond:
            return self._usage()

    def abort_all(self):
        """End every running and waiting request with finish_reason "abort" (their handlers get
        a last, empty event); the batch loop drops them. The requests, as they were."""
        with self._cond:
            reqs = list(self._running) + list(self._waiting)
            self._waiting.clear()
            for req in reqs:
                req.aborted = True
                req.finish_reason = "abort"
                req.events.put(([], True))
            self._count()
        return reqs

    def _count(self):
        """Keep the running/queued gauges current at every change of the lists (lock held), so a
        scrape between two steps sees each request as running or waiting, never neither."""
        self.stats.running = len(self._running)
        self.stats.queued = len(self._waiting)

    def _accepted(self, req):
        """Accepted length of one verify step: 1 + Binomial(D-1, p), p from the request's text."""
        d = self.model.draft_tokens
        p = text.accept_probability(self.accept_length, d, req.accept_score)
        return 1 + sum(1 for unused in range(d - 1) if req.rng.random() < p)

    def _work_share(self, k):
        """The GPUs' load at a batch of k: the share of a step spent on the batch's tokens rather
        than its fixed cost (perf.Model: 1 - a / step(k)), 0.02 at one request, 0.71 at 128 in the
        seed's calibration."""
        step = self.model.step_seconds(k)
        return 1.0 - self.model.a / step if step > 0 else 0.0

    def _admit(self):
        new = []
        while self._waiting and len(self._running) < self.max_running:
            req = self._waiting.popleft()
            if not req.aborted:
                self._running.append(req)
                new.append(req)
        self._count()
        if new and self.batch_log is not None:
            self.batch_log.prefill(new_seqs=len(new), new_tokens=sum(r.prompt_tokens for r in new),
                                   usage=self._usage(), running=len(self._running) - len(new),
                                   queued=len(self._waiting))

    def _usage(self):
        used = sum(r.prompt_tokens + r.completion_tokens for r in self._running)
        return used / self.max_total_tokens

    def _loop(self):
        step_end = 0.0
        steps = 0
        window = [time.monotonic(), 0, 0, 0]  # start, tokens, verify steps, accepted
        while True:
            with self._cond:
                self._admit()
                while not self._running:
                    self._count()
                    self._load.report(0)
                    self._cond.wait()
                    self._admit()
                    step_end = time.monotonic()  # the schedule restarts after idling
                batch = list(self._running)
            self._load.report(self._work_share(len(batch)))
            # Steps follow an absolute schedule, so time lost to the GIL in one step is made
            # up in the next instead of slowing the modelled GPU down.
            step_end += self.model.step_seconds(len(batch))
            delay = step_end - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -0.25:
                step_end = time.monotonic()  # fell far behind: do not burst to catch up
            self._step(batch, window)
            steps += 1
            if steps % WINDOW_STEPS == 0:
                self._end_window(window, len(batch))
                window = [time.monotonic(), 0, 0, 0]
            with self._cond:
                self._running = [r for r in self._running if r.finish_reason is None and not r.aborted]
                self._count()

    def _step(self, batch, window):
        produced = 0
        for req in batch:
            if req.aborted:
                continue
            n = self._accepted(req) if self.model.speculative else 1
            n = min(n, req.max_new_tokens - req.completion_tokens)
            before = req.completion_tokens
            texts = req.take(n)
            got = req.completion_tokens - before
            produced += got
            if self.model.speculative:
                req.spec_verify_ct += 1
                correct = max(got - 1, 0)
                req.spec_num_correct_drafts += correct
                hist = req.spec_correct_drafts_histogram
                hist.extend([0] * (correct + 1 - len(hist)))
                hist[correct] += 1  # schedule_batch.py update_spec_correct_drafts_histogram
                window[2] += 1
                window[3] += got
                with self._cond:
                    self.stats.spec_verify_total += 1
                    self.stats.spec_accepted_total += got
            if req.finish_reason is not None:
                # Counted before the last chunk goes out, as the tokenizer manager observes a
                # finished request before answering: a client that reads /metrics after its
                # last response sees it counted.
                with self._cond:
                    self.stats.finish(req)
            req.events.put((texts, req.finish_reason is not None))
        window[1] += produced
        return produced

    def _end_window(self, window, running):
        elapsed = max(time.monotonic() - window[0], 1e-9)
        self.stats.gen_throughput = window[1] / elapsed
        accept = None
        if self.model.speculative and window[2]:
            length = window[3] / window[2]
            rate = (window[3] - window[2]) / (window[2] * max(self.model.draft_tokens - 1, 1))
            self.stats.last_accept_length, self.stats.last_accept_rate = length, rate
            accept = (length, rate)
        if self.batch_log is not None:
            self.batch_log.decode(running=running, tokens=int(self._usage() * self.max_total_tokens),
                                  usage=self._usage(), accept=accept, throughput=self.stats.gen_throughput,
                                  queued=self.stats.queued)
