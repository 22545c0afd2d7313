#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a server with its output redacted: log_redact.py SECRETS_FILE -- ARGV...

Real SGLang prints its API key in plain text (sglang 0.5.23,
srt/entrypoints/engine.py: logger.info(f"server_args={...}") with `api_key`
in the dict). This wrapper starts ARGV with stdout and stderr on a pipe and
copies that pipe to its own stdout (the server log, opened 0640 by the
supervisor) with every secret replaced by REDACTED, line by line, so the key
never reaches the log file.

SECRETS_FILE is the server's --config file (YAML, mode 0600, written by the
role): each string value in it is a secret. PyYAML is there: SGLang needs it.

Signals: SIGTERM, SIGINT and SIGHUP are passed on to the server, which then
drains and ends its own workers; the wrapper keeps copying until the last
writer closes the pipe, then exits with the server's status (a server killed
by a signal makes the wrapper die by the same signal). Standard library only:
it runs with the interpreter of the SGLang environment.
"""

import json
import os
import signal
import sys

REDACTED = "<redacted>"
CHUNK = 65536
# A line longer than this without a newline is written in pieces (a secret cut
# at a piece boundary stays whole: the last max(len(secret)) bytes are kept).
MAX_PENDING = 1 << 20


def load_secrets(path):
    """The string values of the YAML (or JSON) mapping in PATH, as bytes, in every spelling a log may use."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    try:
        import yaml  # pylint: disable=import-outside-toplevel
    except ImportError:
        data = json.loads(text)
    else:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(str(exc)) from exc
    values = data.values() if isinstance(data, dict) else []
    secrets = set()
    for value in values:
        if isinstance(value, str) and value:
            # plain, repr() inside a dict (escapes quotes/backslashes), JSON-escaped
            for spelling in (value, repr(value)[1:-1], json.dumps(value)[1:-1]):
                secrets.add(spelling.encode("utf-8"))
    # Longest first: a secret that contains another is replaced whole.
    return sorted(secrets, key=len, reverse=True)


def redact(data, secrets):
    for secret in secrets:
        data = data.replace(secret, REDACTED.encode())
    return data


def split_ready(pending, secrets):
    """(bytes that can be written now, bytes to keep): whole lines, and pieces of a runaway line."""
    cut = max(pending.rfind(b"\n"), pending.rfind(b"\r"))
    if cut >= 0:
        return pending[:cut + 1], pending[cut + 1:]
    if len(pending) > MAX_PENDING:
        keep = max([len(s) for s in secrets] + [1]) - 1
        return pending[:len(pending) - keep], pending[len(pending) - keep:]
    return b"", pending


def write_all(fd, data):
    while data:
        try:
            written = os.write(fd, data)
        except InterruptedError:
            continue
        data = data[written:]


def pump(read_fd, write_fd, secrets):
    """Copy READ_FD to WRITE_FD redacted, until end of file."""
    pending = b""
    while True:
        try:
            chunk = os.read(read_fd, CHUNK)
        except InterruptedError:
            continue
        if not chunk:
            break
        ready, pending = split_ready(pending + chunk, secrets)
        if ready:
            write_all(write_fd, redact(ready, secrets))
    if pending:
        write_all(write_fd, redact(pending, secrets))


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: log_redact.py SECRETS_FILE -- ARGV...\n")
        return 2
    try:
        secrets = load_secrets(argv[1])
    except (OSError, ValueError) as exc:
        sys.stderr.write("log_redact.py: cannot read the secrets in %s: %s\n" % (argv[1], exc))
        return 2
    command = argv[3:]
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(read_fd)
            os.dup2(write_fd, 1)
            os.dup2(write_fd, 2)
            os.close(write_fd)
            os.execvp(command[0], command)
        except OSError as exc:
            os.write(2, ("log_redact.py: cannot run %s: %s\n" % (command[0], exc)).encode())
        os._exit(127)  # pylint: disable=protected-access
    os.close(write_fd)

    def forward(signum, _frame):
        try:
            os.kill(child, signum)
        except OSError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    pump(read_fd, 1, secrets)
    while True:
        try:
            _pid, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        if signum not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
