"""SIGTERM as SGLang 0.5.23 takes it: a drain with no deadline, then the tree ends.

Followed from srt/managers/tokenizer_manager.py:
- SignalHandler.sigterm_handler logs "SIGTERM received. ..." and only sets `gracefully_exit`.
- TokenizerManager.sigterm_watchdog, a task started with the server, looks at that flag every
  5 s; once set, it logs "Gracefully exiting... Remaining number of requests N ..." and checks
  again every 5 s while `rid_to_state` holds any request. No deadline: it waits as long as
  requests remain. SGL_FORCE_SHUTDOWN (utils get_bool_env_var) skips the wait.
- New requests are still accepted while it drains (generate_request does not look at
  `gracefully_exit`); /health and /health_generate answer 503 and /ready 503
  (srt/entrypoints/http_server.py health_generate, ready; TokenizerManager.is_ready).
- Once idle: a ShutdownReq to the schedulers, up to _SCHEDULER_EXIT_TIMEOUT_SECS (15) for them
  to exit, then kill_process_tree of its own children, and the process ends.
The 5 s period is --sim-drain-poll-seconds (the profile's `drain_poll`: 5.0 in "realistic",
shorter in "fast", as the start-up phases are).
"""
import os
import signal
import sys
import threading
import time

FORCE_ENV = "SGL_FORCE_SHUTDOWN"
LAST_CHUNK_GRACE_S = 0.1  # the handler threads of just-finished requests write their last chunk


def _force_shutdown():
    # sglang/srt/utils get_bool_env_var: "true" or "1", case-insensitive
    return os.environ.get(FORCE_ENV, "false").lower() in ("true", "1")


def install(app, workers, log):
    """The SIGTERM handler and the watchdog thread (tokenizer_manager.py: both set up with the
    event loop, so from the moment the HTTP server runs)."""
    if app.args.sim_hang_on_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return

    def sigterm_handler(signum, frame):
        log.warning("SIGTERM received. signum=%s frame=%s. Draining requests and shutting down...",
                    None, None)
        app.draining.set()

    signal.signal(signal.SIGTERM, sigterm_handler)
    threading.Thread(target=_watchdog, args=(app, workers, log), name="sigterm-watchdog",
                     daemon=True).start()


def _watchdog(app, workers, log):
    period = app.args.sim_drain_poll_seconds
    while not app.draining.is_set():
        time.sleep(period)
    while True:
        rids = app.engine.pending_rids()
        if _force_shutdown():
            log.error("Signal SIGTERM received while force shutdown flag set. Force exiting.")
            break
        log.info("Gracefully exiting... Remaining number of requests %d. Remaining requests "
                 "remaining_rids=%r.", len(rids), rids)
        if not rids:
            break
        time.sleep(period)
    time.sleep(LAST_CHUNK_GRACE_S)
    workers.end()  # the schedulers hold no request now: they end at once
    sys.stderr.flush()
    os._exit(0)
