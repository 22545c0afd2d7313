# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Regex matching under a time budget (_proc/match_bounded.py): a catastrophic pattern fails in
its budget, named; many ordinary patterns each get their own budget; nothing is checked twice."""

from __future__ import annotations

import re
import time

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._proc.match_bounded import BoundedMatcher


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
