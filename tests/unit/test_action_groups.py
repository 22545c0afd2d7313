"""meta/runtime.yml's action groups: every module in one, or excluded for a stated reason.

module_defaults passes a group's defaults to each member, so each member must take the options
its group's doc fragment names (gpufleet.serving.attributes.ACTIONGROUP_<GROUP>), and say it
is a member (its documentation extends that fragment). That a group default reaches a module:
tests/integration/test_action_group_defaults.py.
"""
import ast
import importlib
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.serving.plugins.doc_fragments.attributes import ModuleDocFragment
from tests.support import doc_fragments
from tests.support.paths import REPO

MODULES = Path(REPO) / "plugins" / "modules"
# Modules in no group, and why: a group is for options its members share.
EXCLUDED = {
    "server_plan": "composes a launch (host, port, paths, engine flags); a group default for base_url would be an "
                   "unsupported option there, and its api_key is the one the server starts with",
    "server_process": "a supervisor of one process by state file; shares no option",
    "server_ranks": "reads one node's processes by state file; shares no option",
    "server_info": "reads the state files of a state directory; shares no option",
    "gpu_health": "takes the gpu group's gpus and nvml_timeout but not devices, v1_reserve_mib or protect, which a "
                  "group default would pass to it as unsupported options",
    "drafter_check": "reads two model directories; shares no option",
    "benchmark_report": "a controller action merging result files; shares no option",
    "engine_report": "a controller action merging result files; shares no option",
    "experiment_plan": "a controller action reading an experiment file; shares no option",
    "experiment_report": "a controller action merging result files; shares no option",
    "experiment_record": "a controller action writing one variant's record; shares no option",
    "group_barrier": "a controller action where a server group's nodes meet; shares no option",
    "router_probe_report": "a controller action writing the rollout probe's report; shares no option",
    "router_lock": "takes the router group's router_url but not api_key, validate_certs, router_kind or "
                   "request_timeout (it speaks no HTTP), which a group default would pass to it as unsupported options",
}


def action_groups():
    runtime = yaml.safe_load((Path(REPO) / "meta" / "runtime.yml").read_text())
    return runtime["action_groups"]


def documentation(name):
    """The module's DOCUMENTATION with the doc fragments it extends (the gpu group's options come
    from the gpu fragment, the endpoint group's from the endpoint fragment)."""
    return doc_fragments.documentation(name)


def argument_spec(name):
    """{option: {key: its value's syntax tree, dumped}} of the argument spec in the module's main()
    (dict(type=..., ...) entries; the order the keys are written in does not matter)."""
    source = (MODULES / ("%s.py" % name)).read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg == "argument_spec" and isinstance(node.value, ast.Call):
            return {k.arg: {kk.arg: ast.dump(kk.value) for kk in k.value.keywords} for k in node.value.keywords}
    raise AssertionError("%s has no argument_spec=dict(...)" % name)


def option_names(doc):
    """Every name a module's options answer to: the option and its aliases."""
    names = set()
    for name, spec in doc["options"].items():
        names.add(name)
        names.update(spec.get("aliases", []))
    return names


def fragment(group):
    return yaml.safe_load(getattr(ModuleDocFragment, "ACTIONGROUP_%s" % group.upper()))


def test_every_module_is_in_one_group_or_excluded():
    modules = sorted(p.stem for p in MODULES.glob("*.py") if p.stem != "__init__")
    grouped = [m for members in action_groups().values() for m in members]
    assert len(grouped) == len(set(grouped)), "a module is in two groups: %s" % grouped
    assert not set(grouped) & set(EXCLUDED), set(grouped) & set(EXCLUDED)
    assert sorted(grouped + list(EXCLUDED)) == modules


@pytest.mark.parametrize("group", sorted(action_groups()))
def test_each_member_takes_the_options_its_group_shares(group):
    attribute = fragment(group)["attributes"]["action_group"]
    assert attribute["membership"] == ["gpufleet.serving.%s" % group]
    shared = re.findall(r"O\((\w+)\)", " ".join(attribute["description"]))
    assert shared, "the fragment names no shared option"
    for module in action_groups()[group]:
        doc = documentation(module)
        assert "gpufleet.serving.attributes.ACTIONGROUP_%s" % group.upper() in doc["extends_documentation_fragment"]
        documented = option_names(doc)
        assert set(shared) <= documented, (module, set(shared) - documented)


def test_the_endpoint_takes_one_name_with_the_other_as_alias():
    for module in action_groups()["endpoint"]:
        spec = documentation(module)["options"]["base_url"]
        assert spec["aliases"] == ["url"], module


def test_the_endpoint_options_are_documented_once_and_specified_alike():
    """The endpoint fragment documents the options server_wait and llm_benchmark share (one
    wording); neither module documents them again, and their argument specs are the same text."""
    from ansible_collections.gpufleet.serving.plugins.doc_fragments.endpoint import ModuleDocFragment as Endpoint

    shared = yaml.safe_load(Endpoint.DOCUMENTATION)["options"]
    specs = []
    for module in action_groups()["endpoint"]:
        own = yaml.safe_load(importlib.import_module(
            "ansible_collections.gpufleet.serving.plugins.modules." + module).DOCUMENTATION)
        assert "gpufleet.serving.endpoint" in own["extends_documentation_fragment"], module
        assert not set(own["options"]) & set(shared), (module, set(own["options"]) & set(shared))
        spec = argument_spec(module)
        assert set(shared) <= set(spec), (module, set(shared) - set(spec))
        specs.append({name: spec[name] for name in shared})
    assert all(s == specs[0] for s in specs), specs
