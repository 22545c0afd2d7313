# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_server/group_watch.py: the node's rank tree read from a faked process table, when a node counts as dead, an
orderly stop told from a failure, the SIGTERM-then-SIGKILL stop, and two watchers linked over loopback: a member
whose rank dies stops its own server and rank 0's (real `sleep` processes this test starts), both recording who
died and why."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest
from simlib import fakegpu

from ansible_collections.gpufleet.serving.plugins.module_utils._server import group_watch
from tests.support.net import free_port
from tests.support.paths import COLLECTIONS, SIM
from tests.support.polling import poll
from tests.support.timing import FakeClock

# verify_gpus through the real nvidia-ml-py on the fake NVML (found through LD_LIBRARY_PATH, read at process
# start: a fresh interpreter), as the detached watcher runs it.
VERIFY = ("import json, sys\n"
          "from ansible_collections.gpufleet.serving.plugins.module_utils._server.group_watch import verify_gpus\n"
          "print(json.dumps(verify_gpus(json.loads(sys.argv[1]), float(sys.argv[2]))))\n")
HOLD = ("import sys; sys.path.insert(0, %r); from simlib import fakegpu; "
        "fakegpu.hold(sys.argv[1], [int(g) for g in sys.argv[2].split(',')], int(sys.argv[3])); "
        "print('ready', flush=True); sys.stdin.read()" % SIM)


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


@pytest.mark.parametrize("environ, gpus", [
    (b"PATH=/bin\0CUDA_VISIBLE_DEVICES=0,2, 3\0", ["0", "2", "3"]),
    (b"CUDA_VISIBLE_DEVICES=GPU-aa,GPU-bb\0", ["GPU-aa", "GPU-bb"]),
    (b"CUDA_VISIBLE_DEVICES=\0", None),
    (b"PATH=/bin\0", None),
])
def test_the_servers_gpus_are_its_cuda_visible_devices_else_every_gpu(environ, gpus):
    assert group_watch.visible_gpus(environ) == gpus


def _reader(readings):
    """A reader factory for verify_gpus that returns READINGS one after the other (the last one repeats)."""
    def factory(gpus):
        def read():
            return readings.pop(0) if len(readings) > 1 else readings[0]
        return read
    return factory


def _gpu(index, used, pids=()):
    return {"index": index, "uuid": "GPU-%d" % index, "used_mib": used, "processes": list(pids)}


def test_gpus_are_polled_until_no_process_holds_them_and_memory_is_back_to_idle():
    clock = FakeClock()
    readings = [[_gpu(0, 80000.0, [41]), _gpu(1, 80000.0, [42])], [_gpu(0, 0.0), _gpu(1, 300.0)], [_gpu(0, 0.0), _gpu(1, 0.0)]]
    out = group_watch.verify_gpus(None, timeout=5, reader=_reader(readings), poll=0.5, clock=clock, sleep=clock.sleep)
    assert (out["checked"], out["free"], out["seconds"], out["error"]) == (True, True, 1.0, None)
    assert [g["free"] for g in out["gpus"]] == [True, True] and out["at"] > 0


def test_gpus_still_held_at_the_deadline_are_reported_held_per_gpu():
    clock = FakeClock()
    out = group_watch.verify_gpus(["1"], timeout=2, reader=_reader([[_gpu(0, 0.0), _gpu(1, 0.0, [42])]]), poll=0.5,
                                  clock=clock, sleep=clock.sleep)
    assert (out["checked"], out["free"], out["seconds"]) == (True, False, 2.0)
    assert [(g["index"], g["free"], g["processes"]) for g in out["gpus"]] == [(0, True, []), (1, False, [42])]


def test_no_nvml_on_the_host_is_said_and_a_hung_nvml_call_ends_the_check():
    def missing(gpus):
        raise ImportError("No module named 'pynvml'")
    out = group_watch.verify_gpus(None, timeout=1, reader=missing)
    assert (out["checked"], out["free"]) == (False, None) and "pynvml" in out["error"]
    hang = threading.Event()

    def hung(gpus):
        return lambda: hang.wait(30)
    try:
        out = group_watch.verify_gpus(None, timeout=0.3, reader=hung)
    finally:
        hang.set()
    assert (out["checked"], out["free"]) == (False, None) and "did not answer within" in out["error"], out


def test_a_failure_is_recorded_before_the_gpu_check_and_again_with_it(tmp_path):
    server, start = _sleeper()
    failure_file = tmp_path / "a.down.json"
    config = {"group": "g", "node": "a", "rank": 0, "gpus_per_node": 1, "addr": "127.0.0.1", "port": 1,
              "pid": server.pid, "start": start, "failure_file": str(failure_file), "grace": 0.5, "gpus": ["3"],
              "verify": 4, "idle_mib": 0}
    seen = []

    def verify(gpus, timeout, idle_mib):
        seen.append((json.loads(failure_file.read_text())["gpus"], gpus, timeout, idle_mib))
        return {"checked": True, "free": True, "gpus": [{"index": 3, "free": True}]}
    watcher = group_watch.Watcher(config)
    try:
        watcher.finish(watcher.record("b", 1, "rank process(es) x exited (0 of 1 alive)"), verify=verify)
        assert server.wait(5) == -signal.SIGTERM
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert seen == [(None, ["3"], 4.0, 0.0)]
    assert json.loads(failure_file.read_text())["gpus"] == {"checked": True, "free": True, "gpus": [{"index": 3, "free": True}]}


def _verify_on(root, gpus, timeout):
    env = dict(os.environ, PYTHONPATH=COLLECTIONS, **fakegpu.env(root))
    out = subprocess.run([sys.executable, "-c", VERIFY, json.dumps(gpus), str(timeout)], env=env, capture_output=True,
                         text=True, timeout=30, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_fake_nvml_read_through_nvidia_ml_py_sees_a_holder_and_then_its_gpus_free(tmp_path):
    root = str(tmp_path / "gpu")
    fakegpu.init(root, gpus=3)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, root, "1", "2048"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        held = _verify_on(root, None, 0.3)
        assert (held["checked"], held["free"]) == (True, False), held
        assert [(g["index"], g["free"]) for g in held["gpus"]] == [(0, True), (1, False), (2, True)]
        assert held["gpus"][1]["processes"] == [holder.pid] and held["gpus"][1]["used_mib"] >= 2048
        only = _verify_on(root, ["0", "2"], 0.3)
        assert (only["free"], [g["index"] for g in only["gpus"]]) == (True, [0, 2])
    finally:
        holder.kill()
        holder.wait()
    freed = _verify_on(root, ["1"], 5)
    assert (freed["checked"], freed["free"], freed["error"]) == (True, True, None), freed
