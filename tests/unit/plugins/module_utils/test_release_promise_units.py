# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_release's promises under attack at the module_utils level, on real processes this test starts.

Thread groups whose leader exited, SIGTERM that cannot act, bounded matching, UTF-8
results, input checks. The end-to-end tests are tests/integration/test_release_promises.py.
"""

from __future__ import annotations

import re
import time

import psutil
import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import release
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.args import finite, known_users, regex_list
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.patterns import ENGINE_PATTERNS
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import signals as sig
from ansible_collections.gpufleet.serving.plugins.module_utils._proc import threads as _threads
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.match_bounded import BoundedMatcher
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import ProcInfo
from ansible_collections.gpufleet.serving.plugins.module_utils._safe_text import clean
from tests.support.polling import poll
from tests.support.procfs import state as proc_state

READY = "print('ready', flush=True); sys.stdin.read()"
CODES = {
    "default": "import sys; " + READY,
    "ignored": "import signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); " + READY,
    "blocked": "import signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM]); " + READY,
    "caught": "import signal, sys; signal.signal(signal.SIGTERM, lambda *a: None); " + READY,
}
LEADER_EXIT = ("import ctypes, sys, threading, time\n"
               "threading.Thread(target=lambda: time.sleep(3600)).start()\n"
               "print('ready', flush=True)\n"
               "ctypes.CDLL(None).pthread_exit(None)\n")


def info_of(pid):
    p = psutil.Process(pid)
    return ProcInfo(pid, p.ppid(), p.create_time(), p.username(), p.cmdline(), p.name(), p.status())


@pytest.mark.parametrize("kind, why", [("default", None), ("caught", None), ("ignored", "SIGTERM ignored"),
                                       ("blocked", "SIGTERM blocked by every thread")])
def test_term_blocked_reads_proc_status(own_procs, kind, why):
    proc = own_procs.python(CODES[kind])
    assert proc.stdout.readline().strip() == "ready"
    assert _threads.term_blocked(proc.pid) == why


def test_sigterm_ignored_gets_sigkill_at_once(own_procs):
    proc = own_procs.python(CODES["ignored"])
    assert proc.stdout.readline().strip() == "ready"
    target = sig.Target(info_of(proc.pid), "pattern")
    t0 = time.monotonic()
    assert sig.release([target], term_timeout=10, deadline=t0 + 20) == []
    assert time.monotonic() - t0 < 2.0  # not term_timeout
    assert target.signals == ["SIGKILL"] and target.result()["sigkill_at_once"] == "SIGTERM ignored"


def test_every_target_is_read_before_the_first_signal(own_procs, monkeypatch):
    # A parent's SIGTERM handler that ends its children must not beat our signal to them:
    # reading /proc between two signals (old code) left that window open on a loaded host.
    procs = [own_procs.python(CODES[kind]) for kind in ("default", "ignored", "caught")]
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready"
    events = []
    real_term_blocked, real_send = sig.term_blocked, sig.Target.send
    monkeypatch.setattr(sig, "term_blocked", lambda pid: events.append(("read", pid)) or real_term_blocked(pid))
    monkeypatch.setattr(sig.Target, "send", lambda self, s, now: events.append(("signal", self.pid)) or real_send(self, s, now))
    targets = [sig.Target(info_of(proc.pid), "pattern") for proc in procs]
    t0 = time.monotonic()
    assert sig.release(targets, term_timeout=0.5, deadline=t0 + 20) == []
    kinds = [kind for kind, _pid in events]
    assert kinds[:3] == ["read"] * 3 and "read" not in kinds[3:], events
    assert [t.signals[0] for t in targets] == ["SIGTERM", "SIGKILL", "SIGTERM"]


@pytest.fixture
def leader_exited(own_procs):
    proc = own_procs.python(LEADER_EXIT, "gf-probe-arg")
    assert proc.stdout.readline().strip() == "ready"
    poll(lambda: proc_state(proc.pid) == "Z", 10, 0.01, what="main thread to exit")
    return proc


def test_exited_leader_counts_as_alive_named_and_signalled(leader_exited):
    pid = leader_exited.pid
    assert _threads.leader_exited(pid) and len(_threads.live_tasks(pid)) == 1
    assert _threads.group_cmdline(pid).endswith("gf-probe-arg")
    # The live thread sleeps in a loop; on a loaded machine it may be caught running.
    live = re.compile(r"(sleeping|running) \(main thread exited, 1 thread live\)")
    assert live.fullmatch(_threads.group_state(pid)), _threads.group_state(pid)
    info = ProcInfo(pid, 1, psutil.Process(pid).create_time(), "root", [], "python", "zombie")
    target = sig.Target(info, "descendant")
    assert target.gone is False  # before: a zombie leader counted as gone, never signalled
    assert live.fullmatch(target.state()), target.state()
    assert sig.release([target], term_timeout=5, deadline=time.monotonic() + 10) == []
    assert target.signals == ["SIGTERM"]
    assert target.result()["cmdline"].endswith("gf-probe-arg")
    assert leader_exited.wait(timeout=10) == -15


def test_catastrophic_pattern_fails_in_budget_naming_it():
    matcher = BoundedMatcher([re.compile("sglang::"), re.compile(r"(\w+\s?)+::scheduler")])
    t0 = time.monotonic()
    with pytest.raises(InvalidInput) as err:
        matcher.check(["python3 job.py " + "a" * 32], time.monotonic() + 1.0)
    assert time.monotonic() - t0 < 3.0
    assert err.value.msg.startswith("pattern '(\\\\w+\\\\s?)+::scheduler' did not finish matching")


# About 1,000 command lines of a busy host, and ordinary patterns that cost a few ms each over them.
BUSY_HOST = ["/usr/bin/python3 /opt/jobs/worker_%d.py --config /etc/jobs/%d.yaml %s"
             % (i, i, " ".join("--opt%d=value%d" % (j, j) for j in range(20))) for i in range(1008)]


def test_many_ordinary_patterns_each_get_their_own_budget():
    """500 patterns of ~5 ms each take longer together than one pattern's budget: not backtracking."""
    regexes = [re.compile(r"[a-z]+_gf%03d::" % i) for i in range(500)]
    t0 = time.monotonic()
    BoundedMatcher(regexes).check(BUSY_HOST, time.monotonic() + 120)
    assert time.monotonic() - t0 > 0.5  # the list really costs something (2.8 s here unloaded)


