# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: benchmark_options
short_description: A playbook's llm_benchmark options as one dict, from its benchmark variable
version_added: 0.1.0
description:
  - Returns the dict a fleet playbook hands to the P(gpufleet.serving._fleet#role) role's C(benchmark) entry
    point as C(fleet_benchmark), read from the play's variables.
  - The keys are the C(fleet_benchmark) suboptions of that entry point, M(gpufleet.serving.llm_benchmark)'s
    options of those names (both generated from the collection's table of benchmark settings); a key of the play's
    C(benchmark) variable that is not one of them fails,
    naming it and the valid ones, and so does a value of the wrong type.
  - A key comes from C(benchmark) if given there, else from the playbook's older variable C(PREFIX_KEY)
    (for example C(swap_bench_levels)), else from O(defaults).
  - The older variables are deprecated; those used are named in one deprecation warning, with their new spelling.
author:
  - gpufleet.serving maintainers (@gpufleet)
options:
  _terms:
    description: The prefix of the playbook's older variables, without the trailing underscore (V(swap_bench)).
    type: list
    elements: str
    required: true
  defaults:
    description: The playbook's own defaults, used for a key set neither in C(benchmark) nor by an older variable.
    type: dict
    default: {}
seealso:
  - module: gpufleet.serving.llm_benchmark
"""

EXAMPLES = r"""
- name: Benchmark with the play's benchmark dict (built-in prompts unless it says otherwise)
  ansible.builtin.include_role:
    name: gpufleet.serving._fleet
    tasks_from: benchmark.yml
  vars:
    fleet_benchmark: "{{ lookup('gpufleet.serving.benchmark_options', 'swap_bench', defaults={'workload': {'source': 'builtin'}}) }}"
"""

RETURN = r"""
_raw:
  description: One dict of llm_benchmark options (only the keys set somewhere).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import schema

# The play variable this lookup reads; the older PREFIX_KEY variables map onto its keys.
VARIABLE = "benchmark"

display = Display()


def merge(benchmark, older, defaults, valid):
    """(the options dict, the deprecation message or "").

    BENCHMARK is the play's `benchmark` (None when unset), OLDER {old variable name: (key, value)} of the
    older variables that are set, DEFAULTS the playbook's, VALID {key: its argument spec}."""
    if benchmark is None:
        benchmark = {}
    if not isinstance(benchmark, dict):
        raise InvalidInput("%s must be a mapping of llm_benchmark options (%s), not %s %r"
                           % (VARIABLE, ", ".join(valid), type(benchmark).__name__, benchmark))
    for key in sorted(benchmark, key=str):
        if key not in valid:
            raise InvalidInput("%s.%s: unknown key; the valid keys are %s" % (VARIABLE, key, ", ".join(valid)))
        problem = schema.type_problem(benchmark[key], valid[key])
        if problem:
            raise InvalidInput("%s.%s %s" % (VARIABLE, key, problem))
    options = {key: value for key, value in defaults.items() if key in valid}
    options.update(dict(older.values()))
    options.update({key: value for key, value in benchmark.items() if value is not None})
    warning = "; ".join("%s is deprecated: use %s: {%s: ...}" % (name, VARIABLE, key) for name, (key, dummy) in older.items())
    return options, warning


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1:
            raise AnsibleLookupError("benchmark_options: give the prefix of the playbook's older variables, "
                                     "e.g. lookup('gpufleet.serving.benchmark_options', 'swap_bench')")
        variables = variables or {}
        try:
            valid = schema.benchmark_options()
            older = {}
            for key in valid:
                name = "%s_%s" % (terms[0], key)
                value = self._templar.template(variables[name]) if name in variables else None
                if value is not None:
                    older[name] = (key, value)
            benchmark = self._templar.template(variables[VARIABLE]) if VARIABLE in variables else None
            options, warning = merge(benchmark, older, self.get_option("defaults") or {}, valid)
        except InvalidInput as exc:
            raise AnsibleLookupError("benchmark_options: %s" % exc.msg)
        if warning:
            # Ansible shows a deprecation once per run however many hosts and tasks repeat it.
            display.deprecated(warning, version="2.0.0", collection_name="gpufleet.serving")
        return [options]
