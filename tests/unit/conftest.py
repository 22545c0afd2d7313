# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared fixtures for unit tests that start real processes.

`own_procs` starts Python children and adopts their descendants by PID; at the
end of the test every one of them that still runs is SIGKILLed through a pidfd
taken while it was alive (so a PID reused in between is never hit), and every
direct child is reaped. Nothing is ever killed by name or pattern.
"""

from __future__ import annotations

import pytest

from tests.support.processes import OwnProcesses


@pytest.fixture
def own_procs():
    own = OwnProcesses()
    yield own
    own.stop_all()
