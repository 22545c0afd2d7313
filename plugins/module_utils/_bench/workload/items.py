# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One workload item, and the error every bad workload input raises."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput

# Roles an OpenAI-compatible chat endpoint accepts (SGLang and vLLM protocol.py).
ROLES = ("system", "developer", "user", "assistant", "tool", "function")


class WorkloadError(InvalidInput):
    """Bad workload input: the message names the file, the line or JSON path, and the field."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__("workload %s: %s" % (where, what), workload_error=where)


class Item:
    """One unit of work: a conversation sent as one request, or several when it has follow-ups.

    messages: the chat history of the first request (ends with the user's turn).
    followups: later user turns; each is sent after the model answered, with that answer
        added to the conversation as the assistant's turn (MT-Bench's second turn).
    output_len: the dataset's reference output length in tokens, or None.
    extra: further request fields the file gives (the openai format passes them through).
    ref: where the item came from (file and line or JSON path, or the built-in name).
    """

    __slots__ = ("ref", "category", "messages", "followups", "output_len", "extra", "estimated")

    def __init__(self, ref: str, category: str | None, messages: list, followups: tuple = (),
                 output_len: int | None = None, extra: dict | None = None, estimated: bool = False) -> None:
        self.ref = ref
        self.category = category
        self.messages = messages
        self.followups = tuple(followups)
        self.output_len = output_len
        self.extra = extra
        self.estimated = estimated  # output_len estimated from the reference text (no tokenizer here)

    @property
    def text(self) -> str | None:
        """The prompt as plain text when the item is one user turn (what /v1/completions can send)."""
        if len(self.messages) == 1 and not self.followups and self.messages[0].get("role") == "user":
            content = self.messages[0].get("content")
            return content if isinstance(content, str) else None
        return None

    @property
    def turns(self) -> int:
        return 1 + len(self.followups)
