"""Log lines shaped like SGLang's: `[YYYY-mm-dd HH:MM:SS TP0] message`, one flush a line."""
import logging
import sys

LOGGER = "sglang.srt"


def setup(level="info", prefix=""):
    """Configure the root logger on stderr, as SGLang's configure_logger does."""
    tag = (" " + prefix) if prefix else ""
    fmt = "[%(asctime)s" + tag + "] %(message)s"
    handler = logging.StreamHandler(sys.stderr)  # StreamHandler flushes every record
    handler.setFormatter(logging.Formatter(fmt, datefmt="%Y-%m-%d %H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper()))
    return logging.getLogger(LOGGER)


def get():
    return logging.getLogger(LOGGER)


def uvicorn(message, level="INFO"):
    """uvicorn's own lines (`INFO:     ...`), prefixed with a timestamp as SGLang configures it."""
    get().log(getattr(logging, level), "%s %s", (level + ":").ljust(9), message)
