# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Regex matching that cannot hang the release.

Python's re backtracks: `(\\w+\\s?)+::scheduler` against a bystander with a
32-character argument runs for minutes, and re cannot be interrupted. Before
the module matches its patterns against a process table, the same searches run
in a forked child; each pattern has a budget of its own (a list of 500 ordinary
patterns takes as long as they take together, within the task's timeout), and a
pattern that does not finish within its budget, or before the task's deadline,
fails the task with its name, and the child is killed. Command lines already
checked are remembered, so rescans of a table that did not change fork nothing.
"""

from __future__ import annotations

import os
import select
import signal
import time

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput

PATTERN_BUDGET = 2.0  # seconds one pattern may take over one snapshot's command lines


class BoundedMatcher:
    def __init__(self, regexes: list) -> None:
        self.regexes = [r for r in regexes if r is not None]
        self.checked = set()

    def check(self, cmdlines: list, deadline: float) -> None:
        """Run every regex over the new `cmdlines` in a child; raise InvalidInput if one runs past the budget."""
        todo = sorted({c for c in cmdlines if c not in self.checked})
        if not todo or not self.regexes:
            return
        done, spent, cut_by_deadline = _run_child(self.regexes, todo, PATTERN_BUDGET, max(0.05, deadline - time.monotonic()))
        if done < len(self.regexes):
            slow = self.regexes[done]
            if cut_by_deadline and spent < PATTERN_BUDGET:
                why = ("the task's timeout ran out after %.2f s of it (%d of %d patterns had finished); "
                       "give a longer timeout, fewer patterns, or rewrite this one if it is slow"
                       % (spent, done, len(self.regexes)))
            else:
                why = ("its own budget is %.1f s (catastrophic backtracking, e.g. a nested quantifier like "
                       "'(\\w+\\s?)+'); rewrite it without nested repetition, e.g. 'sglang::scheduler'"
                       % PATTERN_BUDGET)
            raise InvalidInput(
                "pattern %r did not finish matching this host's %d command lines: %s; nothing was signalled"
                % (slow.pattern, len(todo), why))
        self.checked.update(todo)


def _run_child(regexes, cmdlines, budget, total):
    """(how many regexes finished, seconds the first unfinished one ran, whether `total` cut it).

    Each regex (in order) may search every command line for `budget` s, counted from
    the end of the one before; all of them together for at most `total` s.
    """
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(rfd)
            for index, regex in enumerate(regexes):
                for text in cmdlines:
                    regex.search(text)
                os.write(wfd, b"%d\n" % (index + 1))
        finally:
            os._exit(0)
    os.close(wfd)
    done, buf = 0, b""
    start = time.monotonic()
    end = start + total
    mark = start  # when the pattern now running started
    try:
        while done < len(regexes):
            left = min(end, mark + budget) - time.monotonic()
            if left <= 0 or not select.select([rfd], [], [], left)[0]:
                break
            chunk = os.read(rfd, 4096)
            if not chunk:
                break
            buf += chunk
            lines = buf.split(b"\n")
            buf = lines[-1]
            if len(lines) > 1:
                done = int(lines[-2])
                mark = time.monotonic()
    finally:
        os.close(rfd)
        if done < len(regexes):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.waitpid(pid, 0)
    now = time.monotonic()
    return done, now - mark, now >= end
