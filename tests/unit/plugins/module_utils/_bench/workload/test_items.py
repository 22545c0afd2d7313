# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_bench/workload/items.py: an item's plain text only for one user turn, its turn count, and the
error a bad workload raises, naming where."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.workload.items import Item, WorkloadError
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput


def test_plain_text_only_for_one_user_turn():
    assert Item("f:1", None, [{"role": "user", "content": "hi"}]).text == "hi"
    assert Item("f:2", None, [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]).text is None
    assert Item("f:3", None, [{"role": "user", "content": "hi"}], followups=["more"]).text is None
    assert Item("f:4", None, [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]).text is None


def test_turns_count_the_followups():
    item = Item("f:1", "math", [{"role": "user", "content": "a"}], followups=["b", "c"], output_len=5)
    assert item.turns == 3 and item.followups == ("b", "c") and item.estimated is False


def test_the_error_names_where_and_is_bad_input():
    err = WorkloadError("prompts.jsonl line 3", "the item has no prompt")
    assert isinstance(err, InvalidInput) and err.msg == "workload prompts.jsonl line 3: the item has no prompt"
