# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The dead-rank watcher of a server group (issue 36, item 3; docs/multinode.md): one per node.

The engines barely notice a dead rank (SGLang's ranks >= 1 keep answering their dummy /health and
only log on SIGTERM; vLLM's headless nodes outlive their head), so each node runs this watcher beside
its server. It reads its own node's rank processes every POLL seconds (the main process the
supervisor started and the rank processes below it, as group_ranks.read_node counts them) and holds
a TCP connection to rank 0's watcher, which listens on the group's dist port + WATCH_PORT_OFFSET.

- A watcher that sees a local rank die (or the main process) stops its node's server tree (SIGTERM,
  then SIGKILL after GRACE seconds, each process by PID, pinned by its start time), writes the
  failure file and sends {"down": ...} on its connection(s) before closing them.
- Rank 0's watcher, told by a member or seeing a member's connection drop, forwards the failure to
  every other member, stops rank 0 and closes every connection.
- A member that is told by rank 0, or loses its connection to it, stops its own node.
- A stop through the supervisor (teardown.yml, a relaunch: the state file is gone or names another
  process) is orderly: the watcher tells its peers, writes no failure and exits; they stop their nodes.
- After a failure's stop, each watcher verifies its node's GPUs free (the server's GPUs: no process in
  NVML and used memory back to the idle level, polled until VERIFY_S) and rewrites the failure file
  with the result per GPU (`gpus`).

Standard library only (and nvidia-ml-py's pynvml when the host has it) and no collection imports:
group_watch_start.py runs this file's source detached as `python -c SOURCE CONFIG_JSON`, so it
outlives the Ansible task, whose copy of the collection's module_utils (AnsiballZ's payload) is
deleted when the module returns. That is why the NVML read here is its own, minimal one, with
_gpu/nvml.py's rules: v2 memory excludes the driver reserve, v1 has V1_RESERVE_MIB taken off.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import threading
import time
from typing import Any, Callable

# Rank 0's watcher listens on the group's dist port plus this (a port neither engine takes beside it).
WATCH_PORT_OFFSET = 17
POLL_S = 0.5
GRACE_S = 1.0
LOG_LINES = 8
BIND_TRIES = 20
VERIFY_S = 10.0  # how long a watcher waits for its GPUs to be free after the stop
VERIFY_POLL_S = 0.05
IDLE_MIB = 0.0  # used MiB (the driver reserve excluded) of a free GPU: gpu_release's max_used_mib default
V1_RESERVE_MIB = 1024  # _gpu/nvml.py DEFAULT_V1_RESERVE_MIB
MIB = 1024 * 1024


def watch_port(dist_port: int) -> int:
    return int(dist_port) + WATCH_PORT_OFFSET


# ---- this node's processes (/proc) ------------------------------------------------------------------

def proc_stat(pid: int) -> tuple | None:
    """(state, ppid, pgid, start ticks) of PID, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[2]), int(fields[19])


def _cmdline(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def snapshot() -> dict:
    """{pid: {"state", "ppid", "pgid", "start", "cmdline"}} of every process of this host."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        stat = proc_stat(int(name))
        if stat is not None:
            out[int(name)] = {"state": stat[0], "ppid": stat[1], "pgid": stat[2], "start": stat[3],
                              "cmdline": _cmdline(int(name))}
    return out


def tree(procs: dict, root: int, root_start: int) -> dict:
    """{pid: start} of ROOT (when it is still the process started at ROOT_START), its descendants and the
    members of its process group (the supervisor makes the main process a group leader)."""
    out = {}
    if root in procs and procs[root]["start"] != root_start:
        return out  # the PID was reused, so the server and its group are gone (Linux reuses no live group ID)
    if root in procs:
        out[root] = root_start
    children: dict = {}
    for pid, proc in procs.items():
        children.setdefault(proc["ppid"], []).append(pid)
        if proc["pgid"] == root and proc["start"] >= root_start:
            out[pid] = proc["start"]
    todo = list(out)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out[child] = procs[child]["start"]
                todo.append(child)
    return out


def read_ranks(procs: dict, root: int, root_start: int, titles: list) -> dict:
    """{"main": whether the main process lives, "ranks": {pid: title} of its live rank processes}."""
    main = root in procs and procs[root]["start"] == root_start and procs[root]["state"] != "Z"
    ranks = {pid: procs[pid]["cmdline"] for pid in tree(procs, root, root_start)
             if pid != root and procs[pid]["state"] != "Z" and procs[pid]["cmdline"].startswith(tuple(titles))}
    return {"main": main, "ranks": ranks}


