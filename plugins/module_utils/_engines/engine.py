# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What an inference engine file defines: one Engine holding everything that differs.

Engine-neutral code (the plan, the log reader, the readiness check, the drafter check,
acceptance, the benchmark, the reports, the kill patterns) reads these fields and never
names an engine. docs/design.md ("Adding an engine") says what each field means.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Any, Callable, Pattern

# How an option of server_plan becomes command-line words (the `kind` of an OPTION_FLAGS row):
#   value   FLAG str(VALUE); None leaves the flag out (the engine's default)
#   text    FLAG VALUE; empty leaves the flag out
#   switch  FLAG alone when VALUE is true
#   json    FLAG JSON(VALUE) with sorted keys; empty leaves the flag out
#   secret  FLAG SECRET_CONFIG (the --config file holding the key) when VALUE is set
#   args    every element of VALUE, as strings (FLAG unused)
FLAG_KINDS = ("value", "text", "switch", "json", "secret", "args")

# The distribution's version without importing the engine (slow: torch); an install without
# metadata falls back to MODULE.__version__.
VERSION_PROBE = """\
import importlib.metadata as m
try:
    print(m.version(%s))
except m.PackageNotFoundError:
    import %s
    print(%s.__version__)"""


@dataclasses.dataclass(frozen=True)
class PhaseRule:
    """A log line announcing start-up PHASE; while the engine is not yet known the same line
    announces UNSURE instead (None: nothing), for a line other engines' logs share."""
    phase: str
    pattern: Pattern
    unsure: str | None = None


@dataclasses.dataclass(frozen=True)
class Cause:
    """A failure cause KIND with its TEXT, read from lines matching PATTERN.

    RANK orders the causes of all engines, lowest first (a log line can hold several):
    1 the root (out of memory), 2 what blocks the start (ports), 3 the command line,
    4 a consequence whose root is logged above it (a failed warm-up, a dead engine core).
    A cause of a kind already defined adds its pattern to that kind (TEXT may then be empty)."""
    kind: str
    text: str
    pattern: Pattern
    rank: int


@dataclasses.dataclass(frozen=True)
class AcceptLength:
    """Speculative acceptance length over a span, from counter deltas:
    PLUS_ONE + d(NUMERATOR) / d(DENOMINATOR); each a metric base name or several alternatives
    (the first present counts), scraped with or without `_total`."""
    numerator: tuple[str, ...]
    denominator: tuple[str, ...]
    plus_one: bool
    meaning: str  # the formula in words, for reports


@dataclasses.dataclass(frozen=True)
class InFlight:
    """Where the server reports its own count of requests in flight (server_drain waits on it).

    GET PATH. With ENTRIES, the answer is JSON whose ENTRIES key lists one report per rank,
    each holding RUNNING and WAITING counts; without it, a Prometheus page whose RUNNING and
    WAITING gauges are summed over their series. WAITING None: the server reports no queue.
    REQUEST_IDS says, in words, where the server names the requests in flight (None: nowhere),
    for the message of a drain that ran out of time."""
    path: str
    running: str
    waiting: str | None
    entries: str | None
    request_ids: str | None


