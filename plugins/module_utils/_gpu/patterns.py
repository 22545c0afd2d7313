# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kill patterns: compile them, and refuse the ones that would match too much.

Breadth is judged against fixed sample command lines, not the live process
table: in a container that runs only the server, the right pattern matches
most of the table, while on a big host `python` may match little today.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput

# Each engine's kill set, by name (Engine.kill_patterns, written once in its _engines/ file).
# The server roles and reset.yml read them through the gpufleet.serving.engine_patterns
# lookup; scripts/gen_docs.py copies them into the docs.
ENGINE_PATTERNS = {engine.name: list(engine.kill_patterns) for engine in _registry.engines()}
# A pattern the messages give as an example: the first two of the default engine's kill set.
EXAMPLE = "|".join(_registry.get(_registry.DEFAULT).kill_patterns[:2])
# The name that stands for every engine of ENGINE_PATTERNS (gpu_release's engine: any).
ANY_ENGINE = "any"


def engine_choices() -> list[str]:
    """The names gpu_release's `engine` option takes: every engine, then V(any)."""
    return list(ENGINE_PATTERNS) + [ANY_ENGINE]


def engine_patterns(engines: list[str]) -> list[str]:
    """The kill set of each engine named, in order, each regex once; V(any) is every engine.

    InvalidInput for an unknown name.
    """
    out = []
    for name in engines:
        if name == ANY_ENGINE:
            names = list(ENGINE_PATTERNS)
        elif name in ENGINE_PATTERNS:
            names = [name]
        else:
            raise InvalidInput("unknown engine %r; known engines: %s (or %s: every one)"
                               % (name, ", ".join(sorted(ENGINE_PATTERNS)), ANY_ENGINE))
        for engine in names:
            out.extend(p for p in ENGINE_PATTERNS[engine] if p not in out)
    return out


# Command lines found on almost any GPU host that no server pattern should hit.
# A pattern matching one of them would take out shells, daemons or notebooks.
CANARY_CMDLINES = [
    "/sbin/init",
    "/usr/lib/systemd/systemd-journald",
    "sshd: root@pts/0",
    "-bash",
    "/bin/bash",
    "/bin/sh -c sleep 60",
    "/usr/sbin/cron -f",
    "/usr/bin/containerd",
    "/usr/bin/dockerd -H fd://",
    "/usr/bin/python3 /usr/bin/networkd-dispatcher --run-startup-triggers",
    "/usr/bin/python3 -m http.server 8080",
    "python3 train.py --epochs 10",
    "/opt/conda/bin/python -m ipykernel_launcher -f /root/kernel.json",
    "/usr/bin/nvidia-persistenced --user nvidia-persistenced",
    "/usr/bin/nv-hostengine -n --service-account nvidia-dcgm",
    "/usr/bin/dcgm-exporter",
    "tmux new -s bench",
    "vim notes.txt",
]


def compile_patterns(patterns: list | None, force_broad: bool = False) -> list:
    """Return compiled regexes, or raise InvalidInput saying what to change."""
    compiled = []
    for raw in patterns or []:
        if raw is None or str(raw).strip() == "":
            raise InvalidInput(
                "patterns: an empty pattern matches every process; "
                "give a regex for the server's command line, e.g. '%s'" % EXAMPLE)
        raw = str(raw)
        try:
            regex = re.compile(raw)
        except re.error as exc:
            raise InvalidInput("patterns: %r is not a valid regular expression (%s); fix the regex" % (raw, exc))
        if not force_broad:
            _refuse_broad(raw, regex)
        compiled.append(regex)
    return compiled


def _refuse_broad(raw, regex):
    if regex.search("") is not None:
        raise InvalidInput(
            "patterns: %r matches the empty command line, so it matches every process; "
            "anchor it to the server's command line, or set force_broad: true if you really mean it" % raw)
    hits = [c for c in CANARY_CMDLINES if regex.search(c)]
    if hits:
        raise InvalidInput(
            "patterns: %r is too broad: it matches ordinary processes such as %r; "
            "use a pattern specific to the server (e.g. '%s'), "
            "or set force_broad: true" % (raw, hits[0], EXAMPLE))


def matches_any(regexes: list, cmdline: str) -> bool:
    return any(r.search(cmdline) for r in regexes)
