# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read an experiment file, refuse what is wrong, expand the matrices, assign hosts.

The file format is documented in plugins/modules/experiment_plan.py (DOCUMENTATION, option
``file``). Every refusal is an InvalidInput naming FILE:LINE, the key path and what to
change, raised before any host is touched.

A variant's fingerprint is the sha256 of its own settings (engine, server, speculative, env,
benchmark) as sorted JSON: a recorded result counts for a re-run only while the fingerprint
is the same. Gates are left out of it, since a changed gate needs no new measurement. On each
host the host's own server settings join it (host_fingerprint.py).
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import itertools
import json
import os

from ansible_collections.gpufleet.serving.plugins.module_utils._bench.bounds import value_problems
from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import gates as _gates
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment import schema
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.source import Source

# A file named NAME.experiment.yml gives the experiment the name NAME.
SUFFIX = ".experiment"
ENV_VALUE_TYPES = (str, int, float, bool)
# `speculative: eagle_drafter`: each host's eagle_drafter_* variables, applied by the
# gpufleet.serving.eagle_drafter role, which checks the drafter and launches the engine's role.
FROM_DRAFTER_ROLE = "eagle_drafter"
# A loaded variant's keys, in the order returned. `launch_role` starts it (the engine's role,
# or eagle_drafter); `role` plans the stop and stops it.
VARIANT_FIELDS = ("name", "engine", "role", "launch_role", "vars_prefix", "server", "speculative", "env",
                  "benchmark", "gates", "matrix_values", "fingerprint")
# No confirmation runs more variants than this: each is a launch, a wait and a benchmark, and a
# small file can name 10^8 of them (eight axes of ten values).
MAX_VARIANTS_EVER = 10000


def _nearest(word, choices):
    """The choice WORD is most likely a typo of, or None (each message spells out both forms, so
    docs/bad-inputs.md can quote it)."""
    near = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return near[0] if near else None


def _keys(src, path, mapping, allowed, what, why=None):
    """Refuse the first key of MAPPING that is not in ALLOWED (WHY: {key: what to use instead})."""
    for key in mapping:
        if key in allowed:
            continue
        if why and key in why:
            raise src.error(path + (key,), "not a %s here: %s" % (what, why[key]))
        near = _nearest(key, allowed)
        if near:
            raise src.error(path + (key,), "unknown %s; did you mean %s? the %ss: %s"
                            % (what, near, what, ", ".join(allowed)))
        raise src.error(path + (key,), "unknown %s; the %ss: %s" % (what, what, ", ".join(allowed)))


def _mapping(src, path, value, what):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise src.error(path, "must be a mapping (%s), not %s %r" % (what, type(value).__name__, value))
    return value


def _typed(src, path, value, spec):
    problem = schema.type_problem(value, spec)
    if problem:
        raise src.error(path, problem)


def _options(src, path, values, specs, what, why=None):
    values = _mapping(src, path, values, what + "s")
    _keys(src, path, values, list(specs), what, why)
    out = {}
    for key, value in values.items():
        _typed(src, path + (key,), value, specs[key])
        out[key] = _words(value, specs[key])
    return out


def _words(value, spec):
    """A list of words as the role receives it: numbers written in the file (flags' values) as strings."""
    if spec.get("type") == "list" and spec.get("elements") == "str" and isinstance(value, list):
        return [_label(v) if not isinstance(v, str) else v for v in value]
    return value


def _benchmark(src, path, value):
    options = _options(src, path, value, schema.benchmark_options(), "benchmark setting")
    for key, problem in value_problems(options):
        raise src.error(path + (key,), problem)
    return options


def _gate_settings(src, path, value):
    gates = _mapping(src, path, value, "gate: limit")
    _keys(src, path, gates, _gates.GATE_NAMES, "gate")
    for sub, problem in _gates.problems(gates):
        raise src.error(path + sub, problem)
    return dict(gates)


