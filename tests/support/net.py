# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Loopback networking for stand-in servers (tests never listen beyond loopback)."""
import socket

LOOPBACK = "127.0.0.1"


def free_port(host=LOOPBACK):
    """A TCP port free on `host` now (the OS picks it; a server then binds it)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
