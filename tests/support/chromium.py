# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Headless Chromium (Debian's `chromium`, scripts/system_packages.sh) for the tests that open a
report's HTML file as a browser does: the DOM it builds and a screenshot of what it draws.

Each run is its own session (start_new_session), with its own profile directory, and is waited
for until no process of that session is left: Chromium's helper processes can outlive the main
one by a moment, and the session must not end with them. Without chromium the test skips, with
the command that installs it, unless GPUFLEET_REQUIRE_CHROMIUM=1 or CI is set (tests/run_all.sh,
so CI), where a missing browser fails rather than passing quietly.
"""
import os
import shutil
import signal
import subprocess

import pytest

from tests.support.polling import holds_within

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-crash-reporter", "--disable-breakpad",
         "--no-first-run", "--hide-scrollbars", "--disable-extensions", "--disable-background-networking")


def required():
    return os.environ.get("GPUFLEET_REQUIRE_CHROMIUM", "") not in ("", "0") or \
        os.environ.get("CI", "").lower() in ("1", "true", "yes")


def binary():
    """The chromium program, or skip (fail where it is required) saying how to install it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    reason = ("chromium is not installed (apt-get install chromium; make setup installs it: "
              "scripts/system_packages.sh)")
    if required():
        pytest.fail(reason + ", and GPUFLEET_REQUIRE_CHROMIUM or CI requires it")
    pytest.skip(reason)


def _session_alive(sid):
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == sid:
                    return True
            except OSError:
                pass  # gone meanwhile
    return False


def run(profile, *args, timeout=60):
    """Chromium's stdout for ARGS (after FLAGS), with PROFILE as its user data directory."""
    proc = subprocess.Popen([binary()] + list(FLAGS) + ["--user-data-dir=%s" % profile] + list(args),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if not holds_within(lambda: not _session_alive(proc.pid), 10.0):
            os.killpg(proc.pid, signal.SIGKILL)  # the session this run started, and only it
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, "chromium failed (%s): %s" % (proc.returncode, err.decode(errors="replace")[-2000:])
    return out.decode("utf-8", errors="replace")
