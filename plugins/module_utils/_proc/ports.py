# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Is a TCP port free to listen on, and if not, who holds it?"""

from __future__ import annotations

import errno
import socket

from ansible_collections.gpufleet.serving.plugins.module_utils._proc.table import psutil


def port_holder(host: str, port: int) -> str | None:
    """None when HOST:PORT can be bound now, else a description of the holder."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    # As servers do: connections of a previous server lingering in TIME_WAIT
    # must not count, only a live listener.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        return None
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            return "cannot bind %s:%d (%s)" % (host, port, exc.strerror)
    finally:
        sock.close()
    return _who_listens(host, port) or "a process not visible from here (another user or PID namespace)"


WILDCARDS = ("0.0.0.0", "::")


def listener_pid(addresses: set | frozenset | tuple, port: int) -> int | None:
    """The PID listening at TCP PORT on one of ADDRESSES or on every address, when it can be seen."""
    if psutil is None:
        return None
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError):
        return None
    for conn in conns:
        if (conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid
                and (conn.laddr.ip in addresses or conn.laddr.ip in WILDCARDS)):
            return conn.pid
    return None


def _who_listens(host, port):
    pid = listener_pid({host}, port)
    if pid is None:
        return None
    try:
        proc = psutil.Process(pid)
        return "pid %d (%s, user %s)" % (pid, " ".join(proc.cmdline()).strip()[:160], proc.username())
    except psutil.Error:
        return "pid %d" % pid
