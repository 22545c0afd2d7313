# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The batch-failure policy of the fleet playbooks: whether a new batch of hosts may start."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

# A host whose record has one of these outcomes has not run yet: it counts neither way.
NOT_DONE = (None, "pending", "not_started")


def halt_batch(results: Iterable[Any], max_fail_percentage: Any = 100) -> bool:
    """Whether a new batch may not start: more than MAX_FAIL_PERCENTAGE of the hosts done so
    far (RESULTS with an outcome other than pending / not_started; None entries ignored) failed."""
    done = [r for r in results if isinstance(r, Mapping) and r.get("outcome") not in NOT_DONE]
    if not done:
        return False
    failed = [r for r in done if r.get("outcome") == "failed"]
    return 100.0 * len(failed) / len(done) > float(100 if max_fail_percentage is None else max_fail_percentage)
