"""A simulated vLLM 0.33.0 node of a server that spans hosts (--nnodes > 1, mp backend).

What real vLLM does, and this imitates (vllm/...):
- the head (--node-rank 0) serves HTTP and runs EngineCore; its share of the workers joins the
  torch process group at --master-addr:--master-port (engine/arg_utils.py; ParallelConfig.master_port
  29501) with the other nodes' workers; the API server waits VLLM_ENGINE_READY_TIMEOUT_S (600 s) for the
  engine core (v1/engine/core_client.py "Timed out waiting for engine core processes to start.");
- every other node runs `--headless` (entrypoints/cli/serve.py run_headless): no API server, no port
  bound; it logs "Launching vLLM (v%s) headless multiproc executor, with head node address %s for
  torch.distributed process group." and runs only its workers (MultiprocExecutor with
  monitor_workers=False), its main process keeping the default log prefix (MainProcess, vllm/logger.py);
- each node runs tensor_parallel_size // nnodes workers (the simulator numbers them from 0 on every node;
  real vLLM titles them by their rank in the TP group, Worker_TP8.. on the second node of TP16);
- a headless node does not stop when the head dies (vllm #32136): nothing connects them after the
  rendezvous. On SIGTERM it raises SystemExit and its executor stops its workers.
The rendezvous (_simcore/rendezvous.py) waits --distributed-timeout-seconds, else torch's default.
"""
import os
import signal
import sys
import threading

from _simcore import procs, rendezvous

from vllm import __version__
from vllm._sim import engine_core, logs


class Node:
    def __init__(self, args):
        self.nnodes, self.rank = int(args.nnodes), int(args.node_rank or 0)
        self.host = args.master_addr or "127.0.0.1"
        self.port = int(args.master_port or 29501)
        timeout = args.distributed_timeout_seconds
        self.timeout = float(timeout) if timeout else rendezvous.DEFAULT_TIMEOUT_S
        self.local_tp = max(int(args.tp) // self.nnodes, 1)
        self.headless = bool(args.headless)
        self.listener = None

    def rendezvous(self):
        self.listener = rendezvous.meet(self.host, self.port, self.rank, self.nnodes, self.timeout)

    def run_headless(self, conf):
        """A node without API server: rendezvous, start its workers, then idle until SIGTERM."""
        logs.setup("MainProcess")
        logs.info("serve.py:224", "Launching vLLM (v%s) headless multiproc executor, with head node address %s "
                  "for torch.distributed process group.", __version__, rendezvous.host_port(self.host, self.port))
        self.rendezvous()
        conf = dict(conf, tp=self.local_tp, engine_pid=os.getpid())
        workers = [procs.spawn(engine_core.run_worker, (rank, conf), "VllmWorker-%d" % rank)
                   for rank in range(self.local_tp)]
        try:
            for unused, conn in workers:
                engine_core._expect(conn, "loaded")  # pylint: disable=protected-access
            for unused, conn in workers:
                conn.send("capture")
            for unused, conn in workers:
                engine_core._expect(conn, "ready")  # pylint: disable=protected-access
        except RuntimeError:
            for proc, unused in workers:
                proc.kill()
            raise
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
        stop.wait()
        engine_core.stop_workers(workers)
        sys.stderr.flush()
        return 0


def node(args):
    """The Node of a server spanning hosts, or None on one host."""
    return Node(args) if int(args.nnodes or 1) > 1 else None
