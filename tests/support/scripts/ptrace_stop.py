"""Hold a process in ptrace stop, as a debugger or profiler that paused it does.

usage: ptrace_stop.py PID

Attaches to PID (PTRACE_ATTACH: the kernel stops it with SIGSTOP), waits until it is in
tracing stop (state t), prints "traced" and then never lets it go, until killed.
"""
import ctypes
import os
import signal
import sys

PTRACE_ATTACH = 16
WALL = 0x40000000  # __WALL: wait for the traced process whatever its kind


def main():
    pid = int(sys.argv[1])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(PTRACE_ATTACH, pid, None, None) != 0:
        sys.exit("ptrace attach %d: %s" % (pid, os.strerror(ctypes.get_errno())))
    os.waitpid(pid, WALL)
    print("traced", flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
