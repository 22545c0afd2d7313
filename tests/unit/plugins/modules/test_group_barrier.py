# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/group_barrier.py documents the group_barrier action (plugins/action/group_barrier.py): the options it
documents are the action's ARGUMENT_SPEC (names, types, required, defaults, elements)."""

from __future__ import annotations

from tests.support import module_docs


def test_documented_options_are_the_action_spec():
    assert module_docs.action_mismatches("group_barrier") == []
