# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""modules/router_info.py run as Ansible runs it, against the real sglang-router 0.3.2: its
documented options are its argument spec; workers, healthy count and the smg_* metrics; the
router group's options are specified alike in the router modules, and their kind choices are
the registry's."""

from __future__ import annotations

import yaml

from ansible_collections.gpufleet.serving.plugins.doc_fragments.router import ModuleDocFragment as Router
from ansible_collections.gpufleet.serving.plugins.module_utils._router import registry
from tests.support import module_docs


def test_documented_options_are_the_argument_spec():
    assert module_docs.mismatches("router_info") == []


def test_the_router_options_are_the_same_in_every_router_module_and_the_kinds_the_registry():
    shared = yaml.safe_load(Router.DOCUMENTATION)["options"]
    assert shared["router_kind"]["choices"] == registry.names()
    specs = [{name: module_docs.spec(module)[name] for name in shared} for module in ("router_worker", "router_info", "router_probe")]
    assert specs[0] == specs[1] == specs[2]


def test_workers_healthy_count_and_metrics(router, tiny):
    one, two = tiny(), tiny()
    started = router([one.url, two.url])
    result = module_docs.run("router_info", {"router_url": started.url, "metrics_url": started.metrics_url})
    assert (result["_rc"], result["changed"], result["healthy"], result["total"]) == (0, False, 2, 2), result.get("msg")
    assert sorted(w["url"] for w in result["workers"]) == sorted([one.url, two.url])
    assert result["metrics"]["smg_worker_pool_size"] == 2
    assert set(result["worker_metrics"]) == {one.url, two.url}
    bare = module_docs.run("router_info", {"router_url": started.url, "metrics": False})
    assert bare["metrics_url"] is None and "metrics" not in bare and bare["healthy"] == 2
