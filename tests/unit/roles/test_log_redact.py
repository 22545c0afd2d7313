# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/_server/files/log_redact.py: the key never reaches the log, whatever the writes."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[3] / "roles" / "_server" / "files" / "log_redact.py"
_spec = importlib.util.spec_from_file_location("log_redact", SCRIPT)
redact = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(redact)

KEY = "gf-k3y'with\\odd\"chars-77"


def secrets_of(tmp_path, text):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return redact.load_secrets(str(path))


def test_every_spelling_of_the_key_is_a_secret(tmp_path):
    secrets = secrets_of(tmp_path, "api-key: %s\n" % json.dumps(KEY))
    data = ("plain %s | dict %r | json %s\n" % (KEY, {"api_key": KEY}, json.dumps(KEY))).encode()
    out = redact.redact(data, secrets)
    assert KEY.encode() not in out and repr(KEY)[1:-1].encode() not in out
    assert out.count(redact.REDACTED.encode()) == 3


def test_json_config_and_non_string_values(tmp_path):
    assert secrets_of(tmp_path, '{"api-key": "abc123", "port": 5}') == [b"abc123"]


@pytest.mark.parametrize("cut", [1, 7, 15])
def test_a_key_cut_across_reads_is_still_redacted(cut):
    secrets = [b"SECRET-0123456789"]
    read_fd, write_fd = os.pipe()
    out_r, out_w = os.pipe()
    line = b"[x] server_args={'api_key': 'SECRET-0123456789'}\n"
    at = line.index(b"SECRET") + cut
    os.write(write_fd, line[:at])
    os.write(write_fd, line[at:] + b"no newline at the end SECRET-0123456789")
    os.close(write_fd)
    redact.pump(read_fd, out_w, secrets)
    os.close(out_w)
    got = os.read(out_r, 65536)
    assert got == b"[x] server_args={'api_key': '<redacted>'}\nno newline at the end <redacted>"


def test_runaway_line_is_written_in_pieces_keeping_a_key_whole(monkeypatch):
    monkeypatch.setattr(redact, "MAX_PENDING", 64)
    secrets = [b"K" * 10]
    ready, kept = redact.split_ready(b"x" * 100, secrets)
    assert len(kept) == 9 and ready + kept == b"x" * 100
    assert redact.split_ready(b"a\rb", secrets) == (b"a\r", b"b")


def run(tmp_path, code, *extra):
    secret = tmp_path / "k.yaml"
    secret.write_text("api-key: KEY-123\n")
    return subprocess.run([sys.executable, str(SCRIPT), str(secret), "--", sys.executable, "-c", code] + list(extra),
                          capture_output=True, timeout=30, check=False)


def test_exit_status_and_signal_of_the_server_are_passed_back(tmp_path):
    done = run(tmp_path, "import sys; print('KEY-123 ok'); sys.exit(3)")
    assert done.returncode == 3 and done.stdout == b"<redacted> ok\n"
    killed = run(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert killed.returncode == -signal.SIGKILL


def test_bad_usage_and_missing_secrets_file(tmp_path):
    usage = subprocess.run([sys.executable, str(SCRIPT), "x"], capture_output=True, timeout=30, check=False)
    assert usage.returncode == 2 and b"usage:" in usage.stderr
    missing = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "none"), "--", "true"],
                             capture_output=True, timeout=30, check=False)
    assert missing.returncode == 2 and b"cannot read the secrets" in missing.stderr
