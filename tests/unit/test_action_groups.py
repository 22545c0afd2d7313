"""meta/runtime.yml's action groups: every module in one, or excluded for a stated reason.

module_defaults passes a group's defaults to each member, so each member must take the options
its group's doc fragment names (gpufleet.serving.attributes.ACTIONGROUP_<GROUP>), and say it
is a member (its documentation extends that fragment). That a group default reaches a module:
tests/integration/test_action_group_defaults.py.
"""
import ast
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.serving.plugins.doc_fragments.attributes import ModuleDocFragment
from tests.support.paths import REPO

MODULES = Path(REPO) / "plugins" / "modules"
# Modules in no group, and why: a group is for options its members share.
EXCLUDED = {
    "server_plan": "composes a launch (host, port, paths, engine flags); a group default for base_url would be an "
                   "unsupported option there, and its api_key is the one the server starts with",
    "server_process": "a supervisor of one process by state file; shares no option",
    "gpu_health": "takes the gpu group's gpus and nvml_timeout but not devices, v1_reserve_mib or protect, which a "
                  "group default would pass to it as unsupported options",
    "drafter_check": "reads two model directories; shares no option",
    "benchmark_report": "a controller action merging result files; shares no option",
    "engine_report": "a controller action merging result files; shares no option",
    "experiment_plan": "a controller action reading an experiment file; shares no option",
    "experiment_report": "a controller action merging result files; shares no option",
    "experiment_record": "a controller action writing one variant's record; shares no option",
}


def action_groups():
    runtime = yaml.safe_load((Path(REPO) / "meta" / "runtime.yml").read_text())
    return runtime["action_groups"]


def documentation(name):
    tree = ast.parse((MODULES / ("%s.py" % name)).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DOCUMENTATION" for t in node.targets):
            return yaml.safe_load(node.value.value)
    raise AssertionError("%s has no DOCUMENTATION" % name)


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
        # The gpu group's options come from the gpu doc fragment (one argument spec, _gpu/args.py).
        if "gpufleet.serving.gpu" in doc["extends_documentation_fragment"]:
            from ansible_collections.gpufleet.serving.plugins.doc_fragments.gpu import ModuleDocFragment as Gpu
            documented |= option_names(yaml.safe_load(Gpu.DOCUMENTATION))
        assert set(shared) <= documented, (module, set(shared) - documented)


def test_the_endpoint_takes_one_name_with_the_other_as_alias():
    for module in action_groups()["endpoint"]:
        spec = documentation(module)["options"]["base_url"]
        assert spec["aliases"] == ["url"], module