def test_slow_pattern_among_many_is_the_one_named():
    slow = r"(\w+\s?)+::scheduler"
    regexes = [re.compile(r"[a-z]+_gf%03d::" % i) for i in range(20)] + [re.compile(slow)]
    with pytest.raises(InvalidInput) as err:
        BoundedMatcher(regexes).check(BUSY_HOST[:3] + ["python3 job.py " + "a" * 32], time.monotonic() + 60)
    assert err.value.msg.startswith("pattern %r did not finish matching" % slow), err.value.msg
    assert "its own budget is 2.0 s" in err.value.msg


def test_benign_patterns_pass_and_are_not_checked_twice():
    matcher = BoundedMatcher([re.compile("sglang::")])
    matcher.check(["sglang::scheduler_TP0", "bash"], time.monotonic() + 5)
    assert matcher.checked == {"sglang::scheduler_TP0", "bash"}
    matcher.check(["bash"], time.monotonic() - 1)  # nothing new: no child, no deadline trouble


def test_clean_escapes_non_utf8():
    bad = b"sglang::\xff\xfe".decode("utf-8", "surrogateescape")
    out = clean({"killed": [{"cmdline": bad, "pid": 3}], "msg": "ok \u00e9"})
    assert out == {"killed": [{"cmdline": "sglang::\\xff\\xfe", "pid": 3}], "msg": "ok \u00e9"}
    out["killed"][0]["cmdline"].encode("utf-8")


@pytest.mark.parametrize("value, expected", [
    (["a{1,2}", "b"], ["a{1,2}", "b"]),
    ("a|b,c", ["a|b", "c"]),
    ("sglang::", ["sglang::"]),
    (None, []),
])
def test_regex_list_accepts(value, expected):
    assert regex_list(value, "patterns") == expected


