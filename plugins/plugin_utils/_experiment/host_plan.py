# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A host's plan of its experiment variants, before anything runs (roles/_fleet/tasks/experiment.yml):
which drafters to check against their targets, the server_plan request of each variant, and which
variant a refusal names.

SERVERS are the server_spec lookup's dicts for the host's variants, REQUESTS their server_request
terms and NAMES their names, all in the host's order.
"""

from __future__ import annotations

from typing import Any, Mapping

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as server_spec

# The algorithm whose drafter drafter_check compares with its target (EAGLE-3's config.json fields).
CHECKED_ALGORITHM = "EAGLE3"


def drafter_checks(servers: list, requests: list, names: list) -> list:
    """One drafter_check per variant that loads an EAGLE-3 drafter (its own `speculative`, or the
    host's eagle_drafter_* variables, which are always checked, as the eagle_drafter role checks them):
    variant, engine, the drafter and the target model, and the numbers the variant sets."""
    out = []
    for server, request, name in zip(servers, requests, names):
        spec = server.get("speculative")
        if not isinstance(spec, Mapping):
            continue
        if not request.get("drafter") and str(spec.get("algorithm") or CHECKED_ALGORITHM).upper() != CHECKED_ALGORITHM:
            continue
        out.append({"variant": name, "engine": server["engine"], "draft_model_path": spec.get("draft_model_path"),
                    "target_model_path": server.get("model_path"), "num_steps": spec.get("num_steps"),
                    "eagle_topk": spec.get("eagle_topk"), "num_draft_tokens": spec.get("num_draft_tokens")})
    return out


def plan_request(server: Mapping[str, Any], service_mgr: str = "") -> dict:
    """The server_plan batch item of one server: its settings in one dict, and the host's service manager."""
    return {"settings": server_spec.plan_options(dict(server)), "service_mgr": service_mgr or ""}


def planned(servers: list, composed: list, names: list) -> list:
    """The plan entries the experiment keeps and prints (variant, engine, gpus, argv, running, composed):
    SERVERS zipped with server_plan's COMPOSED plans and NAMES; ValueError when they differ in length."""
    servers, composed, names = list(servers or []), list(composed or []), list(names or [])
    if not len(servers) == len(composed) == len(names):
        raise ValueError("%d servers, %d composed plans and %d variants do not match"
                         % (len(servers), len(composed), len(names)))
    return [{"variant": name, "engine": server.get("engine"), "gpus": server.get("gpus") or "all",
             "argv": plan.get("argv"), "running": plan.get("running"), "composed": plan}
            for name, server, plan in zip(names, servers, composed)]


def refusal(failed: Any, names: list) -> dict:
    """The variant a failed planning task names and the message to fail with: the failed item of the
    drafter checks (a loop), the refused item of server_plan's batch (`batch_item`), or none."""
    failed = failed if isinstance(failed, Mapping) else {}
    msg = failed.get("msg") or "failed"
    variant = None
    for result in failed.get("results") or []:
        if isinstance(result, Mapping) and result.get("failed"):
            variant = (result.get("item") or {}).get("variant")
            msg = result.get("msg") or msg
            break
    item = failed.get("batch_item")
    if variant is None and isinstance(item, int) and 1 <= item <= len(names):
        variant = names[item - 1]
    return {"variant": variant, "msg": ("variant %s: %s" % (variant, msg)) if variant else str(msg)}
