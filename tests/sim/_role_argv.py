"""The launch command lines the roles compose, rendered from the role files themselves.

Ansible's own templar evaluates, in task order, the set_fact and include_role expressions
of roles/eagle_drafter/tasks/main.yml, the variables the server_spec lookup reads into
gpufleet.serving._server's one input (with the lookup's own functions), the arguments that roles/_server/tasks/plan.yml hands to
gpufleet.serving.server_plan, and the secret --config file's content from
roles/_server/tasks/launch.yml, over the role defaults and an inventory's group_vars;
server_plan's own compose() (plugins/module_utils/_server/plan.py) then builds the argv. No
play runs, so this takes well under a second and follows any change to those files.
"""
import glob
import os

import yaml
from ansible.errors import AnsibleError
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


def _set_facts(variables, tasks_file, only=None):
    """Render the file's set_fact and include_role vars in order. A fact that needs a task's
    result (a registered variable) or a plugin is left out; the argv's own rendering then names it."""
    for task in _load(tasks_file):
        facts = task.get("ansible.builtin.set_fact")
        if facts:
            for name, expr in facts.items():
                if only is None or name in only:
                    try:
                        variables[name] = _render(variables, expr)
                    except AnsibleError:
                        if only is not None:
                            raise
        include = task.get("ansible.builtin.include_role") or task.get("ansible.builtin.import_role")
        if include and task.get("vars"):
            rendered = {}
            for name, expr in task["vars"].items():
                try:
                    rendered[name] = _render(variables, expr)
                except AnsibleError:  # e.g. a lookup plugin, not loaded here: the argv does not need it
                    pass
            variables.update(rendered)


# What `default(omit)` renders to here: the argument is then left out, as Ansible leaves it out.
_OMIT = "__omit_place_holder__role_argv"


def _plan_params(variables):
    """The server_plan arguments of plan.yml, rendered; types as the module's argument_spec has them."""
    tasks = _load(os.path.join(ROLES, "_server", "tasks", "plan.yml"))
    ((block, task),) = [(b, t) for b in [{"block": tasks}] + [t for t in tasks if "block" in t]
                        for t in b["block"] if "gpufleet.serving.server_plan" in t]
    variables = dict(variables, omit=_OMIT)
    # The block's and the task's own vars (the module's options are read from them), in order;
    # one that needs what is not loaded here (a registered result, a lookup) is left out.
    for name, expr in list((block.get("vars") or {}).items()) + list((task.get("vars") or {}).items()):
        try:
            variables[name] = _render(variables, expr)
        except AnsibleError:
            pass
    params = {k: _render(variables, v) for k, v in task["gpufleet.serving.server_plan"].items()}
    params = {k: v for k, v in params.items() if v != _OMIT}
    # The settings in one dict (server_plan's `settings`), spread over the options as the module spreads them.
    params = dict(params.pop("settings", {}), **params)
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
    if eagle:
        for name in ("args.yml", "main.yml"):
            tasks = os.path.join(ROLES, "eagle_drafter", "tasks", name)
            if os.path.exists(tasks):
                _set_facts(variables, tasks)
    _set_facts(variables, os.path.join(ROLES, "sglang_server", "tasks", "main.yml"))
    # The role's one input, as its server_spec lookup builds it (the same functions; no plugin is
    # loaded here), and plan.yml's server_plan options for it, as its filter builds them.
    variables["server_spec"] = _settings.server(
        _registry.get("sglang"), _settings.given_from("sglang", variables, lambda v: _render(variables, v)))
    variables["_server_plan_args"] = {"settings": _settings.plan_options(variables["server_spec"]),
                                      "service_mgr": variables["ansible_facts"]["service_mgr"]}
    composed = _plan.compose(_plan_params(variables))
    variables["_server_plan"] = composed
    secret = None
    if api_key:
        for task in _load(os.path.join(ROLES, "_server", "tasks", "launch.yml")):
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
