# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Loopback networking for stand-in servers (tests never listen beyond loopback)."""
import random
import socket

LOOPBACK = "127.0.0.1"


def free_port(host=LOOPBACK):
    """A TCP port free on `host` now (the OS picks it; a server then binds it)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def free_port_with(offsets, host=LOOPBACK, tries=200):
    """A port P free on `host` now with P + each of OFFSETS free too (a server that derives
    ports from its own, as SGLang's attention DP does: P + 233 and the six after it).

    Drawn below the kernel's ephemeral range (net.ipv4.ip_local_port_range), as SGLang's
    default 30000 is: there no client connection can take a derived port by chance."""
    low = _ephemeral_low()
    below = range(max(1024, low - 12000), low - max(offsets) - 1)
    candidates = random.sample(below, tries) if len(below) >= tries else [free_port(host) for unused in range(tries)]
    for port in candidates:
        if all(_bindable(host, p) for p in [port] + [port + offset for offset in offsets]):
            return port
    raise AssertionError("no port with %d derived ports free on %s after %d tries" % (len(offsets), host, tries))


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(host, port):
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True
