# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A module's DOCUMENTATION as ansible-doc shows it: its own YAML with the collection's doc
fragments it extends merged in, the way ansible.utils.plugin_docs.add_fragments merges them
(a fragment's option is added; an option the module documents itself wins). Read without
Ansible's plugin loader, so a unit test needs no configured collection path."""

from __future__ import annotations

import importlib

import yaml

COLLECTION = "gpufleet.serving."
PACKAGE = "ansible_collections.gpufleet.serving.plugins."


def fragment(name):
    """The YAML of a collection doc fragment named as extends_documentation_fragment names it
    (gpufleet.serving.NAME or gpufleet.serving.NAME.VARIABLE)."""
    parts = name[len(COLLECTION):].split(".")
    cls = importlib.import_module(PACKAGE + "doc_fragments." + parts[0]).ModuleDocFragment
    return yaml.safe_load(getattr(cls, parts[1] if len(parts) > 1 else "DOCUMENTATION"))


def documentation(module):
    """The merged DOCUMENTATION of the collection module MODULE (its name without the collection)."""
    doc = yaml.safe_load(importlib.import_module(PACKAGE + "modules." + module).DOCUMENTATION)
    for name in doc.get("extends_documentation_fragment") or []:
        if not name.startswith(COLLECTION):
            continue
        extra = fragment(name)
        for section in ("options", "attributes"):
            merged = dict(extra.get(section) or {})
            merged.update(doc.get(section) or {})
            if merged:
                doc[section] = merged
    return doc
