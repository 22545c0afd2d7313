# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Measure how long a call takes (monotonic clock), and a clock tests move by hand."""
import time


def timed(func, *args, **kwargs):
    """func(*args, **kwargs) and the seconds it took."""
    t0 = time.monotonic()
    res = func(*args, **kwargs)
    return res, time.monotonic() - t0


class FakeClock:
    """A monotonic clock for code that takes `clock` and `sleep` callables: it reads NOW, and its sleep
    moves NOW on at once, so a poll with a deadline runs in no time."""

    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
