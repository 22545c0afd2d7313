# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""toyserve, the test-only engine (tests/support/engines/toyserve), as the registry sees it.

This is the one file a new engine brings: tests/integration/test_new_engine.py copies the
collection, puts this file at plugins/module_utils/_engines/toyserve.py, adds it to
registry.ENGINES, and runs the playbooks with `-e engine=toyserve`. toyserve imitates no real
engine: each fact below is read from its own code (tests/support/engines/toyserve/).
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.serving.plugins.module_utils._engines.engine import (
    AcceptLength,
    Cause,
    Engine,
    InFlight,
    compile_rule,
)
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput


def no_speculative(unused):
    raise InvalidInput("toyserve has no speculative decoding; leave toyserve_server_speculative unset")


ENGINE = Engine(
    name="toyserve",
    title="toyserve",
    server_role=False,  # the playbooks drive the internal role from toyserve_server_* variables
    tested_version="0.1.0",  # toyserve/__init__.py __version__
    package="toyserve",
    module="toyserve",
    console_script="toyserve",  # `toyserve serve MODEL ...` (toyserve/__main__.py)
    default_port=8100,
    model_flag=None,
    option_flags=(
        ("tp_size", "--tp", "value"),
        ("host", "--host", "value"),
        ("port", "--port", "value"),
        ("served_model_name", "--served-model-name", "text"),
        ("extra_args", None, "args"),
    ),
    log_redactor=False,
    speculative_options=no_speculative,
    speculative_numbers=no_speculative,
    check_drafter=no_speculative,
    speculative_methods=(),
    speculative_method=str,
    speculative_config_option=None,
    # The server keeps its command line (`python -m toyserve serve ...`); workers are retitled.
    kill_patterns=(r"toyserve::", r"-m toyserve\b"),
    process_titles=("/usr/bin/python3 -m toyserve serve /models/m --tp 2", "toyserve::worker_TP0"),
    phase_rules=(
        compile_rule("loading_weights", r"toyserve \S+ loading "),
        compile_rule("weights_loaded", r"workers ready: \d+"),
        compile_rule("http_server", r"listening on http://"),
        compile_rule("ready", r"ready to serve"),
    ),
    log_marker=re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d toyserve "),
    log_timestamp=(re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) toyserve "), "%Y-%m-%d %H:%M:%S", ""),
    # "start-up failed: CAUSE" (toyserve/server.py); the out-of-memory text is the shared rule's.
    causes=(Cause("engine_failed", "toyserve failed to start (its cause is on the same line)",
                  re.compile(r"start-up failed: "), 4),),
    model_info_paths=(),
    server_info_paths=(),
    server_info_keys=(),
    server_info_accept_length=None,
    metric_prefix="toyserve:",
    generated_tokens="toyserve:generation_tokens",
    finished_requests="toyserve:requests",
    # No speculative decoding: counters that never appear, so acceptance stays unknown.
    accept_length=AcceptLength(numerator=("toyserve:spec_accepted",), denominator=("toyserve:spec_drafts",),
                               plus_one=True, meaning="none (toyserve has no speculative decoding)"),
    per_request_acceptance=None,
    # Its running-batch gauge (toyserve/http_api.py); it has no queue gauge and names no request.
    in_flight=InFlight(path="/metrics", running="toyserve:requests_running", waiting=None, entries=None,
                       request_ids=None),
)
