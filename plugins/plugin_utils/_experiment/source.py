# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""An experiment file read as YAML with the line of every key and list item.

Errors name FILE:LINE and the key path (``variants[2].server.tp_size``), so the data is
built from the composed node tree (yaml.compose, the safe loader's constructors) rather than
by yaml.safe_load, which forgets where each value stood.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os

import yaml

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput


def path_text(path):
    """('variants', 2, 'server', 'tp_size') -> 'variants[2].server.tp_size'."""
    out = ""
    for part in path:
        out += "[%d]" % part if isinstance(part, int) else ("." if out else "") + str(part)
    return out or "(top level)"


class Source:
    """The file's data (`data`), its sha256 (`checksum`) and `where(path)` -> 'FILE:LINE: PATH'.

    Source.given(data, origin) stands for an experiment a playbook builds itself (a preset): the
    same checks, with errors naming ORIGIN and the key path, and no line.
    """

    @classmethod
    def given(cls, data, origin):
        src = cls.__new__(cls)
        src.file = origin
        src.checksum = "sha256:" + hashlib.sha256(json.dumps(data, sort_keys=True, default=str)
                                                  .encode("utf-8")).hexdigest()
        src.lines = {}
        src.data = copy.deepcopy(data)
        return src

    def __init__(self, path):
        self.file = os.path.abspath(os.path.expanduser(str(path)))
        try:
            with open(self.file, "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            raise InvalidInput("cannot read the experiment file %s: %s" % (self.file, exc.strerror or exc))
        self.checksum = "sha256:" + hashlib.sha256(raw).hexdigest()
        self.lines = {}
        try:
            node = yaml.compose(raw.decode("utf-8"), Loader=yaml.SafeLoader)
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise InvalidInput("%s: not valid YAML: %s" % (self.file, exc))
        self.data = self._build(node, ()) if node is not None else None

    def _build(self, node, path):
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            out, own, written = {}, {id(k) for k, unused in node.value}, set()
            _flatten(node)  # `<<: *anchor` merge keys, as yaml.safe_load applies them (the mapping's own win)
            for key_node, value_node in node.value:
                key = self._scalar(key_node, path)
                if id(key_node) in own:
                    if key in written:
                        raise InvalidInput("%s: %s is set twice; keep one" % (self.at(path + (key,), key_node), key))
                    written.add(key)
                self.lines[path + (key,)] = key_node.start_mark.line + 1
                out[key] = self._build(value_node, path + (key,))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self._build(item, path + (i,)) for i, item in enumerate(node.value)]
        return self._scalar(node)

    def _scalar(self, node, path=()):
        if not isinstance(node, yaml.ScalarNode):
            raise InvalidInput("%s: a key must be a plain word, not a list or a mapping" % self.where(path))
        return _construct(node)

    def at(self, path, node):
        return "%s:%d: %s" % (self.file, node.start_mark.line + 1, path_text(path))

    def line(self, path):
        """The line of PATH, or of the nearest enclosing key or item that the file has."""
        path = tuple(path)
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 1)

    def where(self, path):
        if not self.lines:
            return "%s: %s" % (self.file, path_text(path))
        return "%s:%d: %s" % (self.file, self.line(path), path_text(path))

    def error(self, path, problem):
        return InvalidInput("%s: %s" % (self.where(path), problem))


def _construct(node):
    """A scalar node's value as yaml.safe_load gives it (int, float, bool, null, str, ...)."""
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def _flatten(node):
    loader = yaml.SafeLoader("")
    try:
        loader.flatten_mapping(node)
    finally:
        loader.dispose()