class RankBook:
    """What this node's ranks did: complete once every rank was seen alive, dead after that when one is gone."""

    def __init__(self, want: int) -> None:
        self.want = want
        self.seen: dict = {}
        self.complete = False

    def death(self, read: dict) -> str | None:
        """The cause of this node's death in READ (read_ranks()), or None while it lives."""
        if not read["main"]:
            return "its main process is gone"
        if len(read["ranks"]) >= self.want:
            self.complete = True
            self.seen = dict(read["ranks"])
            return None
        if self.complete:
            lost = sorted(title for pid, title in self.seen.items() if pid not in read["ranks"])
            return "rank process(es) %s exited (%d of %d alive)" % (", ".join(lost) or "?", len(read["ranks"]), self.want)
        return None


def orderly_stop(state_file: str, pid: int) -> bool:
    """Whether the supervisor stops, stopped or replaced the server (its state file is marked `stopping`, gone, or
    names another process)."""
    try:
        with open(state_file) as handle:
            state = json.load(handle)
        return int(state.get("pid") or 0) != pid or bool(state.get("stopping"))
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False


def stop_tree(root: int, root_start: int, grace: float = GRACE_S, read: Callable[[], dict] = snapshot,
              kill: Callable[[int, int], Any] = os.kill, clock: Callable[[], float] = time.monotonic,
              sleep: Callable[[float], Any] = time.sleep) -> dict:
    """SIGTERM every process of the server tree, SIGKILL what is left after GRACE; {"terminated", "killed"}."""
    pinned = tree(read(), root, root_start)
    for pid in pinned:
        _signal(kill, pid, signal.SIGTERM)
    deadline = clock() + grace
    left = pinned
    while left and clock() < deadline:
        sleep(0.1)
        left = _still(read(), left)
    for pid in left:
        _signal(kill, pid, signal.SIGKILL)
    return {"terminated": sorted(pinned), "killed": sorted(left)}


def _still(procs: dict, pinned: dict) -> dict:
    return {pid: start for pid, start in pinned.items()
            if pid in procs and procs[pid]["start"] == start and procs[pid]["state"] != "Z"}


def _signal(kill, pid, signum):
    try:
        kill(pid, signum)
    except OSError:
        pass


def last_lines(path: str, count: int = LOG_LINES) -> list:
    try:
        with open(path, errors="replace") as handle:
            return handle.read()[-8192:].splitlines()[-count:]
    except OSError:
        return []


# ---- this node's GPUs (NVML) -------------------------------------------------------------------------

def visible_gpus(environ: bytes) -> list | None:
    """The GPUs CUDA_VISIBLE_DEVICES names in a process's environment (/proc/PID/environ), indices or UUIDs as
    written; None (every GPU) when it is unset or empty."""
    for entry in environ.split(b"\0"):
        if entry.startswith(b"CUDA_VISIBLE_DEVICES="):
            named = [g.strip() for g in entry.split(b"=", 1)[1].decode("utf-8", "replace").split(",") if g.strip()]
            return named or None
    return None


def nvml_reader(gpus: list | None) -> Callable[[], list]:
    """A function that reads GPUS (indices or UUIDs; None: every GPU) through pynvml:
    [{"index", "uuid", "used_mib", "processes"}]. Raises ImportError without nvidia-ml-py."""
    import pynvml  # pylint: disable=import-outside-toplevel  # optional: a host without it reports no check
    pynvml.nvmlInit()
    wanted = None if gpus is None else {str(g) for g in gpus}

    def read():
        out = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            uuid = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
            if wanted is not None and str(index) not in wanted and uuid not in wanted:
                continue
            try:
                mem = pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2)
                used = mem.used / MIB
            except pynvml.NVMLError:
                used = max(0.0, pynvml.nvmlDeviceGetMemoryInfo(handle).used / MIB - V1_RESERVE_MIB)
            pids = []
            for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
                try:
                    pids += [int(p.pid) for p in getattr(pynvml, getter)(handle)]
                except pynvml.NVMLError:
                    pass
            out.append({"index": index, "uuid": uuid, "used_mib": round(used, 1), "processes": sorted(set(pids))})
        return out
    return read


