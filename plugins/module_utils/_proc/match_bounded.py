# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Regex matching that cannot hang the release.

Python's re backtracks: `(\\w+\\s?)+::scheduler` against a bystander with a
32-character argument runs for minutes, and re cannot be interrupted. Before
the module matches its patterns against a process table, the same searches run
in a forked child under a deadline; a pattern that does not finish in time fails
the task with its name, and the child is killed. Command lines already checked
are remembered, so rescans of a table that did not change fork nothing.
"""

from __future__ import annotations

import os
import select
import signal
import time

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput

MATCH_BUDGET = 2.0  # seconds any one snapshot's pattern matching may take


class BoundedMatcher:
    def __init__(self, regexes: list) -> None:
        self.regexes = [r for r in regexes if r is not None]
        self.checked = set()

    def check(self, cmdlines: list, deadline: float) -> None:
        """Run every regex over the new `cmdlines` in a child; raise InvalidInput if one runs past the budget."""
        todo = sorted({c for c in cmdlines if c not in self.checked})
        if not todo or not self.regexes:
            return
        budget = max(0.05, min(MATCH_BUDGET, deadline - time.monotonic()))
        done = _run_child(self.regexes, todo, budget)
        if done < len(self.regexes):
            slow = self.regexes[done]
            raise InvalidInput(
                "pattern %r did not finish matching this host's %d command lines within %.1f s "
                "(catastrophic backtracking, e.g. a nested quantifier like '(\\w+\\s?)+'); "
                "nothing was signalled; rewrite it without nested repetition, e.g. 'sglang::scheduler'"
                % (slow.pattern, len(todo), budget))
        self.checked.update(todo)


def _run_child(regexes, cmdlines, budget):
    """How many regexes (in order) finished searching every command line within `budget` s."""
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
    end = time.monotonic() + budget
    try:
        while done < len(regexes):
            left = end - time.monotonic()
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
    finally:
        os.close(rfd)
        if done < len(regexes):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.waitpid(pid, 0)
    return done
