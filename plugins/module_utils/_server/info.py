# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""server_info: the servers a host's state directory records, whether each runs, and the last failure of its group.

Each server the collection launched has a state file STATE_DIR/ENGINE-PORT.json (_server/plan.py paths; the
supervisor's record of its main process). A node of a server group has beside it its watcher's record
(`.group-watch.json`) and, once the group went down, the failure its watcher wrote (`.group-down.json`, kept as
`.group-down.json.1` once the next launch reported it: group_watch_start.py). Read only.
"""

from __future__ import annotations

import os
import re

from ansible_collections.gpufleet.serving.plugins.module_utils._engines import registry
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import InvalidInput
from ansible_collections.gpufleet.serving.plugins.module_utils._server import group_watch, group_watch_start, supervisor

# ENGINE-PORT.json, and only that: the group watcher's files and the secret config share the prefix.
STATE_NAME = re.compile(r"^(?P<engine>[a-z0-9_]+)-(?P<port>[0-9]+)\.json$")
# What a group-down record holds that server_info hands back (group_watch.py Watcher.record, finish).
FAILURE_KEYS = ("group", "node", "rank", "cause", "log_lines", "seen_by", "at", "gpus")


def last_group_down(state_file: str) -> dict | None:
    """The last failure the group watcher of the server at STATE_FILE recorded on this host, or None."""
    failure = group_watch_start.last_failure(state_file)
    if not failure:
        return None
    return {key: failure.get(key) for key in FAILURE_KEYS}


def _watcher(state_file: str) -> dict | None:
    record = supervisor.read_state(state_file[:-5] + group_watch_start.WATCHER_SUFFIX)
    if not record:
        return None
    stat = group_watch.proc_stat(int(record.get("pid") or 0))
    alive = stat is not None and stat[3] == record.get("start") and stat[0] != "Z"
    return {"pid": record.get("pid"), "running": alive, "server_pid": record.get("server_pid"),
            "addr": record.get("addr"), "port": record.get("port")}


def server_record(state_file: str, engine: str, port: int) -> dict:
    """One server: supervisor.status() of its state file, its engine and port, its group watcher and last failure."""
    out = dict(supervisor.status(state_file), engine=engine, port=port)
    out["group_watcher"] = _watcher(state_file)
    out["last_group_down"] = last_group_down(state_file)
    return out


def server_info(params: dict) -> dict:
    """PARAMS: state_dir, engine (None: every engine), port (None: every port). {"servers": [...], "changed"}."""
    state_dir = params["state_dir"]
    if not os.path.isdir(state_dir):
        if os.path.exists(state_dir):
            raise InvalidInput("state_dir %s is not a directory: give the servers' state_dir (default "
                               "/var/lib/gpufleet-serving)" % state_dir)
        return {"changed": False, "servers": [], "message": "no server recorded (%s does not exist)" % state_dir}
    servers = []
    for name in sorted(os.listdir(state_dir)):
        found = STATE_NAME.match(name)
        if not found or found.group("engine") not in registry.names():
            continue
        engine, port = found.group("engine"), int(found.group("port"))
        if params.get("engine") not in (None, engine) or params.get("port") not in (None, port):
            continue
        servers.append(server_record(os.path.join(state_dir, name), engine, port))
    down = [s for s in servers if s["last_group_down"]]
    message = "%d server(s) recorded in %s, %d running" % (len(servers), state_dir, sum(1 for s in servers if s["running"]))
    for server in down:
        failure = server["last_group_down"]
        message += "; %s-%d: its group last went down: node %s (rank %s): %s" % (
            server["engine"], server["port"], failure["node"], failure["rank"], failure["cause"])
    return {"changed": False, "servers": servers, "message": message}
