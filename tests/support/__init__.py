# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test helpers, once each (modelled on community.docker's tests/unit/plugins/test_support/).

  paths      the checkout's folders and programs (repo root, build/collections, .venv, simctl)
             and which ansible-core the tests drive (GPUFLEET_ANSIBLE_BIN)
  syspath    the import path, set once (tests/conftest.py, scripts/_bootstrap.py)
  polling    poll-with-a-deadline, the tests' only way to wait for a condition
  timing     timed(): a call and the seconds it took
  procfs     /proc/PID/stat readers (state, ppid, starttime), also through a PID namespace's /proc
  processes  OwnProcesses: what a test started, killed by pidfd at the end (never by name)
  pidns      PidNamespace: a private PID + mount namespace for tests that kill by pattern
  ansible    run a module or a playbook through ansible, with the environment the tests use
  gpu        fake-GPU holders (simctl gpu hold) owned by a test
  net        loopback ports
  servers/   standin.py, the one stand-in HTTP server (known-rate streaming, or an SGLang
             start-up paced by the test with --log), and launch.StandIn to run it from a test
  engines/   toyserve, a fake engine on the simulator's neutral core (put on PYTHONPATH
             by the test that starts it)
  scripts/   process trees and probes the tests start as separate programs

tests/conftest.py puts the repository root, build/collections and sim/ on sys.path
once, so tests import `tests.support.*`, `ansible_collections.gpufleet.serving.*` and the
simulator (`simlib`, `realsglang`) without touching sys.path themselves. sim/ is the
engine simulator (a program, not a test helper).
"""
