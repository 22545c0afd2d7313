# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/server_wait.py: the options it documents (fragments merged, as ansible-doc reads them) are its
real argument spec, names and defaults, read from the module itself (tests/support/module_docs.py);
its runs wait on a server: tests/integration/test_server_wait*.py."""

from __future__ import annotations

from tests.support import module_docs


def test_documented_options_are_the_argument_spec():
    assert module_docs.mismatches("server_wait") == []
