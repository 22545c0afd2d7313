"""A PID reused at once, for real (run INSIDE a private PID namespace: it sets ns_last_pid).

  pid_reuse.py

Starts a process, notes its PID and start time, SIGKILLs and reaps it, then starts another
one under the same PID (writing PID-1 to /proc/sys/kernel/ns_last_pid before each fork,
retrying while other processes of the namespace take it first). Prints one JSON line:
{"pid", "old_start_time", "new_start_time"}; the new process lives until this script's
stdin closes, then it is SIGKILLed by PID and reaped.
"""
import json
import os
import signal
import sys
import time


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
    old_start = start_time(old)
    time.sleep(0.05)  # a start time is in clock ticks: the next process must start in a later tick
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
    print(json.dumps({"pid": old, "old_start_time": old_start, "new_start_time": start_time(new)}), flush=True)
    sys.stdin.read()
    os.kill(new, signal.SIGKILL)
    os.waitpid(new, 0)


if __name__ == "__main__":
    main()
