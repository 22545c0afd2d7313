# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""compare_engines.yml's and swap_to_eagle.yml's variants as experiments (the mapping an
experiment file holds).

Each engine of the registry gives two variants: its label (the engine's server role, no
speculative decoding) and its EAGLE-3 label (`speculative: eagle_drafter`: each host's
eagle_drafter_* variables, launched through that role). experiment_plan checks the result
as it checks a file.
"""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry as _registry
from ansible_collections.gpufleet.serving.plugins.plugin_utils._experiment.load import FROM_DRAFTER_ROLE


def compare_variants():
    """{label: variant} for every engine of the registry, base labels first, in the registry's order."""
    base, eagle = {}, {}
    for name in _registry.names():
        base[name] = {"name": name, "engine": name}
        eagle[name + "+eagle3"] = {"name": name + "+eagle3", "engine": name, "speculative": FROM_DRAFTER_ROLE}
    return dict(base, **eagle)


def compare_experiment(labels, reference=None, benchmark=None, name="compare_engines"):
    """The experiment of LABELS in order against REFERENCE (default: the default engine's label);
    ValueError naming the known labels for any other."""
    known = compare_variants()
    if not isinstance(labels, (list, tuple)) or not labels:
        raise ValueError("compare_variants must be a non-empty list of variants, from %s" % ", ".join(known))
    unknown = [str(label) for label in labels if label not in known]
    if unknown:
        raise ValueError("compare_variants: unknown variant %s; the variants are %s"
                         % (", ".join(repr(u) for u in unknown), ", ".join(known)))
    return {
        "name": name,
        "reference": reference if reference not in (None, "") else _registry.DEFAULT,
        "benchmark": dict(benchmark or {}),
        "variants": [dict(known[label]) for label in labels],
    }


# swap_to_eagle.yml's variants: their names are the labels its benchmark runs, request records
# and report have always used.
SWAP_BASELINE = "baseline"
SWAP_CANDIDATE = "candidate"


def swap_experiment(engine=None, baseline=True, benchmark=None, name="swap_to_eagle"):
    """swap_to_eagle.yml's experiment: the ENGINE's base server (`baseline`, left out without
    BASELINE), then the same engine with the host's EAGLE-3 drafter (`candidate`), compared
    with the base server. ValueError naming the engines for an unknown ENGINE."""
    engine = engine or _registry.DEFAULT
    if engine not in _registry.names():
        raise ValueError("engine must be one of %s, not %r" % (", ".join(_registry.names()), engine))
    variants = [{"name": SWAP_BASELINE, "engine": engine}] if baseline else []
    variants.append({"name": SWAP_CANDIDATE, "engine": engine, "speculative": FROM_DRAFTER_ROLE})
    return {
        "name": name,
        "reference": variants[0]["name"],
        "benchmark": dict(benchmark or {}),
        "variants": variants,
    }
