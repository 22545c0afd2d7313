# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The values llm_benchmark takes for its numeric options, asked by the module and by the experiment planner."""

from __future__ import annotations


def value_problems(params: dict) -> list:
    """(option, why) for each given option whose value llm_benchmark refuses; an option left out is none.

    The experiment planner asks the same before any host is touched, so a variant's `repeats: 0` is
    refused in the plan, not after both of its servers were launched."""
    found = []
    levels = params.get("levels")
    if levels and any(lv < 1 for lv in levels):
        found.append(("levels", "levels must all be >= 1, got %s" % levels))
    rates = params.get("request_rates") or []
    if any(r is None or r <= 0 for r in rates):
        found.append(("request_rates", "request_rates must all be > 0, got %s" % rates))
    if params.get("burstiness") is not None and params["burstiness"] <= 0:
        found.append(("burstiness", "burstiness must be > 0"))
    if params.get("max_concurrency") is not None and params["max_concurrency"] < 1:
        found.append(("max_concurrency", "max_concurrency must be >= 1"))
    ratio = params.get("range_ratio")
    if ratio is not None and not 0.0 < ratio <= 1.0:
        found.append(("range_ratio", "range_ratio must be in (0, 1], got %s" % ratio))
    for key in ("input_len", "output_len", "requests_per_level"):
        if params.get(key) is not None and params[key] < 1:
            found.append((key, "%s must be >= 1, got %s" % (key, params[key])))
    if params.get("repeats") is not None and params["repeats"] < 1:
        found.append(("repeats", "repeats must be >= 1, got %s" % params["repeats"]))
    if params.get("warmup_requests") is not None and params["warmup_requests"] < 0:
        found.append(("warmup_requests", "warmup_requests must be >= 0, got %s" % params["warmup_requests"]))
    return found
