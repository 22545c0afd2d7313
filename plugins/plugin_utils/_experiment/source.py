# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""An experiment file read as YAML with the line of every key and list item.

Errors name FILE:LINE and the key path (``variants[2].server.tp_size``), so the data is
built from the composed node tree (yaml.compose, the safe loader's constructors) rather than
by yaml.safe_load, which forgets where each value stood.

The file may come from someone else, so reading it is bounded: its size (MAX_BYTES, and only a
regular file), the nesting depth (MAX_DEPTH), the values that aliases add (MAX_ALIAS_NODES: a
496-byte "billion laughs" file would otherwise expand to millions of values), an alias inside
itself (refused, not followed), and the tags (only the plain values yaml.safe_load gives:
no ``!!python/...``, ``!!binary``, ``!!set`` or local ``!tag``). Each refusal names the file, the
line and the reason.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import stat

import yaml

from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput

# An experiment file is a few kilobytes; a megabyte is far past any real one.
MAX_BYTES = 1024 * 1024
# Lists and mappings inside each other; the format needs five or six.
MAX_DEPTH = 32
# Values an alias may add by repeating its anchor; a shared benchmark or server block needs tens.
MAX_ALIAS_NODES = 10000
_CORE = "tag:yaml.org,2002:"
# The tags the safe loader resolves plain values to (a timestamp is kept as the text written).
PLAIN_TAGS = frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null", "map", "seq", "merge",
                                           "timestamp"))


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
        raw = _read_bounded(self.file)
        self.checksum = "sha256:" + hashlib.sha256(raw).hexdigest()
        self.lines = {}
        try:
            node = yaml.compose(raw.decode("utf-8"), Loader=yaml.SafeLoader)
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise InvalidInput("%s: not valid YAML: %s" % (self.file, exc))
        except RecursionError:
            raise InvalidInput("%s: lists or mappings nested deeper than the parser follows (more than %d is "
                               "refused); flatten the file" % (self.file, MAX_DEPTH))
        if node is not None:
            self._measure(node, 0, set(), {})
        self.data = self._build(node, ()) if node is not None else None

    def _measure(self, node, depth, open_ids, sizes):
        """The number of values NODE stands for with every alias written out, counted once per node
        (so a bomb is measured, not expanded). Refuses an alias inside itself, nesting past MAX_DEPTH
        and aliases that add more than MAX_ALIAS_NODES values to the file's own."""
        key = id(node)
        if key in sizes:
            return sizes[key]
        line = "%s:%d" % (self.file, node.start_mark.line + 1)
        if key in open_ids:
            raise InvalidInput("%s: the list or mapping anchored here holds an alias to itself (a recursive "
                               "alias); write the value out" % line)
        if depth >= MAX_DEPTH:
            raise InvalidInput("%s: lists or mappings nested more than %d deep; flatten the file"
                               % (line, MAX_DEPTH))
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = ()
        open_ids.add(key)
        total = 1 + sum(self._measure(child, depth + 1, open_ids, sizes) for child in children)
        open_ids.discard(key)
        sizes[key] = total
        if total > len(sizes) + MAX_ALIAS_NODES:
            raise InvalidInput("%s: aliases expand this to %d values, more than %d beyond the file's own; write "
                               "the values out or use fewer aliases" % (line, total, MAX_ALIAS_NODES))
        return total

    def _build(self, node, path):
        if node.tag not in PLAIN_TAGS:
            raise InvalidInput("%s: the tag %s is refused; an experiment file holds plain values (strings, "
                               "numbers, booleans, null, lists, mappings): remove the tag"
                               % (self.at(path, node), node.tag.replace(_CORE, "!!")))
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            out, own, written = {}, {id(k) for k, unused in node.value}, set()
            try:  # `<<: *anchor` merge keys, as yaml.safe_load applies them (the mapping's own win)
                _flatten(node)
            except yaml.YAMLError as exc:
                raise InvalidInput("%s: %s" % (self.where(path), getattr(exc, "problem", None) or exc))
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
        return self._scalar(node, path)

    def _scalar(self, node, path=()):
        if node.tag not in PLAIN_TAGS:
            raise InvalidInput("%s: the tag %s is refused; a key is a plain word: remove the tag"
                               % (self.at(path, node), node.tag.replace(_CORE, "!!")))
        if not isinstance(node, yaml.ScalarNode):
            raise InvalidInput("%s: a key must be a plain word, not a list or a mapping" % self.where(path))
        if node.tag == _CORE + "timestamp":
            return node.value  # a date written in a name or a value stays the text written
        try:
            return _construct(node)
        except (ValueError, KeyError, TypeError, yaml.YAMLError) as exc:
            raise InvalidInput("%s: %r is not a valid %s (%s)" % (self.at(path, node), node.value[:80],
                                                                  node.tag.replace(_CORE, "!!"), exc))

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


def _read_bounded(file):
    """The bytes of FILE: a regular file of at most MAX_BYTES (a device, FIFO or socket is refused,
    since reading /dev/zero never ends and a FIFO blocks)."""
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InvalidInput("cannot read the experiment file %s: %s" % (file, exc.strerror or exc))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInput("the experiment file %s is not a regular file (a device, FIFO, socket or "
                               "directory); give the path of a YAML file" % file)
        if info.st_size > MAX_BYTES:
            raise InvalidInput("the experiment file %s is %d bytes, more than %d; an experiment file is a few "
                               "kilobytes: is it the right file?" % (file, info.st_size, MAX_BYTES))
        with os.fdopen(os.dup(fd), "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise InvalidInput("cannot read the experiment file %s: %s" % (file, exc.strerror or exc))
    finally:
        os.close(fd)
    if len(raw) > MAX_BYTES:
        raise InvalidInput("the experiment file %s grew past %d bytes while read; an experiment file is a few "
                           "kilobytes: is it the right file?" % (file, MAX_BYTES))
    return raw


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
