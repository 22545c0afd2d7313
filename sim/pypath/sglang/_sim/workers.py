"""The main process's side of its children: spawn, start-up handshake, watch, end.

As in SGLang: multiprocessing "spawn", one scheduler a TP rank and one detokenizer, each
reporting over a pipe. Ending the tree is SIGKILL to each child we started (by its PID),
unless --sim-orphan-workers, which leaves them behind like the known orphan bug.
"""
import threading
from multiprocessing.connection import wait

from _simcore import procs

from sglang._sim import worker


class StartupFailed(RuntimeError):
    pass


class Workers:
    def __init__(self, args, conf, log):
        self.args = args
        self.conf = conf
        self.log = log
        self.procs = []  # (name, Process, our end of its pipe)
        self._ending = threading.Event()

    def start(self):
        if self.args.dp_size > 1:
            self._spawn("data_parallel_controller", worker.run_data_parallel_controller, (self.conf,))
        for rank in range(self.args.tp_size * self.args.dp_size):
            self._spawn("scheduler_%d" % rank, worker.run_scheduler, (rank, self.conf))
        self._spawn("detokenizer", worker.run_detokenizer, (self.conf,))
        if (self.args.tokenizer_worker_num or 1) > 1:
            for index in range(self.args.tokenizer_worker_num):
                self._spawn("tokenizer_worker_%d" % index, worker.run_tokenizer_worker, (self.conf,))

    def _spawn(self, name, target, args):
        proc, ours = procs.spawn(target, args, name)
        self.procs.append((name, proc, ours))

    def wait_ready(self):
        """Run the handshake: all ranks reach the barrier, then all report ready."""
        ranks = {i for i, (name, _p, _c) in enumerate(self.procs) if name.startswith("scheduler_")}
        first = min(ranks)
        conns = {conn: (i, name, proc) for i, (name, proc, conn) in enumerate(self.procs)}
        at_barrier, ready, info = set(), set(), {}
        while len(ready) < len(self.procs):
            for conn in wait(list(c for c in conns if conns[c][0] not in ready)):
                i, name, proc = conns[conn]
                try:
                    msg = conn.recv()
                except EOFError:
                    self._dead(i, name, proc, conns)
                if msg["status"] == "error":
                    raise StartupFailed("Initialization failed. Please see the error messages above.")
                if msg["status"] == "barrier":
                    at_barrier.add(i)
                    if at_barrier == ranks:
                        for c, (j, _n, _p) in conns.items():
                            if j in ranks:
                                c.send("go")
                elif msg["status"] == "ready":
                    ready.add(i)
                    if i == first:
                        info = msg
        return info

    def _dead(self, i, name, proc, conns):
        # A peer may have died of another rank's failure: prefer the rank that reported one.
        for conn in wait(list(conns), timeout=0.5):
            try:
                if conn.poll() and conn.recv().get("status") == "error":
                    raise StartupFailed("Initialization failed. Please see the error messages above.")
            except (EOFError, OSError):
                pass
        proc.join(1)
        if name.startswith("scheduler"):
            self.log.error("Rank %d scheduler is dead. Please check if there are relevant logs.",
                           int(name.split("_")[1]))
        else:
            self.log.error("%s is dead.", name.replace("_", " ").capitalize())
        self.log.error("Exit code: %s", proc.exitcode)
        raise StartupFailed("Initialization failed. Please see the error messages above.")

    def watch(self, on_death):
        """Call on_death() if a child exits while we are not ending the tree ourselves."""
        def run():
            wait([p.sentinel for _n, p, _c in self.procs])
            if self._ending.is_set():
                return
            for name, proc, _c in self.procs:
                if proc.exitcode is not None:
                    self.log.error("Subprocess %s (pid=%d) crashed with exit code %d. Triggering "
                                   "SIGQUIT for cleanup...", name, proc.pid, proc.exitcode)
                    break
            on_death()
        threading.Thread(target=run, name="child-watch", daemon=True).start()

    def end(self):
        """Kill the children we started, by PID, and reap them; orphans are left by design."""
        self._ending.set()
        if self.conf["orphan_workers"]:
            return
        for _name, proc, _conn in self.procs:
            if proc.is_alive():
                proc.kill()
        for _name, proc, _conn in self.procs:
            proc.join(5)
