"""Simulated nodes of one server spanning hosts, on loopback.

SGLang: the rendezvous at --dist-init-addr, torch's timeouts when a node is missing, and the dummy
health server of ranks >= 1 that answers 200 whatever their schedulers do (sglang 0.5.23
utils/common.py launch_dummy_health_check_server; sim/pypath/sglang/_sim/multinode.py).
vLLM: the head serves HTTP, a --headless node runs only its workers and outlives the head
(sim/pypath/vllm/_sim/multinode.py)."""
import os
import signal

import psutil
import pytest
from _server_fixtures import Server, VllmServer

from tests.support.net import free_port
from tests.support.polling import poll


@pytest.fixture
def start(tmp_path):
    """Start simulated nodes (each in a directory of its own); all are stopped after."""
    started = []

    def run(args, **kw):
        where = tmp_path / str(len(started))
        where.mkdir()
        started.append(Server(where, list(args), **kw))
        return started[-1]

    yield run
    for server in reversed(started):
        server.stop()


@pytest.fixture
def start_vllm(tmp_path):
    started = []

    def run(*args, **kw):
        where = tmp_path / ("v%d" % len(started))
        where.mkdir()
        started.append(VllmServer(where, None, *args, **kw))
        return started[-1]

    yield run
    for server in reversed(started):
        server.stop()


def node(rank, dist_port, timeout=10):
    return ["--nnodes", "2", "--node-rank", str(rank), "--dist-init-addr", "127.0.0.1:%d" % dist_port,
            "--dist-timeout", str(timeout)]


def schedulers(server):
    return {" ".join(c.cmdline()).strip(): c for c in psutil.Process(server.pid).children()
            if " ".join(c.cmdline()).startswith("sglang::scheduler")}


def test_rank_1_joins_rank_0_and_its_health_stays_200_after_its_scheduler_died(start):
    dist = free_port()
    rank0 = start(node(0, dist), tp=4)
    rank1 = start(node(1, dist), tp=4)
    rank0.wait_ready()
    rank1.wait_log("Dummy health check server started in background thread at 127.0.0.1:%d" % rank1.port)
    # tp 4 over 2 nodes: TP0, TP1 on rank 0 with the detokenizer; TP2, TP3 alone on rank 1
    assert sorted(schedulers(rank0)) == ["sglang::scheduler_TP0", "sglang::scheduler_TP1"]
    assert sorted(t for t in (" ".join(c.cmdline()).strip() for c in psutil.Process(rank1.pid).children())
                  if t.startswith("sglang::")) == ["sglang::scheduler_TP2", "sglang::scheduler_TP3"]
    assert " TP2] Init parallel begin." in rank1.log()
    assert "The server is fired up" not in rank1.log()  # only rank 0 serves HTTP
    assert rank1.request("GET", "/health")[0] == 200 and rank1.request("GET", "/v1/models")[0] == 404

    dead = schedulers(rank1)["sglang::scheduler_TP3"]
    dead.kill()
    poll(lambda: not _alive(dead), 10, what="the scheduler to die")
    # Nothing notices: rank 1 joins TP2 first, its dummy /health answers 200, rank 0 still serves.
    assert rank1.request("GET", "/health")[0] == 200 and rank1.request("GET", "/health_generate")[0] == 200
    assert rank1.proc.poll() is None and rank0.request("GET", "/health")[0] == 200

    os.kill(rank1.pid, signal.SIGTERM)  # only logs: it waits for rank 0's ShutdownReq
    rank1.wait_log("SIGTERM received on node_rank 1; waiting for the rank-0 ShutdownReq broadcast to stop the "
                   "schedulers.")
    assert rank1.proc.poll() is None and rank1.request("GET", "/health")[0] == 200


@pytest.mark.parametrize("rank, message", [
    (1, "torch.distributed.DistNetworkError: The client socket has timed out after 2000ms while trying to connect to "
        "(127.0.0.1, {port})."),
    (0, "torch.distributed.DistStoreError: Timed out after 2 seconds waiting for clients. 1/2 clients joined."),
], ids=["rank-0-missing", "rank-1-missing"])
def test_a_missing_node_fails_the_start_after_the_dist_timeout(start, rank, message):
    dist = free_port()
    alone = start(node(rank, dist, timeout=2), tp=4)
    assert alone.wait_exit(30) == 1
    log = alone.log()
    assert message.format(port=dist) in log, log[-2000:]
    assert "Init parallel begin." not in log and not alone.group()


def vllm_node(rank, master_port, timeout=10):
    return ["--nnodes", "2", "--node-rank", str(rank), "--master-addr", "127.0.0.1", "--master-port",
            str(master_port), "--distributed-timeout-seconds", str(timeout)] + (["--headless"] if rank else [])


def _alive(process):
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _workers(proc):
    return sorted(" ".join(c.cmdline()).strip() for c in psutil.Process(proc.pid).children(recursive=True)
                  if " ".join(c.cmdline()).startswith("VLLM::Worker"))


def test_vllm_head_serves_and_a_headless_node_outlives_it(start_vllm):
    master = free_port()
    head = start_vllm(*vllm_node(0, master), tp=4)
    other = start_vllm(*vllm_node(1, master), tp=4)
    head.wait_ready()
    other_log = ("Launching vLLM (v0.33.0) headless multiproc executor, with head node address 127.0.0.1:%d for "
                 "torch.distributed process group." % master)
    poll(lambda: other_log in other.log() and len(_workers(other.proc)) == 2, 30, what="the headless node's workers")
    assert "(MainProcess pid=%d)" % other.proc.pid in other.log() and "Application startup complete" not in other.log()
    assert _workers(head.proc) == ["VLLM::Worker_TP0", "VLLM::Worker_TP1"]  # tp 4 over 2 nodes
    assert head.request("GET", "/health")[0] == 200

    head.stop()  # the head dies: nothing tells the headless node (vllm #32136)
    assert other.proc.poll() is None and len(_workers(other.proc)) == 2
    workers = [c for c in psutil.Process(other.proc.pid).children(recursive=True)
               if " ".join(c.cmdline()).startswith("VLLM::Worker")]
    other.proc.send_signal(signal.SIGTERM)  # its own SIGTERM stops it and its workers
    poll(lambda: other.proc.poll() is not None, 20, what="the headless node to exit")
    assert other.proc.returncode == 0
    poll(lambda: not any(_alive(w) for w in workers), 5, what="its workers to be gone")


def test_vllm_a_missing_head_fails_the_headless_node_after_its_timeout(start_vllm):
    master = free_port()
    other = start_vllm(*vllm_node(1, master, timeout=2), tp=4)
    poll(lambda: other.proc.poll() is not None, 30, what="the headless node to give up")
    assert other.proc.returncode == 1
    assert ("torch.distributed.DistNetworkError: The client socket has timed out after 2000ms while trying to "
            "connect to (127.0.0.1, %d)." % master) in other.log()
