"""Process facts read straight from /proc for the simulated fleet.

Standard library only: `simctl` runs under whichever python3 is on PATH, which
need not have psutil. A process is identified by (pid, start time) so that a
recycled PID is never mistaken for one of ours.
"""
import os
import signal
import time


def _stat_fields(pid):
    """Fields of /proc/PID/stat after the command name (which may hold spaces)."""
    with open("/proc/%d/stat" % pid, "rb") as f:
        data = f.read()
    return data[data.rindex(b")") + 2:].split()


def start_time(pid):
    """Start time in clock ticks since boot, or None when the PID is gone."""
    try:
        return int(_stat_fields(pid)[19])
    except (OSError, ValueError, IndexError):
        return None


def ppid(pid):
    try:
        return int(_stat_fields(pid)[1])
    except (OSError, ValueError, IndexError):
        return None


def is_alive(pid, started):
    """True while PID runs and is the same process (not a zombie, not reused)."""
    try:
        fields = _stat_fields(pid)
    except (OSError, ValueError):
        return False
    return fields[0] not in (b"Z", b"X") and int(fields[19]) == started


def pid_ns(pid):
    """The PID namespace link of PID ('pid:[4026532...]'), or None."""
    try:
        return os.readlink("/proc/%d/ns/pid" % pid)
    except OSError:
        return None


def all_pids():
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def children_of(parent):
    return [pid for pid in all_pids() if ppid(pid) == parent]


def pids_in_ns(ns):
    """Host PIDs of every live process in the PID namespace NS (zombies excluded)."""
    found = []
    for pid in all_pids():
        if pid_ns(pid) != ns:
            continue
        try:
            if _stat_fields(pid)[0] not in (b"Z", b"X"):
                found.append(pid)
        except (OSError, ValueError):
            pass
    return found


def kill_if_same(pid, started, sig=signal.SIGKILL):
    """Signal PID only if it is still the process recorded; True when signalled."""
    if not pid or not is_alive(pid, started):
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def wait_until(condition, timeout, interval=0.02):
    """Poll CONDITION until it is true or TIMEOUT seconds pass; return its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)
