# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_proc/ports.py on real loopback sockets: a free port, one a process of this test listens on
(named by PID and command line), one only a connection in TIME_WAIT used, and a bad address."""

from __future__ import annotations

import os
import pwd
import socket
import sys

from ansible_collections.gpufleet.serving.plugins.module_utils._proc import ports

LISTEN = ("import socket, sys\n"
          "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
          "print(s.getsockname()[1], flush=True)\n"
          "sys.stdin.read()\n")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_free_port_has_no_holder():
    assert ports.port_holder("127.0.0.1", free_port()) is None


def test_a_listener_is_named_by_pid_and_command_line(own_procs):
    proc = own_procs.python(LISTEN)
    port = int(proc.stdout.readline())
    held = ports.port_holder("127.0.0.1", port)
    assert held.startswith("pid %d (%s -c import socket" % (proc.pid, sys.executable)), held
    assert held.endswith(", user %s)" % pwd.getpwuid(os.getuid()).pw_name), held
    assert ports.port_holder("127.0.0.1", port) == held


def test_a_connection_in_time_wait_does_not_hold_the_port():
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    conn, unused = server.accept()
    conn.close()  # the server side closes first: its end of the connection waits in TIME_WAIT
    client.close()
    server.close()
    assert ports.port_holder("127.0.0.1", port) is None


def test_an_address_not_of_this_host_says_it_cannot_bind():
    held = ports.port_holder("192.0.2.1", free_port())  # TEST-NET-1: never a local address
    assert held.startswith("cannot bind 192.0.2.1:") and "Cannot assign requested address" in held, held
