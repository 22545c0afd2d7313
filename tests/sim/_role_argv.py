"""The launch command lines the roles compose, rendered from the role files themselves.

Ansible's own templar evaluates the variables the server_spec lookup reads (the role defaults, an
inventory's group_vars, the sglang_server_* and, for EAGLE-3, eagle_drafter_* ones) into
gpufleet.serving._server's one input, with the lookup's own functions
(plugins/module_utils/_engines/settings.py), and the secret --config file's content from
roles/_server/tasks/launch_files.yml; server_plan's own compose() (plugins/module_utils/_server/plan.py)
then builds the argv from the settings the plan reads. No play runs, so this takes well under a
second and follows any change to those files.
"""
import glob
import os

import yaml
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import settings as _settings
from ansible_collections.gpufleet.serving.plugins.module_utils._server import plan as _plan

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = os.path.join(REPO, "roles")
EXAMPLE = os.path.join(REPO, "inventories", "example-blackwell")


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _trusted(value):
    """Role files and group_vars are trusted templates in Ansible; plain YAML is not."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {k: _trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trusted(v) for v in value]
    return value


def _render(variables, expr):
    return Templar(loader=DataLoader(), variables=variables).template(_trusted(expr))


def _plan_params(variables):
    """server_plan's arguments as plan.yml gives them: the server's settings in one dict (the
    server_plan_options filter's function) spread over the options as the module spreads them;
    types as the module's argument_spec has them."""
    params = dict(_settings.plan_options(variables["server_spec"]),
                  service_mgr=variables["ansible_facts"]["service_mgr"])
    params["enable_metrics"] = boolean(params["enable_metrics"])
    for name in ("speculative_args", "extra_args"):
        params[name] = [str(a) for a in params[name] or []]
    return params


def inventory_vars(inventory=EXAMPLE):
    """Role defaults, then the inventory's group_vars (the later file wins), then role vars."""
    variables = {}
    for role in ("sglang_server", "eagle_drafter"):
        variables.update(_load(os.path.join(ROLES, role, "defaults", "main.yml")) or {})
    for path in sorted(glob.glob(os.path.join(inventory, "group_vars", "*.yml"))):
        variables.update(_load(path) or {})
    for path in sorted(glob.glob(os.path.join(ROLES, "*", "vars", "main.yml"))):
        variables.update(_load(path) or {})
    return variables


def render(eagle=False, api_key="", overrides=None, inventory=EXAMPLE):
    """(argv, secret config text or None) the roles launch for this inventory."""
    variables = _trusted(inventory_vars(inventory))
    variables.update(_trusted(dict(overrides or {})))
    variables["sglang_server_api_key"] = api_key
    variables.setdefault("ansible_facts", {"service_mgr": "systemd"})
    # The role's one input, as its server_spec lookup builds it (the same functions; no plugin is
    # loaded here): sglang_server's own, or eagle_drafter's (the lookup's `drafter`).

    def template(value):
        return _render(variables, value)
    given = _settings.given_from("sglang", variables, template)
    if eagle:
        drafter = {s.name: template(variables["eagle_drafter_" + s.name])
                   for s in _settings.DRAFTER if "eagle_drafter_" + s.name in variables}
        given.update(_settings.drafter_overrides("sglang", drafter))
    variables["server_spec"] = _settings.server(_registry.get("sglang"), given)
    composed = _plan.compose(_plan_params(variables))
    variables["_server_plan"] = composed
    secret = None
    if api_key:
        for task in _load(os.path.join(ROLES, "_server", "tasks", "launch_files.yml")):
            copy = task.get("ansible.builtin.copy") or {}
            if copy.get("dest") == "{{ _server_plan.paths.secret_config }}":
                secret = _render(variables, copy["content"])
    return [str(a) for a in composed["argv"]], secret


def split_entry(argv):
    """(entry, flags) of a launch argv: `PY -m sglang.launch_server ...` or `... sglang serve ...`."""
    if argv[1:3] == ["-m", "sglang.launch_server"]:
        return "launch_server", argv[3:]
    for i, arg in enumerate(argv[:-1]):
        if os.path.basename(arg) == "sglang" and argv[i + 1] == "serve":
            return "serve", argv[i + 2:]
    if argv[1:4] == ["-m", "sglang.cli.main", "serve"]:
        return "serve", argv[4:]
    raise ValueError("not an SGLang launch: %r" % (argv,))
