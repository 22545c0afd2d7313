# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a request counts as, and which of its output tokens count: the one place the figures ask.

- Completed: HTTP 200, no error of any kind (a malformed or error event, a cut
  connection, a timeout) and at least one content chunk. Everything else failed.
  A failed request's tokens never enter tok/s, TPOT or ITL; the level reports them
  apart (`failed_output_tokens`), as sglang.bench_serving and AIPerf count only
  successful requests' output.
- Output tokens: the server's `usage.completion_tokens`, unless it is suspect
  (usage_problem); then the content count, one token per content chunk (every chunk
  that carries text carries at least one new token), a lower bound.
"""

from __future__ import annotations

import re
from typing import Any

# Our own request bodies are compact JSON; a key inside a prompt string has its quotes escaped.
_MAX_TOKENS = re.compile(rb'"(?:max_tokens|max_completion_tokens)":\s*(\d+)')


def requested_max_tokens(body: bytes) -> int | None:
    """The max_tokens a request body asks for, or None."""
    found = _MAX_TOKENS.search(body)
    return int(found.group(1)) if found else None


def completed(record: Any) -> bool:
    return record.error is None and record.status == 200 and bool(record.chunk_times)


def usage_problem(record: Any) -> str | None:
    """Why the server's usage count cannot be believed, or None when it can (or there is none).

    The count disagrees with what arrived by more than the chunks can explain when it is
    negative, fewer than the content chunks, more than the request's max_tokens (a server
    never sends more than it was asked), or when a running count (continuous usage)
    decreases or exceeds the final count.
    """
    final = record.completion_tokens
    if final is None:
        return None
    if final < 0:
        return "usage.completion_tokens is negative (%d)" % final
    limit = getattr(record, "max_tokens", None)
    if limit is not None and final > limit:
        return "usage.completion_tokens %d is more than the request's max_tokens %d" % (final, limit)
    prev = 0
    for count in record.chunk_cum:
        if count is None:
            continue
        if count < prev:
            return "the running usage count decreases (%d after %d)" % (count, prev)
        prev = count
    if final < prev:
        return "the final usage count decreases (%d after %d)" % (final, prev)
    if final < len(record.chunk_times):
        return "usage.completion_tokens %d is fewer than the %d content chunks" % (final, len(record.chunk_times))
    return None


def output_tokens(record: Any) -> int:
    """The request's output tokens: trusted usage, else the content count."""
    if record.completion_tokens is None or usage_problem(record):
        return len(record.chunk_times)
    return record.completion_tokens
