"""SIGTERM as vLLM 0.33.0 takes it: `--shutdown-timeout` (seconds, default 0).

Followed from the wheel:
- entrypoints/launchers/launcher.py serve_http: the signal handler sets shutdown_event;
  handle_shutdown calls engine_client.shutdown(timeout=shutdown_timeout), mode "abort" when
  0 else "drain", and only then lets uvicorn exit. The HTTP server keeps answering meanwhile.
- v1/engine/core.py EngineCoreProc._handle_shutdown: "abort" finishes every unfinished request
  at once as FINISHED_ABORTED (the clients get finish_reason "abort"); "drain" lets the
  running and waiting requests go on; both leave once the engine has no work.
  _reject_add_in_shutdown: a request that arrives after SIGTERM is aborted at once.
- v1/utils.py shutdown (the EngineCore process manager): SIGTERM, join up to the timeout, then
  "force killing remaining processes" (kill_process_tree): what is still in flight then dies
  with the engine, its stream cut without a last chunk when the HTTP server exits.
- /health stays 200 throughout (entrypoints/serve/instrumentator/health.py: 503 only on
  EngineDeadError).
Imitation: the batch runs in the API server's process; the EngineCore's lines carry its
process name and pid as the real ones do.
"""
import logging
import os
import sys
import threading
import time

from vllm._sim import logs

POLL_S = 0.02
LAST_CHUNK_GRACE_S = 0.1  # the handler threads of aborted requests write their last chunk


def _core_line(app, where, msg):
    """An INFO line of the EngineCore process (its `(EngineCore pid=N)` prefix)."""
    logs.stderr_line("(EngineCore pid=%d) INFO %s [%s] %s" % (
        app.engine_proc.pid or 0, time.strftime(logs.DATE_FORMAT), where, msg))


def begin(app, on_done):
    """Start the shutdown once (the SIGTERM handler's job); ON_DONE() ends the server."""
    if app.draining.is_set():
        return
    app.draining.set()  # new requests are aborted from now on (http_api.py)
    app.stopping.set()  # EngineCore's exit is expected
    threading.Thread(target=_run, args=(app, on_done), name="shutdown", daemon=True).start()


def _run(app, on_done):
    timeout = app.args.shutdown_timeout
    mode = "abort" if timeout == 0 else "drain"
    logs.info("launcher.py:256", "[shutdown] API server: shutdown triggered")
    logs.info("launcher.py:273", "[shutdown] API server: stopping engine client mode=%s timeout=%ss",
              mode, timeout)
    _core_line(app, "core.py:1713", "[shutdown] EngineCore: start mode=%s timeout=%ds" % (mode, timeout))
    count = sum(app.engine.counts())
    if timeout == 0:
        if count:
            _core_line(app, "core.py:1722", "[shutdown] EngineCore: aborting in-flight requests count=%d" % count)
        app.engine.abort_all()
        time.sleep(LAST_CHUNK_GRACE_S)
    elif count:
        _core_line(app, "core.py:1733", "[shutdown] EngineCore: draining in-flight requests count=%d "
                   "timeout=%ds" % (count, timeout))
    logs.info("utils.py:629", "[shutdown] Process manager: send sigterm to process %s", "EngineCore")
    deadline = time.monotonic() + timeout
    while sum(app.engine.counts()) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    if sum(app.engine.counts()):
        # The engine is killed: what is in flight gets no last chunk; its connection closes
        # when this process exits below.
        logging.getLogger(logs.LOGGER).warning(
            "[shutdown] Process manager: force killing remaining processes count=%d", 1,
            extra={"fileinfo": "utils.py:649"})
    else:
        _core_line(app, "core.py:1744", "[shutdown] EngineCore: request processing complete; "
                   "starting resource teardown")
    logs.info("launcher.py:281", "[shutdown] API server: engine client stopped")
    logs.info("launcher.py:284", "[shutdown] API server: signalling HTTP server shutdown")
    sys.stderr.flush()
    on_done()  # stops uvicorn and the EngineCore process, then exits
    os._exit(0)
