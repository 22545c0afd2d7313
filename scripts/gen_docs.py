# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the facts that docs must show, from the one place each is defined.

  - engine names (the modules' `engine` choices) and kill patterns: each engine's file in plugins/module_utils/_engines/ (Engine.kill_patterns),
    as plugins/module_utils/_gpu/patterns.py ENGINE_PATTERNS gathers them
  - protected GPU daemons: plugins/module_utils/_gpu/protect.py DAEMONS
  - gpu_health's checks (docs/gpu_health.md): plugins/module_utils/_gpu/health.py CHECKS
  - role variables: roles/*/meta/argument_specs.yml; the server roles' own (their options and
    defaults/main.yml) from the server spec table, plugins/module_utils/_engines/settings.py
  - vllm_server's deprecated speculative method list: the registry (Engine.speculative_methods)
  - llm_benchmark's options that a playbook or an experiment may set (its DOCUMENTATION, _fleet's
    fleet_benchmark suboptions, the docs' benchmark keys): plugins/module_utils/_bench/options.py OPTIONS
  - server_plan's `speculative` suboptions: the server spec table's SPECULATIVE rows
  - the fleet's variants (_fleet's fleet_variant choices, compare_engines.yml's defaults): each
    engine's labels, plugins/plugin_utils/_experiment/engine_settings.py
  - a router worker's fields (router_info's and router_worker's RETURN): plugins/module_utils/_router/kind.py
    WORKER_FIELDS

Each generated block sits between two marker lines, which keep their indentation:

  # BEGIN GENERATED <name> (scripts/gen_docs.py)      (YAML, in DOCUMENTATION strings)
  <!-- BEGIN GENERATED <name> (scripts/gen_docs.py) -->  (Markdown)
  ...
  # END GENERATED <name>  /  <!-- END GENERATED <name> -->

Usage: python scripts/gen_docs.py           rewrite the blocks in place
       python scripts/gen_docs.py --check   list stale files, exit 1 if any
(tests/unit/test_generated_docs.py runs --check, so CI fails on drift.)
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
import textwrap

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(r"^(?P<indent>\s*)(?P<open>#|<!--) BEGIN GENERATED (?P<name>[\w-]+)\b.*$")
ROLES = ("sglang_server", "eagle_drafter", "vllm_server", "sim_fleet", "host_setup", "router")


def _constant(relpath, name):
    """A literal constant of a module_utils file, read without importing Ansible."""
    with open(os.path.join(REPO, relpath), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError("%s has no literal %s" % (relpath, name))


def engine_patterns():
    """{engine: kill patterns}, imported as the modules import it (the registry is code, not a literal)."""
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    from tests.support import syspath  # pylint: disable=import-outside-toplevel
    syspath.install()
    from ansible_collections.gpufleet.serving.plugins.module_utils._gpu import (  # pylint: disable=import-outside-toplevel
        patterns,
    )
    return patterns.ENGINE_PATTERNS


def daemons():
    return list(_constant("plugins/module_utils/_gpu/protect.py", "DAEMONS"))


def _yaml_item(text, width=100):
    """A YAML list item, single-quoted, folded at spaces (a line break reads as a space)."""
    lines = textwrap.wrap(text.replace("'", "''"), width, break_long_words=False, break_on_hyphens=False)
    return "- '%s'" % "\n  ".join(lines)


def _markdown_text(text):
    """Ansible doc markup (C() V() O() E() P() I()) as Markdown."""
    text = re.sub(r"P\(([\w.]+)#\w+\)", r"`\1`", text)
    text = re.sub(r"O\([\w.]+#\w+:([\w.]+)\)", r"`\1`", text)  # another plugin's option: its name
    text = re.sub(r"RV\(([^)]*)\)", r"`\1`", text)
    text = re.sub(r"[CVOE]\(([^)]*)\)", r"`\1`", text)
    text = re.sub(r"I\(([^)]*)\)", r"*\1*", text)
    return text.replace("|", "\\|")


def _markdown_default(spec):
    if spec.get("required"):
        return "required"
    if "default" not in spec or spec["default"] is None:
        return "null"
    value = spec["default"]
    if isinstance(value, str):
        return "`%s`" % value if value else '`""`'
    if isinstance(value, bool):
        return "`%s`" % str(value).lower()
    if isinstance(value, list) and value:
        return ", ".join("`%s`" % str(v).replace("|", "\\|") for v in value)
    return "`%s`" % json.dumps(value)


# --- generated blocks: name -> function(kind) returning lines (without indentation) ---

def _markdown_table(head, rows):
    """A Markdown table: HEAD the column names, ROWS tuples of cell texts."""
    return (["| %s |" % " | ".join(head), "|%s" % (" --- |" * len(head))]
            + ["| %s |" % " | ".join(row) for row in rows])


def _engine_patterns(kind):
    rows = list(engine_patterns().items())
    if kind == "yaml":
        return [_yaml_item("V(%s): %s." % (n, ", ".join("C(%s)" % p for p in pats))) for n, pats in rows]
    return ["- `%s`: %s" % (n, ", ".join("`%s`" % p for p in pats)) for n, pats in rows]


def _engine_choices(kind):
    """gpu_release's `engine` choices: every engine, then `any` (_gpu/patterns.py engine_choices)."""
    if kind != "yaml":
        raise ValueError("engine-choices is a YAML block")
    any_engine = _constant("plugins/module_utils/_gpu/patterns.py", "ANY_ENGINE")
    return ["choices:"] + ["  - %s" % n for n in list(engine_patterns()) + [any_engine]]


def _engine_names(first=()):
    """A module's `engine` choices: FIRST, then every engine of the registry (the argument specs read it)."""
    def render(kind):
        if kind != "yaml":
            raise ValueError("engine-names is a YAML block")
        return ["choices:"] + ["  - %s" % n for n in list(first) + list(engine_patterns())]
    return render


def variants():
    """(base variants, EAGLE-3 variants) in the registry's order: the labels engine_settings gives."""
    engine_patterns()  # puts the collection on sys.path
    from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.engine_settings import (  # pylint: disable=import-outside-toplevel
        engine_settings,
    )
    settings = [engine_settings(name) for name in engine_patterns()]
    return [s["label"] for s in settings], [s["eagle_label"] for s in settings]


def _compare_variants(kind):
    """compare_engines.yml's default variants, as two play variables."""
    if kind != "yaml":
        raise ValueError("compare-variants is a YAML block")
    base, eagle = variants()
    return ["_compare_base_variants: [%s]" % ", ".join(base), "_compare_eagle_variants: [%s]" % ", ".join(eagle)]


def _speculative_methods(name):
    """An engine's speculative methods (Engine.speculative_methods), as a YAML list."""
    def render(kind):
        if kind != "yaml":
            raise ValueError("speculative-methods is a YAML block")
        engine_patterns()  # puts the collection on sys.path
        from ansible_collections.gpufleet.serving.plugins.module_utils._engines import (  # pylint: disable=import-outside-toplevel
            registry,
        )
        return ["- %s" % m for m in registry.get(name).speculative_methods]
    return render


def _tested_version(name):
    """The engine release the collection is tested against (Engine.tested_version), as the
    role variable NAME_server_tested_version."""
    def render(kind):
        if kind != "yaml":
            raise ValueError("tested-version is a YAML block")
        engine_patterns()  # puts the collection on sys.path
        from ansible_collections.gpufleet.serving.plugins.module_utils._engines import (  # pylint: disable=import-outside-toplevel
            registry,
        )
        return ['%s_server_tested_version: "%s"' % (name, registry.get(name).tested_version)]
    return render


def _gpu_daemons(kind):
    if kind == "yaml":
        return [_yaml_item("The GPU system daemons: %s." % ", ".join("C(%s)" % d for d in daemons()))]
    return ["GPU daemons, by executable: %s." % ", ".join("`%s`" % d for d in daemons())]


def _role_variables(role):
    def render(kind):
        if kind != "markdown":
            raise ValueError("role variables are a Markdown block")
        path = os.path.join(REPO, "roles", role, "meta", "argument_specs.yml")
        with open(path, encoding="utf-8") as handle:
            options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
        rows = []
        for name, spec in options.items():
            desc = spec.get("description", "")
            desc = " ".join(desc) if isinstance(desc, list) else desc
            rows.append(("`%s`" % name, _markdown_default(spec), _markdown_text(desc)))
        return _markdown_table(("name", "default", "meaning"), rows)
    return render


def _server_table():
    engine_patterns()  # puts the collection on sys.path
    from ansible_collections.gpufleet.serving.plugins.module_utils._engines import (  # pylint: disable=import-outside-toplevel
        registry,
        settings,
    )
    return registry, settings


def _server_options(name):
    """An engine's server role variables (argument spec options), from the server spec table."""
    def render(kind):
        if kind != "yaml":
            raise ValueError("server-options is a YAML block")
        registry, spec = _server_table()
        return _options_block(spec.settings_for(name), name + "_server_", name, registry.get(name).title)
    return render


def _options_block(rows, prefix, engine, title):
    """Argument spec options of ROWS (settings of the server spec table), named PREFIX + name."""
    lines = []
    dummy, spec = _server_table()
    for setting in rows:
        lines += ["%s%s:" % (prefix, setting.name), "  description:"]
        lines += ["    " + line for paragraph in setting.doc_for(engine, title)
                  for line in _yaml_item(paragraph).split("\n")]
        lines.append("  type: %s" % setting.type)
        if setting.elements:
            lines.append("  elements: %s" % setting.elements)
        if setting.choices is not None:
            lines.append("  choices: %s" % json.dumps(list(setting.choices)))
        shown = spec.shown_default(setting, engine)
        if setting.required:
            lines.append("  required: true")
        elif shown is not None:
            lines.append("  default: %s" % json.dumps(shown))
        if setting.no_log:
            lines.append("  no_log: true")
    return lines


def _yaml_variable(name, value):
    """NAME: VALUE as YAML lines (a non-empty list one item a line, as the lint's line length wants)."""
    if isinstance(value, list) and value:
        return ["%s:" % name] + ["  - %s" % json.dumps(item) for item in value]
    return ["%s: %s" % (name, json.dumps(value))]


def _drafter_options(kind):
    """The eagle_drafter role's drafter settings (argument spec options), from the table's DRAFTER rows."""
    if kind != "yaml":
        raise ValueError("drafter-options is a YAML block")
    registry, spec = _server_table()
    return _options_block(spec.DRAFTER, "eagle_drafter_", registry.DEFAULT, registry.get(registry.DEFAULT).title)


def _drafter_defaults(kind):
    if kind != "yaml":
        raise ValueError("drafter-defaults is a YAML block")
    registry, spec = _server_table()
    return [line for s in spec.DRAFTER
            for line in _yaml_variable("eagle_drafter_" + s.name, spec.role_default(s, registry.DEFAULT))]


def _server_defaults(name):
    """An engine's server role defaults (defaults/main.yml), from the server spec table."""
    def render(kind):
        if kind != "yaml":
            raise ValueError("server-defaults is a YAML block")
        dummy, spec = _server_table()
        return [line for s in spec.settings_for(name)
                for line in _yaml_variable("%s_server_%s" % (name, s.name), spec.role_default(s, name))]
    return render


def _experiment_format(kind):
    """The experiment file's keys, from where each is defined (plugin_utils/_experiment)."""
    if kind != "markdown":
        raise ValueError("experiment-format is a Markdown block")
    engine_patterns()  # puts the collection on sys.path
    from ansible_collections.gpufleet.serving.plugins.module_utils._engines import (  # pylint: disable=import-outside-toplevel
        registry,
    )
    from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import (  # pylint: disable=import-outside-toplevel
        gates,
        schema,
    )

    def table(head, rows):
        return _markdown_table((head, "type", "meaning"), [
            ("`%s`" % key, kind_, _markdown_text(meaning)) for key, (kind_, meaning) in rows.items()])

    def names(options):
        return ", ".join("`%s`" % name for name in options)

    lines = table("top-level key", schema.TOP_FORMAT) + [""] + table("variant key", schema.VARIANT_FORMAT) + [""]
    lines += _markdown_table(("gate", "meaning"), [("`%s`" % name, _markdown_text(meaning))
                                                   for name, meaning in gates.GATE_DOCS.items()])
    lines += ["", "Keys of `server`, per engine (its server role's variables without the prefix; "
              "`ansible-doc -t role gpufleet.serving.ENGINE_server` documents each):", ""]
    lines += ["- %s: %s" % (e.name, names(schema.server_options(e.name + "_server"))) for e in registry.engines()]
    lines += ["", "Keys of `speculative` (server_plan's `speculative` option): %s." % names(schema.speculative_options()),
              "", "Keys of `benchmark` (llm_benchmark's options): %s." % names(schema.benchmark_options())]
    return lines


def _bench_table():
    engine_patterns()  # puts the collection on sys.path
    from ansible_collections.gpufleet.serving.plugins.module_utils._bench import (  # pylint: disable=import-outside-toplevel
        options,
    )
    return options


MODULE_REF = re.compile(r"\b(O|RV)\(([^)#]+)\)")


def _to_module(text):
    """TEXT's O() and RV() of llm_benchmark's own options and returns, as references from elsewhere."""
    return MODULE_REF.sub(r"\1(gpufleet.serving.llm_benchmark#module:\2)", text)


def _bench_option(option, nested=True, rewrite=None):
    """Argument spec lines of OPTION (a row of the benchmark table); NESTED: with its default and suboptions."""
    lines = ["%s:" % option.name, "  description:"]
    lines += ["    " + line for paragraph in option.doc
              for line in _yaml_item(rewrite(paragraph) if rewrite else paragraph).split("\n")]
    lines.append("  type: %s" % option.type)
    if option.elements:
        lines.append("  elements: %s" % option.elements)
    if option.choices is not None:
        lines.append("  choices: %s" % json.dumps(list(option.choices)))
    if option.required:
        lines.append("  required: true")
    if nested and option.default is not None:
        lines.append("  default: %s" % json.dumps(option.default))
    if nested and option.suboptions:
        lines.append("  suboptions:")
        lines += ["    " + line for sub in option.suboptions for line in _bench_option(sub)]
    return lines


def _benchmark_options(kind):
    """llm_benchmark's options of the benchmark table (plugins/module_utils/_bench/options.py)."""
    if kind != "yaml":
        raise ValueError("benchmark-options is a YAML block")
    return [line for option in _bench_table().OPTIONS for line in _bench_option(option)]


def _fleet_benchmark_options(kind):
    """The _fleet role's fleet_benchmark suboptions: the benchmark table's rows, without defaults (a key not
    given leaves the module's) and without their own suboptions (the module checks those)."""
    if kind != "yaml":
        raise ValueError("fleet-benchmark-options is a YAML block")
    return [line for option in _bench_table().OPTIONS for line in _bench_option(option, False, _to_module)]


def _speculative_suboptions(kind):
    """server_plan's `speculative` suboptions, from the server spec table (settings.SPECULATIVE)."""
    if kind != "yaml":
        raise ValueError("speculative-suboptions is a YAML block")
    dummy, spec = _server_table()
    lines = []
    for setting in spec.SPECULATIVE:
        lines += ["%s:" % setting.name, "  description:"]
        lines += ["    " + line for paragraph in setting.doc_for("", "")
                  for line in _yaml_item(paragraph).split("\n")]
        lines.append("  type: %s" % setting.type)
        if setting.required:
            lines.append("  required: true")
        elif setting.default is not None:
            lines.append("  default: %s" % json.dumps(setting.default))
    return lines


def _benchmark_keys(kind):
    """The playbooks' `benchmark` keys: the benchmark table's rows (their first paragraph)."""
    if kind != "markdown":
        raise ValueError("benchmark-keys is a Markdown block")
    rows = []
    for option in _bench_table().OPTIONS:
        kind_ = option.type + (" of %s" % option.elements if option.elements else "")
        rows.append(("`%s`" % option.name, kind_, _markdown_text(option.doc[0])))
    return _markdown_table(("key", "type", "meaning"), rows)


def _gpu_health_checks(kind):
    """gpu_health's checks: plugins/module_utils/_gpu/health.py CHECKS."""
    if kind != "markdown":
        raise ValueError("gpu-health-checks is a Markdown block")
    rows = [("`%s`" % c["check"], c["scope"], c["nvml"], c["threshold"], c["verdict"], c["source"])
            for c in _constant("plugins/module_utils/_gpu/health.py", "CHECKS")]
    return _markdown_table(("check", "of", "NVML call", "threshold", "verdict", "source"), rows)


def _router_worker_fields(kind):
    """The `contains` of a router worker in RETURN: plugins/module_utils/_router/kind.py WORKER_FIELDS."""
    if kind != "yaml":
        raise ValueError("router-worker-fields is a YAML block")
    return ["%s:\n  description: %s\n  type: %s" % (name, json.dumps(meaning), type_)
            for name, type_, meaning in _constant("plugins/module_utils/_router/kind.py", "WORKER_FIELDS")]


BLOCKS = {
    "engine-patterns": _engine_patterns,
    "engine-choices": _engine_choices,
    "engine-names": _engine_names(),
    "engine-names-auto": _engine_names(["auto"]),
    "gpu-daemons": _gpu_daemons,
    "speculative-methods-vllm": _speculative_methods("vllm"),
    "tested-version-sglang": _tested_version("sglang"),
    "tested-version-vllm": _tested_version("vllm"),
    "compare-variants": _compare_variants,
}
BLOCKS.update({"role-variables-%s" % r: _role_variables(r) for r in ROLES})
BLOCKS.update({"server-options-%s" % e: _server_options(e) for e in ("sglang", "vllm")})
BLOCKS.update({"server-defaults-%s" % e: _server_defaults(e) for e in ("sglang", "vllm")})
BLOCKS["drafter-options"] = _drafter_options
BLOCKS["drafter-defaults"] = _drafter_defaults
BLOCKS["experiment-format"] = _experiment_format
BLOCKS["benchmark-keys"] = _benchmark_keys
BLOCKS["benchmark-options"] = _benchmark_options
BLOCKS["fleet-benchmark-options"] = _fleet_benchmark_options
BLOCKS["speculative-suboptions"] = _speculative_suboptions
BLOCKS["gpu-health-checks"] = _gpu_health_checks
BLOCKS["router-worker-fields"] = _router_worker_fields

FILES = [
    "plugins/doc_fragments/gpu.py",
    "plugins/doc_fragments/endpoint.py",
    "plugins/modules/gpu_release.py",
    "plugins/modules/server_plan.py",
    "plugins/modules/drafter_check.py",
    "plugins/modules/server_wait.py",
    "plugins/modules/llm_benchmark.py",
    "plugins/modules/router_info.py",
    "plugins/modules/router_worker.py",
    "plugins/lookup/engine_patterns.py",
    "roles/sglang_server/meta/argument_specs.yml",
    "roles/sglang_server/vars/main.yml",
    "roles/sglang_server/defaults/main.yml",
    "roles/vllm_server/meta/argument_specs.yml",
    "roles/vllm_server/defaults/main.yml",
    "roles/vllm_server/vars/main.yml",
    "roles/eagle_drafter/meta/argument_specs.yml",
    "roles/eagle_drafter/defaults/main.yml",
    "roles/_fleet/meta/argument_specs.yml",
    "playbooks/compare_engines.yml",
    "docs/gpu_release.md",
    "docs/gpu_health.md",
    "docs/playbooks.md",
] + ["roles/%s/README.md" % r for r in ROLES]


def render(text):
    """`text` with every generated block rewritten."""
    out, lines, i = [], text.splitlines(keepends=True), 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        found = MARKER.match(line)
        if not found:
            continue
        name, indent = found.group("name"), found.group("indent")
        kind = "yaml" if found.group("open") == "#" else "markdown"
        end = re.compile(r"^\s*%s END GENERATED %s\b" % (re.escape(found.group("open")), re.escape(name)))
        while i < len(lines) and not end.match(lines[i]):
            i += 1
        if i == len(lines):
            raise ValueError("BEGIN GENERATED %s has no END marker" % name)
        out.extend(indent + line + "\n" for body in BLOCKS[name](kind) for line in body.split("\n"))
    return "".join(out)


def main(argv):
    check = "--check" in argv
    stale = []
    for rel in FILES:
        path = os.path.join(REPO, rel)
        with open(path, encoding="utf-8") as handle:
            old = handle.read()
        new = render(old)
        if new != old:
            stale.append(rel)
            if not check:
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(new)
    if check and stale:
        sys.stderr.write("generated docs are stale, run python scripts/gen_docs.py: %s\n" % ", ".join(stale))
        return 1
    for rel in stale:
        print("rewrote %s" % rel)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
