# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""batch.py: a new batch starts unless more than the allowed share of the hosts done failed."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report.batch import halt_batch


def rec(outcome):
    return {"host": "h", "outcome": outcome}


@pytest.mark.parametrize("results, pct, halted", [
    ([], 0, False),  # nothing done yet: nothing to judge
    ([rec("pending"), rec("not_started"), None, rec(None)], 0, False),  # none of these is done
    ([rec("failed")], 100, False),  # 100 %: never halts
    ([rec("failed")], None, False),  # None reads as the default, 100
    ([rec("ok"), rec("failed")], 50, False),  # exactly 50 %: not more than
    ([rec("ok"), rec("failed")], 49, True),
    ([rec("ok"), rec("failed"), rec("pending")], 49, True),  # the pending host does not dilute it
    ([rec("ok")], 0, False),
    ([rec("failed")], "0", True),  # a play variable may arrive as a string
])
def test_halt_batch(results, pct, halted):
    assert halt_batch(results, pct) is halted