@pytest.mark.parametrize("value", ["sglang::scheduler_TP[0-9]{1,2}", "x[,;]y", "(a,b)"])
def test_regex_list_refuses_a_split_that_cuts_a_regex(value):
    with pytest.raises(InvalidInput, match="pass patterns as a YAML list"):
        regex_list(value, "patterns")


@pytest.mark.parametrize("value", [[None], ["sglang::", None]])
def test_regex_list_refuses_a_null_item_instead_of_matching_the_word_none(value):
    with pytest.raises(InvalidInput, match="patterns: item %d is null" % len(value)):
        regex_list(value, "patterns")


@pytest.mark.parametrize("value, strict", [(float("nan"), False), (float("inf"), False), (-1.0, False),
                                           (0.0, True), (None, False)])
def test_finite_refuses(value, strict):
    with pytest.raises(InvalidInput, match=r"^timeout must be x \(got"):
        finite(value, "timeout must be x", strict=strict)


def test_known_users():
    known_users(["root"])
    with pytest.raises(InvalidInput, match="no such user on this host: 'gf_no_such_user'"):
        known_users(["root", "gf_no_such_user"])


def test_eperm_message_for_a_non_root_user_says_become(monkeypatch):
    from ansible_collections.gpufleet.serving.plugins.module_utils._errors import GpuFleetError
    from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import release as _release

    class Denied:  # the parts of a _signals.Target that _fail_if_denied reads
        pid, denied, signals, info = 4242, True, [], ProcInfo(4242, 1, 0.0, "root", ["sglang::x"], "x", "sleeping")

        def result(self):
            return {"pid": self.pid, "cmdline": "sglang::x", "user": "root", "error": "not permitted to signal: EPERM"}

        def state(self):
            return "sleeping"

        def close(self):
            pass

    releaser = _release.Releaser.__new__(_release.Releaser)
    releaser.start = time.monotonic()
    monkeypatch.setattr(_release.os, "geteuid", lambda: 65534)
    with pytest.raises(GpuFleetError) as err:
        releaser._fail_if_denied([Denied()], {})  # pylint: disable=protected-access
    assert err.value.msg == ("not permitted to signal: pid 4242 (sglang::x) of user root; this module runs as "
                             "user nobody: run the task with become: true (or as the owner of these processes)")


def _release_params(**given):
    params = {k: None for k in release.ReleaseOptions.FIELDS}
    params.update(patterns=[], engine=None, sweep=True)
    params.update(given)
    return params


@pytest.mark.parametrize("engine, patterns, expected", [
    (None, [], []),  # unset: today's behaviour, no pattern at all
    ([], ["sglang::"], ["sglang::"]),
    (["vllm"], [], ENGINE_PATTERNS["vllm"]),
    (["vllm"], ["my_job"], ["my_job"] + ENGINE_PATTERNS["vllm"]),
    (["any"], [r"VLLM::"], [r"VLLM::"] + [p for pats in ENGINE_PATTERNS.values() for p in pats if p != r"VLLM::"]),
    (["sglang", "vllm"], [], ENGINE_PATTERNS["sglang"] + ENGINE_PATTERNS["vllm"]),
])
def test_engine_adds_its_kill_set_to_patterns(monkeypatch, engine, patterns, expected):
    seen = {}

    class Recorder:
        def __init__(self, opts, check_mode=False):
            seen["patterns"] = opts.patterns

        def run(self):
            return {"changed": False}

    monkeypatch.setattr(release, "Releaser", Recorder)
    release.release_gpus(_release_params(engine=engine, patterns=patterns))
    assert seen["patterns"] == expected


def test_unknown_engine_refused_before_anything_runs(monkeypatch):
    monkeypatch.setattr(release, "Releaser", None)  # would fail loudly if reached
    with pytest.raises(InvalidInput, match="unknown engine 'trt'"):
        release.release_gpus(_release_params(engine=["trt"]))
