# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one poll-with-a-deadline loop the tests use instead of sleeps."""
import time


def poll(predicate, timeout=20.0, interval=0.02, what="condition"):
    """Return predicate()'s first true value; raise AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(interval)


def holds_within(predicate, timeout, interval=0.02):
    """True once predicate() is true, False if it is still false after `timeout` seconds."""
    try:
        poll(predicate, timeout, interval)
        return True
    except AssertionError:
        return False
