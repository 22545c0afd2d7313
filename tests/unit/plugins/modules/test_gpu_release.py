# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/gpu_release.py: the options it documents (fragments merged, as ansible-doc reads them) are its
real argument spec, names and defaults, read from the module itself (tests/support/module_docs.py);
its runs kill by pattern, so they are in a PID namespace of their own: tests/integration/test_gpu_release.py and test_release_*.py."""

from __future__ import annotations

from tests.support import module_docs


def test_documented_options_are_the_argument_spec():
    assert module_docs.mismatches("gpu_release") == []
