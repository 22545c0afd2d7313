"""A PID reused at once, for real (run INSIDE a private PID namespace: it sets ns_last_pid).

  pid_reuse.py

Starts a process and prints {"pid", "start_time"} as a JSON line. When a line arrives on
stdin it SIGKILLs and reaps that process and at once starts another one under the same PID
(writing PID-1 to /proc/sys/kernel/ns_last_pid before each fork, retrying while other
processes of the namespace take it first), then prints {"pid", "start_time"} of the new one.
The new process lives until this script's stdin closes, then it is SIGKILLed by PID and reaped.
"""
import json
import os
import signal
import sys
import time

STARTED = time.monotonic()


def start_time(pid):
    with open("/proc/%d/stat" % pid) as handle:
        text = handle.read()
    return int(text[text.rindex(")") + 2:].split()[19])


def sleeper():
    pid = os.fork()
    if pid == 0:
        signal.pause()
        os._exit(0)
    return pid


def main():
    old = sleeper()
    print(json.dumps({"pid": old, "start_time": start_time(old)}), flush=True)
    sys.stdin.readline()
    time.sleep(max(0.0, 0.05 - (time.monotonic() - STARTED)))  # start times are in clock ticks: a later one
    os.kill(old, signal.SIGKILL)
    os.waitpid(old, 0)
    for unused in range(1000):
        with open("/proc/sys/kernel/ns_last_pid", "w") as handle:
            handle.write(str(old - 1))
        new = sleeper()
        if new == old:
            break
        os.kill(new, signal.SIGKILL)
        os.waitpid(new, 0)
    else:
        raise SystemExit("PID %d was never handed out again" % old)
    print(json.dumps({"pid": new, "start_time": start_time(new)}), flush=True)
    sys.stdin.read()
    os.kill(new, signal.SIGKILL)
    os.waitpid(new, 0)


if __name__ == "__main__":
    main()
