# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Errors the collection's logic raises; modules turn them into fail_json."""

from __future__ import annotations


class GpuFleetError(Exception):
    """A failure with a message meant for the person running the play."""

    def __init__(self, msg, **details):
        super().__init__(msg)
        self.msg = msg
        self.details = details


class InvalidInput(GpuFleetError):
    """An option value the module refuses; the message says what to change."""


class MissingLibrary(GpuFleetError):
    """A Python library or the NVIDIA driver library is not installed."""
