# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_deps.py: the libraries a module needs, every missing one named in one message with this
interpreter's pip line and the role that installs them. A library is made missing by the import
system's own rule: a None in sys.modules makes its import raise ImportError."""

from __future__ import annotations

import sys

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils import _deps
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import MissingLibrary


def test_installed_libraries_are_not_missing():
    assert _deps.missing("psutil") == []
    _deps.check("psutil")


def test_every_missing_library_is_named_once_in_order(monkeypatch):
    monkeypatch.setitem(sys.modules, "psutil", None)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert _deps.missing("nvidia-ml-py", "psutil") == ["nvidia-ml-py", "psutil"]
    with pytest.raises(MissingLibrary) as err:
        _deps.check("psutil", "nvidia-ml-py")
    msg = err.value.msg
    assert msg.startswith("Failed to import the required Python library (psutil, nvidia-ml-py)")
    assert "Set the host up with the gpufleet.serving.host_setup role" in msg
    assert msg.endswith("%s -m pip install psutil nvidia-ml-py" % sys.executable)
    assert err.value.fail_fields()["missing_library"] is True