def bounded(call: Callable[[], Any], timeout: float) -> Any:
    """CALL's result, run in a daemon thread: an NVML call can hang on a sick GPU, and the watcher must still
    write what it knows. TimeoutError when it has not returned within TIMEOUT; its exception otherwise."""
    box: dict = {}

    def run():
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the caller as is
            box["error"] = exc
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(max(timeout, 0.0))
    if thread.is_alive():
        raise TimeoutError("NVML did not answer within %.1f s" % timeout)
    if "error" in box:
        raise box["error"]
    return box["value"]


def verify_gpus(gpus: list | None, timeout: float = VERIFY_S, idle_mib: float = IDLE_MIB,
                reader: Callable[[list | None], Callable[[], list]] = nvml_reader, poll: float = VERIFY_POLL_S,
                clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], Any] = time.sleep) -> dict:
    """Poll GPUS (None: every GPU of the host) until each has no process in NVML and at most IDLE_MIB used, or
    TIMEOUT: {"checked", "free", "seconds", "at", "gpus": [{"index", "uuid", "free", "used_mib", "processes"}],
    "error"}. "checked" is false (and "free" null) where NVML cannot be read (no nvidia-ml-py, no driver)."""
    began = clock()
    deadline = began + timeout
    out = {"checked": False, "free": None, "seconds": None, "at": None, "gpus": [], "error": None}
    try:
        read = bounded(lambda: reader(gpus), max(deadline - clock(), poll))
    except ImportError:
        out["error"] = "nvidia-ml-py (pynvml) is not importable by %s" % sys.executable
        return out
    except Exception as exc:  # NVMLError (no driver), TimeoutError: said in the record
        out["error"] = "NVML: %s" % (exc,)
        return out
    while True:
        try:
            found = bounded(read, max(deadline - clock(), poll))
        except Exception as exc:  # a hung or failing NVML ends the check; what was read last stays
            out["error"] = "NVML: %s" % (exc,)
            break
        out["checked"] = True
        out["gpus"] = [dict(gpu, free=not gpu["processes"] and gpu["used_mib"] <= idle_mib) for gpu in found]
        out["free"] = all(gpu["free"] for gpu in out["gpus"])
        if out["free"] or clock() >= deadline:
            break
        sleep(poll)
    out["seconds"] = round(clock() - began, 3)
    out["at"] = time.time()
    return out


# ---- the connections ---------------------------------------------------------------------------------

def encode(message: dict) -> bytes:
    return (json.dumps(message, sort_keys=True) + "\n").encode()


def decode(buffer: bytes) -> tuple:
    """(the complete JSON lines of BUFFER as dicts, the bytes left)."""
    lines = buffer.split(b"\n")
    out = []
    for line in lines[:-1]:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out, lines[-1]


