# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Files on a host that other users share, and names that become file names.

write_atomic: a reader sees the old file or the new one, never half of one.
open_owned: a file in a shared place (/var/tmp, /tmp) opened as OpenSSH and systemd open theirs:
the directory is created private (0700), and an existing one must be this user's (or root's) and
writable by no one else unless sticky; the file is opened without following a link (O_NOFOLLOW),
and must be a regular file of this user with one link, so a symlink or hard link planted by
another user never redirects a write by root.
file_name: a variant, host, label or category name as one bounded file name, never a path.
joined_file_name: several names (a host and a label) as one file name that no other names give.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from typing import Iterable, TextIO
from urllib.parse import quote

# file_name never writes this (percent-quoting turns it into %2B), so names joined by it stay apart:
# host 'a' with label 'b-c' and host 'a-b' with label 'c' are 'a+b-c' and 'a-b+c', where a '-' would
# make both 'a-b-c'.
JOIN = "+"
# Room for a prefix, a suffix and two names (97 bytes each at most) within the 255 bytes of a file name.
NAME_LIMIT = 80


def write_atomic(path: str, data: bytes, mode: int = 0o644) -> None:
    """Write bytes or text to PATH through a temporary file in the same directory."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def file_name(name: object, limit: int = NAME_LIMIT) -> str:
    """NAME as one file name: percent-quoted (no '/', NUL or control character stays), never '',
    '.', '..' or hidden, at most LIMIT + 17 bytes: a longer one is cut and ends in '-' and 16 hex
    digits of its sha256, so two long names stay apart."""
    text = str(name)
    quoted = quote(text, safe="") or "%"
    if quoted.startswith("."):
        quoted = "%2E" + quoted[1:]
    if len(quoted) > limit:
        quoted = quoted[:limit] + "-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return quoted


def joined_file_name(names: Iterable[object], limit: int = NAME_LIMIT) -> str:
    """NAMES (a host and a label) as one file name: each one's file_name, joined by JOIN, which
    none of them holds, so two lists of names give one file name only when they are equal."""
    return JOIN.join(file_name(name, limit) for name in names)


class NotOwned(OSError):
    """A path in a shared directory that another user could have planted."""


def _private_dir(directory: str) -> int:
    """An O_DIRECTORY descriptor of DIRECTORY (made 0700 when missing), checked: not a symbolic link
    itself, owned by this user or root, and writable by no one else unless sticky (as /tmp is)."""
    if not os.path.isdir(directory):
        parent = os.path.dirname(directory)
        if parent and not os.path.isdir(parent):
            os.makedirs(parent)
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass  # made meanwhile; checked below like any other
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    info = os.fstat(fd)
    problem = None
    if info.st_uid not in (os.geteuid(), 0):
        problem = "is owned by uid %d, not by this user (uid %d) or root" % (info.st_uid, os.geteuid())
    elif info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        problem = "is writable by other users (mode %o) and not sticky" % stat.S_IMODE(info.st_mode)
    if problem:
        os.close(fd)
        raise NotOwned("%s %s: another user may have planted it; remove it or choose another directory"
                       % (directory, problem))
    return fd


def open_owned(path: str, mode: str = "w", perms: int = 0o644) -> TextIO:
    """PATH opened for text writing (MODE 'w' truncates, 'a' appends) in a checked directory
    (_private_dir), never through a link: the final name may not be a symbolic link, and the file
    must be a regular file of this user with no other hard link. Raises OSError (NotOwned for a
    planted path) with the reason."""
    path = os.path.abspath(os.path.expanduser(path))
    dfd = _private_dir(os.path.dirname(path))
    try:
        try:
            fd = os.open(os.path.basename(path), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_APPEND
                         | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), perms, dir_fd=dfd)
        except OSError as exc:
            if os.path.islink(path):
                raise NotOwned("%s is a symbolic link; a file there is never written through a link: remove it"
                               % path) from exc
            raise
    finally:
        os.close(dfd)
    info = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(info.st_mode):
        problem = "is not a regular file"
    elif info.st_uid != os.geteuid():
        problem = "is owned by uid %d, not by this user (uid %d)" % (info.st_uid, os.geteuid())
    elif info.st_nlink != 1:
        problem = "has %d hard links" % info.st_nlink
    if problem:
        os.close(fd)
        raise NotOwned("%s %s: another user may have planted it; remove it or choose another path" % (path, problem))
    if mode == "w":
        os.ftruncate(fd, 0)
    return os.fdopen(fd, "a", encoding="utf-8")
