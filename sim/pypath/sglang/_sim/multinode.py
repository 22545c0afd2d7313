"""A simulated SGLang 0.5.23 node of a server that spans hosts (--nnodes > 1).

What real SGLang does, and this imitates (sglang/srt/...):
- every node's schedulers rendezvous over TCP at --dist-init-addr (distributed/bootstrap.py
  _resolve_dist_init_method -> torch init_process_group with timeout=--dist-timeout); rank 0 hosts
  the store. The simulator rendezvouses in the main process, before the schedulers start
  (_simcore/rendezvous.py), so a node that never joins fails the start-up with torch's error;
- each node runs its share of the TP ranks, tp_size // nnodes, node r the ranks from r * that
  (entrypoints/engine.py _calculate_rank_ranges: node 1 of a TP16 group runs TP8..TP15);
- rank 0 alone runs the tokenizer, the detokenizer and the HTTP server ("Non-zero-rank nodes do
  not run tokenizer processes", engine.py _launch_subprocesses);
- ranks >= 1 wait for their schedulers, start launch_dummy_health_check_server on --host:--port
  (utils/common.py), which answers 200 whatever their schedulers do, and then only join their
  schedulers one after the other, logging "Scheduler or DataParallelController PID terminated with
  CODE" (entrypoints/engine.py block_until_scheduler_exits): a dead scheduler is not noticed while
  an earlier one lives, and nothing tells rank 0. On SIGTERM they only log that they wait for
  rank 0's ShutdownReq (engine.py _launch_subprocesses: "the orchestrator's kill timeout is the
  backstop").
"""
import copy
import signal

from _simcore import rendezvous

from sglang._sim import worker
from sglang._sim.workers import Workers


class Node:
    """This process's place in the group: its rank and the arguments its own schedulers run with."""

    def __init__(self, args, log):
        real = args.server_args
        self.nnodes, self.rank = real.nnodes, real.node_rank
        self.log = log
        self.local_args = copy.copy(args)
        self.local_args.tp_size = args.tp_size // self.nnodes
        self.host, self.port = rendezvous.split_host_port(real.dist_init_addr or "127.0.0.1:0")
        self.timeout = float(real.dist_timeout) if real.dist_timeout else rendezvous.DEFAULT_TIMEOUT_S
        self.listener = None

    def workers(self, local_args, conf, log):
        """This node's children: its TP ranks of the whole group (numbered as the group numbers them)."""
        conf = dict(conf, tp_size=self.local_args.tp_size * self.nnodes,
                    tp_offset=self.rank * self.local_args.tp_size)
        return Workers(local_args, conf, log) if self.rank == 0 else _SchedulersOnly(local_args, conf, log)

    def rendezvous(self):
        self.listener = rendezvous.meet(self.host, self.port, self.rank, self.nnodes, self.timeout)

    def serve_health_until_schedulers_exit(self, workers):
        """Ranks >= 1 after their schedulers are ready: the dummy health server, then join them."""
        args = self.local_args
        rendezvous.dummy_health_server(args.host, args.port, self.log)

        def on_term(signum, frame):
            self.log.warning("SIGTERM received on node_rank %d; waiting for the rank-0 ShutdownReq broadcast to "
                             "stop the schedulers.", self.rank)

        signal.signal(signal.SIGTERM, on_term)
        for name, proc, unused in workers.procs:
            if name.startswith("scheduler_"):
                proc.join()
                self.log.error("Scheduler or DataParallelController %d terminated with %s", proc.pid, proc.exitcode)
        workers.end()
        return 0


class _SchedulersOnly(Workers):
    """A node of rank >= 1: its schedulers, no detokenizer or tokenizer worker."""

    def start(self):
        for local in range(self.args.tp_size):
            rank = self.conf["tp_offset"] + local
            self._spawn("scheduler_%d" % rank, worker.run_scheduler, (rank, self.conf))


def start(args, log):
    """The Node of a server spanning hosts after its rendezvous, or None on one host."""
    if (getattr(args.server_args, "nnodes", 1) or 1) <= 1:
        return None
    node = Node(args, log)
    node.rendezvous()
    return node
