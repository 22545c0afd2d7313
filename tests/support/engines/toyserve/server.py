"""The flow of a toyserve launch: load, start the workers, listen, serve until SIGTERM."""
import logging
import os
import signal
import sys
import threading
import time
from multiprocessing.connection import wait

from _simcore import engine as enginemod
from _simcore import gpus, models, perf, procs, torcherrors

from toyserve import __version__, http_api

LOG = logging.getLogger("toyserve")
_STOPPING = threading.Event()  # set once the server ends its own workers


def setup_log():
    handler = logging.StreamHandler(sys.stderr)  # flushes every record
    handler.setFormatter(logging.Formatter("%(asctime)s toyserve %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


def run_worker(rank, conf, conn):
    """One rank: hold its share of its fake GPU, say ready, idle until released."""
    procs.set_title("toyserve::worker_TP%d" % rank)
    procs.die_with_parent(conf["parent_pid"])
    procs.term_stance(False)
    setup_log()
    keep = None
    try:
        gpu = conf["gpu_ids"][rank]
        time.sleep(conf["load_seconds"])
        mem = gpus.memory_mib(gpu)
        if mem:
            total, free = mem
            need = int(total * conf["fraction"])
            if need > free:
                raise torcherrors.OutOfMemoryError(torcherrors.oom_message(
                    rank, need / 1024.0, total / 1024.0, free / 1024.0, (total - free) / 1024.0))
            keep = gpus.hold(gpu, need)
            LOG.info("worker TP%d holds %d MiB on GPU %d", rank, need, gpu)
        conn.send({"status": "ready"})
    except BaseException as exc:  # noqa: B902 - every failure reaches the server process
        conn.send({"status": "error", "error": "%s: %s" % (type(exc).__name__, exc)})
        os._exit(1)
    procs.idle_until_released(conn, False)
    del keep


class App:
    """What the HTTP layer reads."""

    def __init__(self, args, target, engine):
        self.args = args
        self.target = target
        self.engine = engine
        self.model_name = args.served_model_name or args.model
        self.ready = threading.Event()


def main(args):
    setup_log()
    LOG.info("toyserve %s loading %s (tp=%d)", __version__, args.model, args.tp)
    server = http_api.Server((args.host, args.port), None)
    workers = []
    try:
        server.server_bind()
        target = models.load(args.model)
        conf = {"parent_pid": os.getpid(), "gpu_ids": gpus.physical_ids(args.tp),
                "fraction": args.gpu_memory_fraction, "load_seconds": args.load_seconds}
        for rank in range(args.tp):
            workers.append(procs.spawn(run_worker, (rank, conf), "worker_TP%d" % rank))
        for proc, conn in workers:
            try:
                msg = conn.recv()
            except EOFError:
                proc.join(1)
                msg = {"error": "%s exited with code %s" % (proc.name, proc.exitcode)}
            if msg.get("status") != "ready":
                raise RuntimeError(msg.get("error"))
        LOG.info("workers ready: %d", len(workers))
    except Exception as exc:  # noqa: BLE001 - every start-up failure: its cause, the tree ended, exit 1
        LOG.error("start-up failed: %s: %s", type(exc).__name__, exc)
        _end(workers)
        return 1
    model = perf.calibrate(args.single_stream_tps, args.peak_tps, args.peak_concurrency)
    engine = enginemod.Engine(model, args.max_running, 1.0, 1 << 20)
    engine.start()
    app = App(args, target, engine)
    server.app = app
    server.server_activate()
    LOG.info("listening on http://%s:%d", args.host, args.port)

    def stop(signum, frame):
        LOG.info("stopping")
        threading.Thread(target=_stop, args=(server, workers, 0), daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    threading.Thread(target=_watch, args=(server, workers), daemon=True).start()
    app.ready.set()
    LOG.info("ready to serve")
    server.serve_forever(poll_interval=0.2)
    threading.Event().wait()  # _stop ends the process


def _watch(server, workers):
    """A worker that dies ends the server (exit 1)."""
    wait([proc.sentinel for proc, _c in workers])
    dead = [proc for proc, _c in workers if proc.exitcode is not None]
    if dead and not _STOPPING.is_set():
        LOG.error("%s died (exit code %s)", dead[0].name, dead[0].exitcode)
        _stop(server, workers, 1)


def _stop(server, workers, code):
    _STOPPING.set()
    server.shutdown()
    server.server_close()
    _end(workers)
    sys.stderr.flush()
    os._exit(code)


def _end(workers):
    """Release the workers we started, then kill any left, by their PIDs."""
    for _proc, conn in workers:
        try:
            conn.send("stop")
        except OSError:
            pass
    for proc, _c in workers:
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)
