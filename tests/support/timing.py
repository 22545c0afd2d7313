# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Measure how long a call takes (monotonic clock)."""
import time


def timed(func, *args, **kwargs):
    """func(*args, **kwargs) and the seconds it took."""
    t0 = time.monotonic()
    res = func(*args, **kwargs)
    return res, time.monotonic() - t0