@dataclasses.dataclass(frozen=True)
class Engine:
    """One inference engine. Every field is required: tests/unit/plugins/module_utils/_engines/test_registry.py."""
    # --- naming -----------------------------------------------------------------------
    name: str                 # the one word: option values, NAME_server role, variant names
    title: str                # as people write it, in reports and messages
    # Whether a public role gpufleet.serving.NAME_server maps its variables onto the internal
    # _server role. Without one the playbooks drive _server themselves, reading the host's
    # NAME_server_* variables (roles/_fleet/tasks/server_direct.yml has their defaults).
    server_role: bool
    # The release the collection is tested against (its flags, log lines, entry point): a host
    # with another one gets a warning at launch, and the launch goes on.
    tested_version: str
    # --- install and launch -----------------------------------------------------------
    package: str              # the distribution whose version the probe reads
    module: str               # its import name (the probe's fallback: MODULE.__version__)
    console_script: str       # `CONSOLE_SCRIPT serve ...`, beside the interpreter
    default_port: int         # the NAME_server role's default port
    model_flag: str | None    # the flag before the model path; None: positional after `serve`
    option_flags: tuple[tuple[str, str | None, str], ...]  # (server_plan option, flag, kind), in order
    log_redactor: bool        # whether the server prints its key (log_redact.py runs in front)
    # speculative settings (server_plan's `speculative`) -> server_plan option values they add
    speculative_options: Callable[[dict], dict]
    # speculative settings -> {num_steps, eagle_topk, num_draft_tokens} as the engine runs them
    speculative_numbers: Callable[[dict], dict]
    check_drafter: Callable[[list], None]  # raise InvalidInput for a drafter it cannot load
    # The speculative methods it accepts, spelled as it compares them: server_plan refuses any
    # other before anything is read or stopped.
    speculative_methods: tuple[str, ...]
    speculative_method: Callable[[str], str]  # server_plan's speculative.algorithm -> the name it looks up
    # The server_plan option holding a user's speculative config, a dict whose `method` is
    # checked too; None where the engine takes its speculative settings as free arguments.
    speculative_config_option: str | None
    # --- processes --------------------------------------------------------------------
    kill_patterns: tuple[str, ...]    # regexes over command lines: the engine's whole tree
    process_titles: tuple[str, ...]   # command lines its processes show (each matched above)
    # --- log ----------------------------------------------------------------------------
    phase_rules: tuple[PhaseRule, ...]
    log_marker: Pattern               # a line only this engine writes
    log_timestamp: tuple[Pattern, str, str]  # (regex, strptime format, prefix the text lacks)
    causes: tuple[Cause, ...]
    # --- HTTP and metrics ---------------------------------------------------------------
    model_info_paths: tuple[str, ...]   # GETs describing the model, tried before /v1/models
    server_info_paths: tuple[str, ...]  # GETs of the server's own state
    server_info_keys: tuple[str, ...]   # keys only this engine's server info has
    server_info_accept_length: str | None  # internal_states[0] key of its recent accept length
    metric_prefix: str                  # every metric it exposes starts so
    generated_tokens: str               # counter of output tokens (base name)
    finished_requests: str              # counter of finished requests (base name, summed over labels)
    accept_length: AcceptLength
    # Extra request-body fields that make the server report each request's acceptance in its
    # answer (None where the engine has none; the client then has counter deltas only).
    per_request_acceptance: dict | None
    # The server's own count of running and waiting requests (server_drain).
    in_flight: InFlight
    # Raises InvalidInput for a user's speculative config (speculative_config_option) the engine
    # would refuse only at launch, beyond its method; None: no more to check.
    check_speculative_config: Callable[[dict], None] | None = None

    def version_probe(self) -> str:
        """Python source printing the installed version (run with the server's interpreter)."""
        return VERSION_PROBE % (json.dumps(self.package), self.module, self.module)

    def entry_point(self, python: str) -> str:
        """The console script beside PYTHON, or on PATH for a bare interpreter name."""
        return os.path.dirname(python) + "/" + self.console_script if "/" in python else self.console_script


def compile_rule(phase: str, regex: str, unsure: str | None = None) -> PhaseRule:
    return PhaseRule(phase, re.compile(regex), unsure)


def fields() -> list[str]:
    """The names every engine defines."""
    return [f.name for f in dataclasses.fields(Engine)]


def merge_option(composed: Any, given: Any) -> Any:
    """An option value from the speculative settings with the one given beside them:
    lists are joined (composed first), dicts merged (the given keys win)."""
    if isinstance(composed, dict):
        return dict(composed, **(given or {}))
    return list(composed) + list(given or [])
