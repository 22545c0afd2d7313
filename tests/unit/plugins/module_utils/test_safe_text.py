# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Results Ansible can carry (_safe_text.py): command lines that are not UTF-8 are escaped."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._safe_text import clean


def test_clean_escapes_non_utf8():
    bad = b"sglang::\xff\xfe".decode("utf-8", "surrogateescape")
    out = clean({"killed": [{"cmdline": bad, "pid": 3}], "msg": "ok \u00e9"})
    assert out == {"killed": [{"cmdline": "sglang::\\xff\\xfe", "pid": 3}], "msg": "ok \u00e9"}
    out["killed"][0]["cmdline"].encode("utf-8")