def _speculative(src, path, value):
    if value is None:
        return None
    if value == FROM_DRAFTER_ROLE:
        return value
    if isinstance(value, str):
        raise src.error(path, "takes the speculative settings (a mapping: algorithm, draft_model_path, ...) or "
                        "%s (each host's eagle_drafter_* variables), not %r" % (FROM_DRAFTER_ROLE, value))
    specs = schema.speculative_options()
    spec = _options(src, path, value, specs, "speculative setting")
    for key, opt in specs.items():
        if opt.get("required") and spec.get(key) in (None, ""):
            raise src.error(path, "%s is required (%s)" % (key, opt.get("description", "")))
    return spec


def _env(src, path, value):
    env = _mapping(src, path, value, "NAME: value")
    for key, val in env.items():
        if not isinstance(key, str) or not isinstance(val, ENV_VALUE_TYPES):
            raise src.error(path + (key,), "an environment variable takes a string, number or boolean, not %r"
                            % (val,))
    return dict(env)


def _word(src, path, value, what):
    if not isinstance(value, str) or not value.strip():
        raise src.error(path, "%s must be a non-empty string, not %r" % (what, value))
    return value


def _engine(src, path, raw):
    if "engine" not in raw:
        raise src.error(path, "engine is missing; one of %s" % ", ".join(_registry.names()))
    name = raw["engine"]
    known = ", ".join(_registry.names())
    if _registry.find(name) is None:
        near = _nearest(name, _registry.names())
        if near:
            raise src.error(path + ("engine",), "unknown engine %r; did you mean %s? known engines: %s"
                            % (name, near, known))
        raise src.error(path + ("engine",), "unknown engine %r; known engines: %s" % (name, known))
    if not _registry.get(name).server_role:
        # The variant's settings are checked against, and applied through, the engine's role.
        raise src.error(path + ("engine",), "engine %r has no server role (gpufleet.serving.%s_server), which an "
                        "experiment variant runs through; run it with launch.yml, benchmark.yml and teardown.yml"
                        % (name, name))
    return name


