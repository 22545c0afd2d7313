"""Log lines shaped like vLLM 0.33.0's (vllm/logger.py _FORMAT, _DATE_FORMAT):

    (EngineCore pid=123) INFO 12-03 09:20:00 [core.py:140] Initializing a V1 LLM engine ...

The `(NAME pid=N)` prefix is decorate_logs' process name (vllm/utils/system_utils.py:
APIServer, EngineCore, Worker_TP0). `[file.py:line]` names the real emitter in the wheel.
"""
import logging
import os
import sys

LOGGER = "vllm"
FORMAT = "(%(vllm_process_name)s pid=%(process)d) %(levelname)s %(asctime)s [%(fileinfo)s] %(message)s"
DATE_FORMAT = "%m-%d %H:%M:%S"


class _Process(logging.Filter):
    def __init__(self, name):
        super().__init__()
        self.name_ = name

    def filter(self, record):
        record.vllm_process_name = self.name_
        if not hasattr(record, "fileinfo"):
            record.fileinfo = "%s:%d" % (record.filename, record.lineno)
        return True


def setup(process_name):
    handler = logging.StreamHandler(sys.stderr)  # flushes every record
    handler.setFormatter(logging.Formatter(FORMAT, datefmt=DATE_FORMAT))
    handler.addFilter(_Process(process_name))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    return logging.getLogger(LOGGER)


def info(where, msg, *args):
    """One INFO line; WHERE: the real emitter, "file.py:line" (under vllm/)."""
    logging.getLogger(LOGGER).info(msg, *args, extra={"fileinfo": where})


def error(where, msg, *args):
    logging.getLogger(LOGGER).error(msg, *args, extra={"fileinfo": where})


def uvicorn(message, level="INFO"):
    """uvicorn's own lines with vLLM's process prefix: `(APIServer pid=N) INFO:     Application startup complete.`"""
    sys.stderr.write("(APIServer pid=%d) %s %s\n" % (os.getpid(), (level + ":").ljust(9), message))
    sys.stderr.flush()


def stderr_line(text):
    """A raw line (tqdm's progress bar) on stderr."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