class Watcher:
    """One node's watcher. CONFIG: group, node, rank, gpus_per_node, titles, pid, start (the main process's
    start ticks), state_file, log_path, failure_file, addr, port, poll, grace, gpus (the server's GPUs, None for
    every GPU), verify (seconds to wait for them to be free; 0: no check), idle_mib."""

    def __init__(self, config: dict) -> None:
        self.config = config
        self.book = RankBook(int(config["gpus_per_node"]))
        self.peers: dict = {}  # socket -> {"node", "rank", "buffer"}
        self.listener = None
        self.down = None

    # one decision per event; each returns the failure record, or None to go on

    def local(self, read: dict, orderly: bool) -> dict | None:
        if orderly:
            return self.record(self.config["node"], self.config["rank"], "the server was stopped by the supervisor",
                               orderly=True)
        cause = self.book.death(read)
        if cause is None:
            return None
        return self.record(self.config["node"], self.config["rank"], cause,
                           log_lines=last_lines(self.config.get("log_path") or ""))

    def from_peer(self, peer: dict, message: dict | None) -> dict | None:
        """PEER sent MESSAGE (None: its connection dropped)."""
        if message is None:
            if self.config["rank"] == 0:
                return self.record(peer.get("node") or "?", peer.get("rank", -1),
                                   "its watcher's connection to rank 0 dropped (the host or its watcher is gone)")
            return self.record(peer.get("node") or "?", 0, "the connection to rank 0's watcher at %s:%s dropped"
                               % (self.config["addr"], self.config["port"]))
        if "hello" in message:
            peer.update(node=message["hello"], rank=message.get("rank"))
            return None
        if "down" in message:
            return dict(message["down"], seen_by=self.config["node"], gpus=None)  # this node's GPUs are its own to verify
        return None

    def record(self, node: str, rank: int, cause: str, log_lines: list | None = None, orderly: bool = False) -> dict:
        return {"group": self.config.get("group"), "node": node, "rank": rank, "cause": cause,
                "log_lines": log_lines or [], "orderly": orderly, "seen_by": self.config["node"], "at": time.time(), "gpus": None}

    # I/O

    def open(self) -> None:
        if self.config["rank"] == 0:
            self.listener = socket.socket(socket.AF_INET6 if ":" in self.config["addr"] else socket.AF_INET)
            self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # The watcher of the group's last run may still be closing its port: retry for a few seconds.
            for attempt in range(BIND_TRIES):
                try:
                    self.listener.bind((self.config["addr"], int(self.config["port"])))
                    break
                except OSError:
                    if attempt == BIND_TRIES - 1:
                        raise
                    time.sleep(POLL_S)
            self.listener.listen(64)

    def connect(self) -> None:
        """A member (re)tries rank 0's watcher until it answers; rank 0 may start a moment later."""
        if self.config["rank"] == 0 or self.peers:
            return
        try:
            conn = socket.create_connection((self.config["addr"], int(self.config["port"])), timeout=POLL_S)
        except OSError:
            return
        conn.sendall(encode({"hello": self.config["node"], "rank": self.config["rank"]}))
        self.peers[conn] = {"node": None, "rank": 0, "buffer": b""}

    def poll_peers(self, timeout: float) -> dict | None:
        readable = list(self.peers) + ([self.listener] if self.listener else [])
        ready = select.select(readable, [], [], timeout)[0] if readable else []
        if not readable:
            time.sleep(timeout)
        for sock in ready:
            if sock is self.listener:
                conn = self.listener.accept()[0]
                self.peers[conn] = {"node": None, "rank": -1, "buffer": b""}
                continue
            peer = self.peers[sock]
            try:
                data = sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                del self.peers[sock]
                sock.close()
                return self.from_peer(peer, None)
            messages, peer["buffer"] = decode(peer["buffer"] + data)
            for message in messages:
                found = self.from_peer(peer, message)
                if found:
                    return found
        return None

    def finish(self, failure: dict, verify: Callable[..., dict] = verify_gpus) -> None:
        """Stop this node (unless its own supervisor does), record a failure, tell the peers, close; then verify the
        node's GPUs free and record that too (the peers are told first: their stop must not wait for it)."""
        if not (failure["orderly"] and failure["node"] == self.config["node"]):
            failure["stopped"] = stop_tree(self.config["pid"], self.config["start"], float(self.config.get("grace", GRACE_S)))
        if not failure["orderly"]:
            if failure["node"] == self.config["node"] and not failure["log_lines"]:
                failure["log_lines"] = last_lines(self.config.get("log_path") or "")
            write_failure(self.config["failure_file"], failure)
        for sock in list(self.peers):
            try:
                sock.sendall(encode({"down": failure}))
            except OSError:
                pass
            sock.close()
        if self.listener:
            self.listener.close()
        if not failure["orderly"] and float(self.config.get("verify", VERIFY_S)) > 0:
            failure["gpus"] = verify(self.config.get("gpus"), float(self.config.get("verify", VERIFY_S)),
                                     float(self.config.get("idle_mib", IDLE_MIB)))
            write_failure(self.config["failure_file"], failure)

    def run(self, read: Callable[[], dict] | None = None) -> dict:
        cfg = self.config
        read = read or (lambda: read_ranks(snapshot(), cfg["pid"], cfg["start"], cfg["titles"]))
        self.open()
        while True:
            self.connect()
            failure = self.poll_peers(float(cfg.get("poll", POLL_S)))
            if failure is None:
                failure = self.local(read(), orderly_stop(cfg["state_file"], cfg["pid"]))
            if failure is not None:
                self.finish(failure)
                return failure


def write_failure(path: str, failure: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(failure, handle)
    os.replace(tmp, path)


def main(argv: list) -> int:
    config = json.loads(argv[1])
    failure = Watcher(config).run()
    sys.stdout.write("group watcher of %s (rank %s): %s\n" % (config["node"], config["rank"], json.dumps(failure)))
    return 0


if __name__ == "__main__":
    # The watcher runs as a detached process of its own (python -c SOURCE), never inside a module.
    sys.exit(main(sys.argv))  # pylint: disable=ansible-bad-function