def _label(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def _matrix(src, path, value, server_specs, server):
    axes = _mapping(src, path, value, "server option: [values]")
    _keys(src, path, axes, list(server_specs), "server option", schema.SERVER_OWN_KEYS)
    for key, values in axes.items():
        if key in server:
            raise src.error(path + (key,), "also set in the variant's server; keep it in one of the two")
        if not isinstance(values, list):
            raise src.error(path + (key,), "must be a list of values, one variant each")
        if not values:
            raise src.error(path + (key,), "the matrix expands to zero variants: give at least one value")
        for i, item in enumerate(values):
            _typed(src, path + (key, i), item, server_specs[key])
    return {key: [_words(v, server_specs[key]) for v in values] for key, values in axes.items()}


def _variants(src, path, raw, top_bench, top_gates):
    """The variants one item of `variants` stands for (several with a matrix), each with its path."""
    if not isinstance(raw, dict):
        raise src.error(path, "a variant is a mapping with name, engine and server, not %r" % (raw,))
    _keys(src, path, raw, schema.VARIANT_KEYS, "variant key")
    if "name" not in raw:
        raise src.error(path, "name is missing; every variant needs a name (the reference and the report use it)")
    name = _word(src, path + ("name",), raw["name"], "name")
    engine = _engine(src, path, raw)
    role = engine + "_server"
    specs = schema.server_options(role)
    server = _options(src, path + ("server",), raw.get("server"), specs, "server option", schema.SERVER_OWN_KEYS)
    speculative = _speculative(src, path + ("speculative",), raw.get("speculative"))
    base = {  # the top-level settings are copied in, so no two variants share a mapping
        "engine": engine,
        "role": role,
        "launch_role": FROM_DRAFTER_ROLE if speculative == FROM_DRAFTER_ROLE else role,
        "vars_prefix": role + "_",
        "speculative": speculative,
        "env": _env(src, path + ("env",), raw.get("env")),
        "benchmark": copy.deepcopy(dict(top_bench, **_benchmark(src, path + ("benchmark",), raw.get("benchmark")))),
        "gates": copy.deepcopy(dict(top_gates, **_gate_settings(src, path + ("gates",), raw.get("gates")))),
    }
    if "matrix" not in raw:
        return [(path, dict(base, name=name, server=server, matrix_values={}))]
    axes = _matrix(src, path + ("matrix",), raw["matrix"], specs, server)
    out = []
    for combo in itertools.product(*axes.values()):
        values = dict(zip(axes, combo))
        label = "-".join("%s%s" % (k, _label(v)) for k, v in values.items())
        out.append((path, dict(copy.deepcopy(base), name="%s-%s" % (name, label) if label else name,
                               server=dict(copy.deepcopy(server), **values), matrix_values=values)))
    if not out:
        raise src.error(path + ("matrix",), "the matrix expands to zero variants: give at least one server option")
    return out


def _count(raw):
    """How many variants the items of `variants` stand for, from the matrices' list lengths alone
    (before any variant is built, so a 10^8 matrix costs a multiplication, not the memory)."""
    total = 0
    for item in raw:
        axes = item.get("matrix") if isinstance(item, dict) else None
        size = 1
        for values in (axes.values() if isinstance(axes, dict) else ()):
            size *= len(values) if isinstance(values, list) and values else 1
        total += size
    return total


def _check_count(src, count, limit, confirmed):
    if count > limit and not confirmed:
        raise src.error(("variants",), "%d variants after the matrices, more than max_variants (%d); set "
                        "confirm_large: true (or run with confirm) to run them all, or raise max_variants"
                        % (count, limit))
    if count > MAX_VARIANTS_EVER:
        raise src.error(("variants",), "%d variants after the matrices, more than %d, which no confirmation "
                        "runs; split the experiment or shorten the matrices' lists" % (count, MAX_VARIANTS_EVER))


def fingerprint(variant):
    own = {k: variant[k] for k in ("engine", "server", "speculative", "env", "benchmark")}
    return "sha256:" + hashlib.sha256(json.dumps(own, sort_keys=True).encode("utf-8")).hexdigest()


def _flag(src, data, key, default, check, what):
    value = data.get(key, default)
    if not check(value):
        raise src.error((key,), "must be %s, not %r" % (what, value))
    return value


def _hosts(hosts):
    if not isinstance(hosts, (list, tuple)) or not hosts:
        raise InvalidInput("hosts is empty: give the hosts that run the experiment (the play's hosts)")
    names = [str(h) for h in hosts]
    twice = sorted({h for h in names if names.count(h) > 1})
    if twice:
        raise InvalidInput("hosts lists %s twice; list each host once" % ", ".join(twice))
    return names


def assign(names, hosts, spread, placed=None):
    """{host: [variant names in order]}: every host every variant, or (spread) host i every N-th from i;
    a variant of PLACED ({name: hosts}, the variants whose server sets `nodes`) runs on those hosts only."""
    placed = placed or {}
    free = [n for n in names if n not in placed]
    if spread:
        mine = {h: {n for j, n in enumerate(free) if j % len(hosts) == i} for i, h in enumerate(hosts)}
    else:
        mine = {h: set(free) for h in hosts}
    return {h: [n for n in names if n in mine[h] or h in placed.get(n, ())] for h in hosts}


def _placed(src, variants, paths, hosts):
    """{variant name: its hosts} of the variants whose server sets `nodes` (the topology: one host, or a server
    that spans hosts, rank 0 first); a node the play does not reach is refused."""
    out = {}
    for variant in variants:
        nodes = variant["server"].get("nodes")
        if not nodes:
            continue
        for i, node in enumerate(nodes):
            if node not in hosts:
                raise src.error(paths[variant["name"]] + ("server", "nodes", i),
                                "%s is not a host of the play (%s): a variant's nodes are the hosts it runs on"
                                % (node, ", ".join(hosts)))
        out[variant["name"]] = [str(n) for n in nodes]
    spans = [(v["name"], set(out[v["name"]])) for v in variants if len(out.get(v["name"]) or ()) > 1]
    for name, hosts_of in spans[1:]:
        if hosts_of != spans[0][1]:
            raise src.error(paths[name] + ("server", "nodes"),
                            "runs on %s and %s on %s: every variant that spans hosts needs the same hosts (one "
                            "experiment file per set of hosts), since a group's nodes launch together only while "
                            "they have run the same variants before it"
                            % (", ".join(sorted(hosts_of)), spans[0][0], ", ".join(sorted(spans[0][1]))))
    return out


def _check_speedup_levels(src, variants, paths, reference):
    """A min_speedup level must be one that both the variant and the reference run (when levels are set)."""
    ref_levels = reference["benchmark"].get("levels")
    for variant in variants:
        limit = variant["gates"].get("min_speedup")
        listed = _gates.speedup_levels(limit) if limit is not None else None
        for conc in listed or ():
            for who, levels in ((variant, variant["benchmark"].get("levels")), (reference, ref_levels)):
                if levels is not None and conc not in levels:
                    raise src.error(paths[variant["name"]] + ("gates", "min_speedup", "levels"),
                                    "concurrency %s is not a benchmark level of %s (%s); add it to its "
                                    "benchmark levels or gate on one of those" % (conc, who["name"], levels))


def load(path, hosts, max_variants_default=32, confirm=False):
    """The experiment of the file at PATH (or of a Source) as a plain dict (see the module docstring),
    assigned to HOSTS."""
    hosts = _hosts(hosts)
    src = path if isinstance(path, Source) else Source(path)
    data = src.data
    if not isinstance(data, dict):
        raise src.error((), "an experiment file is a mapping with at least `reference` and `variants`")
    _keys(src, (), data, schema.TOP_KEYS, "top-level key")
    stem = os.path.splitext(os.path.basename(src.file))[0]
    name = _word(src, ("name",), data.get("name", stem[:-len(SUFFIX)] if stem.endswith(SUFFIX) else stem), "name")
    spread = _flag(src, data, "spread", False, lambda v: isinstance(v, bool), "true or false")
    limit = _flag(src, data, "max_variants", max_variants_default,
                  lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0, "a whole number above 0")
    confirm_large = _flag(src, data, "confirm_large", False, lambda v: isinstance(v, bool), "true or false")
    category_level = _flag(src, data, "category_level", None,
                           lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool) and v > 0),
                           "a concurrency level, a whole number above 0")
    top_bench = _benchmark(src, ("benchmark",), data.get("benchmark"))
    top_gates = _gate_settings(src, ("gates",), data.get("gates"))
    raw = data.get("variants")
    if not isinstance(raw, list) or not raw:
        raise src.error(("variants",), "variants must be a non-empty list of variants (name, engine, server)")
    _check_count(src, _count(raw), limit, confirm_large or confirm)
    variants, paths = [], {}
    for i, item in enumerate(raw):
        for vpath, variant in _variants(src, ("variants", i), item, top_bench, top_gates):
            if variant["name"] in paths:
                raise src.error(vpath + ("name",), "a second variant named %s (the first: %s); give each its own "
                                "name" % (variant["name"], src.where(paths[variant["name"]])))
            paths[variant["name"]] = vpath
            variants.append(variant)
    if "reference" not in data:
        raise src.error((), "reference is missing: name the variant the others are compared with (one of %s)"
                        % ", ".join(paths))
    reference = data["reference"]
    if reference not in paths:
        near = _nearest(reference, paths)
        if near:
            raise src.error(("reference",), "%r is not a variant; did you mean %s? the variants: %s"
                            % (reference, near, ", ".join(paths)))
        raise src.error(("reference",), "%r is not a variant; the variants: %s" % (reference, ", ".join(paths)))
    ref = next(v for v in variants if v["name"] == reference)
    ref["gates"].pop("min_speedup", None)  # the reference is the speed-up's divisor
    _check_speedup_levels(src, variants, paths, ref)
    for variant in variants:
        variant["fingerprint"] = fingerprint(variant)
    names = [v["name"] for v in variants]
    return {
        "name": name,
        "file": src.file,
        "checksum": src.checksum,
        "reference": reference,
        "spread": spread,
        "category_level": category_level,
        "gates": top_gates,
        "variants": [{k: v[k] for k in VARIANT_FIELDS} for v in variants],
        "assignments": assign(names, hosts, spread, _placed(src, variants, paths, hosts)),
    }
