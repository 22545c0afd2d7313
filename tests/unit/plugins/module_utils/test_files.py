# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Files in shared directories and names as file names (module_utils/_files.py): open_owned never
writes through a planted symbolic or hard link, into a FIFO, or in a directory another user owns
or may write; file_name makes any name one bounded file name."""

from __future__ import annotations

import os
import stat
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.serving.plugins.module_utils._files import (
    NAME_LIMIT,
    NotOwned,
    file_name,
    joined_file_name,
    open_owned,
    write_atomic,
)

ROOT = os.geteuid() == 0
HOSTILE = ["x/../../../../tmp/escaped/pwn", "../", "/", "..", ".", ".hidden", "a" * 222, "é" * 120, "a\nb",
           "%2F", "", "-", "~", "a|b"]
NAMES = st.one_of(st.sampled_from(HOSTILE),
                  st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=300))


@settings(max_examples=300, deadline=None)
@given(NAMES)
def test_a_name_is_one_bounded_file_name(name):
    shown = file_name(name)
    assert shown not in ("", ".", "..") and not shown.startswith(".")
    assert "/" not in shown and "\x00" not in shown and shown.isascii() and shown.isprintable()
    assert len(shown) <= NAME_LIMIT + 17
    assert os.path.basename(os.path.join("/d", shown)) == shown


def test_two_long_names_stay_apart_and_short_ones_read_back():
    assert file_name("a" * 300) != file_name("a" * 299 + "b")
    assert file_name("x/../y") == "x%2F..%2Fy" and file_name(".h") == "%2Eh" and file_name("") == "%"


@settings(max_examples=300, deadline=None)
@given(st.tuples(NAMES, NAMES), st.tuples(NAMES, NAMES))
def test_two_hosts_and_labels_never_share_a_file_name(one, two):
    # Past the limit a name ends in its digest, which keeps two long ones apart as well.
    assert (joined_file_name(one) == joined_file_name(two)) == (one == two)


def test_a_dash_in_a_host_or_label_does_not_join_them():
    assert joined_file_name(["a", "b-c"]) == "a+b-c" and joined_file_name(["a-b", "c"]) == "a-b+c"
    assert joined_file_name(["a+b", "c"]) == "a%2Bb+c" != joined_file_name(["a", "b+c"])


def test_a_missing_directory_is_made_private(tmp_path):
    path = tmp_path / "shared" / "gpufleet" / "p.progress"
    with open_owned(str(path)) as fh:
        fh.write("one\n")
    with open_owned(str(path), "a") as fh:
        fh.write("two\n")
    assert path.read_text() == "one\ntwo\n"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    with open_owned(str(path)) as fh:  # 'w' truncates
        fh.write("three\n")
    assert path.read_text() == "three\n"


def test_a_planted_symbolic_link_is_refused_and_its_target_untouched(tmp_path):
    target = tmp_path / "root-only"
    target.write_text("secret\n")
    (tmp_path / "d").mkdir(mode=0o700)
    link = tmp_path / "d" / "p.progress"
    link.symlink_to(target)
    with pytest.raises(NotOwned, match="is a symbolic link"):
        open_owned(str(link))
    assert target.read_text() == "secret\n"


def test_a_planted_hard_link_is_refused_and_its_target_untouched(tmp_path):
    target = tmp_path / "root-only"
    target.write_text("secret\n")
    (tmp_path / "d").mkdir(mode=0o700)
    os.link(target, tmp_path / "d" / "p.progress")
    with pytest.raises(NotOwned, match="has 2 hard links"):
        open_owned(str(tmp_path / "d" / "p.progress"))
    assert target.read_text() == "secret\n"


def test_a_symbolic_link_as_the_directory_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "gpufleet").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        open_owned(str(tmp_path / "gpufleet" / "p.progress"))
    assert not list((tmp_path / "elsewhere").iterdir())


def test_a_planted_fifo_is_refused_without_blocking(tmp_path):
    (tmp_path / "d").mkdir(mode=0o700)
    fifo = tmp_path / "d" / "p.progress"
    os.mkfifo(fifo)
    outcome = []
    opener = threading.Thread(target=lambda: outcome.append(pytest.raises(OSError, open_owned, str(fifo))),
                              daemon=True)
    opener.start()
    opener.join(5)
    assert not opener.is_alive(), "opening a FIFO blocked"
    assert outcome


def test_a_directory_others_may_write_is_refused_unless_sticky(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(NotOwned, match="is writable by other users"):
        open_owned(str(shared / "p.progress"))
    shared.chmod(0o1777)  # as /tmp: others may add files, never replace this user's
    with open_owned(str(shared / "p.progress")) as fh:
        fh.write("ok\n")


@pytest.mark.skipif(not ROOT, reason="giving a file to another user needs root")
def test_a_directory_or_file_of_another_user_is_refused(tmp_path):
    planted = tmp_path / "gpufleet"
    planted.mkdir(mode=0o755)
    os.chown(planted, 65534, 65534)
    with pytest.raises(NotOwned, match="is owned by uid 65534"):
        open_owned(str(planted / "p.progress"))
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    theirs = sticky / "p.progress"
    theirs.write_text("theirs\n")
    os.chown(theirs, 65534, 65534)
    with pytest.raises(NotOwned, match="is owned by uid 65534"):
        open_owned(str(theirs))
    assert theirs.read_text() == "theirs\n"


def test_text_or_bytes_replace_the_file_whole_with_the_mode(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("old")
    inode = os.stat(path).st_ino
    write_atomic(str(path), "névé", mode=0o600)
    assert path.read_bytes() == "névé".encode() and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.stat(path).st_ino != inode  # a new file renamed over the old: a reader never sees half of one
    write_atomic(str(path), b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01" and stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert os.listdir(tmp_path) == ["state.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("old")
    with pytest.raises(TypeError):
        write_atomic(str(path), ["not", "bytes"])
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["state.json"]
    (tmp_path / "dir").mkdir()
    with pytest.raises(IsADirectoryError):
        write_atomic(str(tmp_path / "dir"), "x")  # the rename onto a directory fails
    assert sorted(os.listdir(tmp_path)) == ["dir", "state.json"] and os.listdir(tmp_path / "dir") == []
