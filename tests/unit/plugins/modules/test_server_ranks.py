# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/server_ranks.py: the options it documents are its real argument spec (tests/support/module_docs.py);
its loop: tests/unit/plugins/module_utils/_server/test_group_ranks.py; on a simulated two-host fleet:
tests/integration/test_server_group.py."""

from __future__ import annotations

from tests.support import module_docs


def test_documented_options_are_the_argument_spec():
    assert module_docs.mismatches("server_ranks") == []
