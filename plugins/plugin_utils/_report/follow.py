# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a benchmark's progress goes, and the command that follows it as printed: one file per
host and benchmark label (a variant's progress never overwrites another's), and an ssh line
built from the host's connection variables, since an inventory name is not an SSH name."""

from __future__ import annotations

import posixpath
import shlex
from typing import Any, Iterable

from ansible_collections.gpufleet.serving.plugins.module_utils._files import JOIN, file_name

PROGRESS_DIR = "/var/tmp/gpufleet.serving"
# Connections that run on the controller itself: the file is followed there, without ssh.
LOCAL_CONNECTIONS = ("local",)


def progress_file(given: Any, host: str, label: Any = None) -> str:
    """The progress file of HOST's benchmark LABEL: GIVEN (a path, or empty for the default
    PROGRESS_DIR/llm_benchmark-HOST.progress) with "+LABEL" put before its extension, so each
    label (an experiment's variant, a swap's baseline and candidate) has its own file, and no other
    host and label give the same one ('+' is in no file_name: host 'a' with label 'b-c' and host
    'a-b' with label 'c' are llm_benchmark-a+b-c and llm_benchmark-a-b+c)."""
    path = str(given).strip() if given else ""
    if not path or path == "None":
        path = posixpath.join(PROGRESS_DIR, "llm_benchmark-%s.progress" % file_name(host))
    if label is None or not str(label).strip() or str(label) == "None":
        return path
    head, tail = posixpath.split(path)
    stem, dot, ext = tail.rpartition(".")
    if not dot or not stem:  # no extension (or a dot file): the label goes at the end
        stem, ext = tail, ""
    suffixed = "%s%s%s%s" % (stem, JOIN, file_name(label), "." + ext if ext else "")
    return posixpath.join(head, suffixed)


def follow_command(path: str, host: str, connection: Any = "ssh", address: Any = None, port: Any = None,
                   user: Any = None, key: Any = None, ssh_args: Iterable[Any] = ()) -> str:
    """A shell command that follows PATH on HOST as printed: `tail -f PATH` for a local
    connection, else `ssh [-p PORT] [-i KEY] [SSH_ARGS] [USER@]ADDRESS tail -f PATH` from the
    host's inventory variables (ansible_host, ansible_port, ansible_user,
    ansible_ssh_private_key_file, ansible_ssh_common_args and ansible_ssh_extra_args)."""
    tail = "tail -f " + shlex.quote(str(path))
    if _given(connection) and str(connection) in LOCAL_CONNECTIONS:
        return tail
    words = ["ssh"]
    if _given(port):
        words += ["-p", str(port)]
    if _given(key):
        words += ["-i", str(key)]
    for args in ssh_args or ():
        if _given(args):
            words += shlex.split(str(args))
    target = str(address) if _given(address) else str(host)
    words.append("%s@%s" % (user, target) if _given(user) else target)
    # The remote command goes to the remote shell as one string: quoted once more for it.
    return " ".join(shlex.quote(w) for w in words) + " " + shlex.quote(tail)


def _given(value: Any) -> bool:
    return value is not None and str(value).strip() not in ("", "None")
