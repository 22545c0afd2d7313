# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_server/group_watch.py: the node's rank tree read from a faked process table, when a node counts as dead, an
orderly stop told from a failure, the SIGTERM-then-SIGKILL stop, and two watchers linked over loopback: a member
whose rank dies stops its own server and rank 0's (real `sleep` processes this test starts), both recording who
died and why."""

from __future__ import annotations

import json
import signal
import subprocess
import threading

import pytest

from ansible_collections.gpufleet.serving.plugins.module_utils._server import group_watch
from tests.support.net import free_port
from tests.support.polling import poll


def proc(ppid, pgid, start, cmdline="python", state="S"):
    return {"state": state, "ppid": ppid, "pgid": pgid, "start": start, "cmdline": cmdline}


TABLE = {
    10: proc(1, 10, 500, "sglang serve"),
    11: proc(10, 10, 510, "sglang::scheduler_TP8"),
    12: proc(10, 10, 511, "sglang::scheduler_TP9", state="Z"),
    13: proc(11, 13, 512, "python -c helper"),       # a descendant in a group of its own
    14: proc(1, 10, 520, "sglang::scheduler_TP10"),  # reparented, still in the server's process group
    15: proc(1, 10, 400, "old"),                     # in a group with the same ID, started before the server
    16: proc(1, 16, 530, "sglang::scheduler_TP11"),  # another process tree
}


def test_the_tree_holds_descendants_and_group_members_pinned_by_start_time():
    assert group_watch.tree(TABLE, 10, 500) == {10: 500, 11: 510, 12: 511, 13: 512, 14: 520}
    # A reused PID (another start time): the server and its group are gone (Linux reuses no live group ID).
    assert group_watch.tree(TABLE, 10, 499) == {}


def test_read_ranks_counts_live_rank_processes_of_the_server():
    read = group_watch.read_ranks(TABLE, 10, 500, ["sglang::scheduler"])
    assert read == {"main": True, "ranks": {11: "sglang::scheduler_TP8", 14: "sglang::scheduler_TP10"}}
    assert not group_watch.read_ranks({**TABLE, 10: proc(1, 10, 500, state="Z")}, 10, 500, ["x"])["main"]


def test_a_node_is_dead_once_complete_and_a_rank_is_gone_or_its_main_process_is():
    book = group_watch.RankBook(2)
    assert book.death({"main": True, "ranks": {11: "a"}}) is None  # still starting
    assert book.death({"main": True, "ranks": {11: "a", 12: "b"}}) is None
    assert book.death({"main": True, "ranks": {11: "a"}}) == "rank process(es) b exited (1 of 2 alive)"
    assert group_watch.RankBook(2).death({"main": False, "ranks": {}}) == "its main process is gone"


@pytest.mark.parametrize("state, orderly", [(None, True), ({"pid": 7}, False), ({"pid": 8}, True),
                                            ({"pid": 7, "stopping": 1.0}, True)])
def test_an_orderly_stop_is_a_state_file_gone_replaced_or_marked_stopping(tmp_path, state, orderly):
    path = tmp_path / "sglang-30000.json"
    if state is not None:
        path.write_text(json.dumps(state))
    assert group_watch.orderly_stop(str(path), 7) is orderly


def test_stop_tree_terminates_every_process_then_kills_the_ones_left_after_the_grace():
    table = dict(TABLE)
    sent = []

    def kill(pid, signum):
        sent.append((pid, signum))
        if signum == signal.SIGTERM and pid != 14:  # 14 ignores SIGTERM, as a SGLang rank >= 1 does
            table.pop(pid, None)

    now = [0.0]
    result = group_watch.stop_tree(10, 500, grace=1.0, read=lambda: table, kill=kill, clock=lambda: now[0],
                                   sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert result == {"terminated": [10, 11, 12, 13, 14], "killed": [14]}
    assert sent[-1] == (14, signal.SIGKILL) and len(sent) == 6


def test_decode_keeps_a_partial_line_for_the_next_read():
    messages, rest = group_watch.decode(group_watch.encode({"hello": "b"}) + b'{"down"')
    assert messages == [{"hello": "b"}] and rest == b'{"down"'


def _sleeper():
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    return child, group_watch.proc_stat(child.pid)[3]


def test_a_rank_dying_on_a_member_stops_both_nodes_and_both_name_it(tmp_path):
    port = free_port()
    servers = {rank: _sleeper() for rank in (0, 1)}
    member_dead = threading.Event()
    configs, results = {}, {}
    for rank, node in ((0, "a"), (1, "b")):
        state = tmp_path / ("%s.json" % node)
        state.write_text(json.dumps({"pid": servers[rank][0].pid}))
        configs[rank] = {"group": "server group [a, b]", "node": node, "rank": rank, "gpus_per_node": 1,
                         "titles": ["x"], "pid": servers[rank][0].pid, "start": servers[rank][1],
                         "state_file": str(state), "log_path": "", "failure_file": str(tmp_path / (node + ".down.json")),
                         "addr": "127.0.0.1", "port": port, "poll": 0.05, "grace": 0.5}
    alive = {"main": True, "ranks": {1: "sglang::scheduler_TP0"}}
    reads = {0: lambda: alive,
             1: lambda: {"main": True, "ranks": {} if member_dead.is_set() else {1: "sglang::scheduler_TP1"}}}
    watchers = {rank: group_watch.Watcher(configs[rank]) for rank in (0, 1)}
    threads = [threading.Thread(target=lambda r=rank: results.__setitem__(r, watchers[r].run(reads[r])))
               for rank in (0, 1)]
    try:
        for thread in threads:
            thread.start()
        poll(lambda: watchers[0].peers and all(p["node"] == "b" for p in watchers[0].peers.values()), 10,
             what="the member's hello at rank 0")
        poll(lambda: watchers[1].book.complete, 10, what="the member seeing its ranks complete")
        member_dead.set()
        for thread in threads:
            thread.join(10)
        for rank in (0, 1):
            assert servers[rank][0].wait(5) == -signal.SIGTERM, rank
            record = json.loads(open(configs[rank]["failure_file"]).read())
            assert (record["node"], record["rank"], record["seen_by"]) == ("b", 1, configs[rank]["node"]), record
            assert record["cause"] == "rank process(es) sglang::scheduler_TP1 exited (0 of 1 alive)"
            assert results[rank]["node"] == "b"
    finally:
        for child, unused in servers.values():
            if child.poll() is None:
                child.kill()
                child.wait()


def test_rank_0_gone_takes_a_member_down_as_its_connection_drops(tmp_path):
    member = group_watch.Watcher({"node": "b", "rank": 1, "addr": "127.0.0.1", "port": 1, "gpus_per_node": 1})
    record = member.from_peer({"node": None, "rank": 0}, None)
    assert (record["node"], record["rank"]) == ("?", 0)
    assert "the connection to rank 0's watcher at 127.0.0.1:1 dropped" in record["cause"]
    leader = group_watch.Watcher({"node": "a", "rank": 0, "addr": "127.0.0.1", "port": 1, "gpus_per_node": 1})
    peer = {"node": None, "rank": -1}
    assert leader.from_peer(peer, {"hello": "b", "rank": 1}) is None
    assert leader.from_peer(peer, None)["node"] == "b"
