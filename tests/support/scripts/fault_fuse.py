"""A GPU holder that cannot die: stuck in uninterruptible sleep, as on a hung driver.

Run INSIDE a private PID + mount namespace (the mount stays in it).

  fault_fuse.py daemon MNT      mount a FUSE file system on MNT that answers FUSE_INIT,
                                 then reads requests and never answers them; prints
                                 "mounted PID", then "request OPCODE" for each request
  fault_fuse.py holder ROOT GPU MIB TITLE MNT
                                 hold MIB MiB on fake GPU GPU under TITLE, print the PID,
                                 then list MNT: the request reaches the daemon and is never
                                 answered. A fatal signal (SIGTERM's default action, SIGKILL)
                                 then leaves the process in D state until the daemon's
                                 /dev/fuse descriptor closes (kill the daemon, or end the
                                 namespace), which aborts the request.

  fault_fuse.py pathholder ROOT GPU MIB TITLE MNT
                                 hold MIB MiB on fake GPU GPU under TITLE, keep an O_PATH
                                 descriptor of MNT (opening it that way sends no request),
                                 print the PID and wait: a stat through /proc/PID/fd/N then
                                 sends GETATTR, which the daemon never answers

No library needed: the few bytes of the FUSE protocol are packed by hand.
"""
import ctypes
import os
import signal
import struct
import sys

# A program: sim/ on sys.path
import _bootstrap  # noqa: F401  pylint: disable=unused-import

MS_NOSUID, MS_NODEV = 2, 4
IN_HEADER = struct.Struct("<IIQQIIIHH")     # len, opcode, unique, nodeid, uid, gid, pid, extlen, pad
OUT_HEADER = struct.Struct("<IiQ")          # len, error, unique
FUSE_INIT = 26


def daemon(mnt):
    fd = os.open("/dev/fuse", os.O_RDWR)
    libc = ctypes.CDLL(None, use_errno=True)
    opts = ("fd=%d,rootmode=40000,user_id=0,group_id=0" % fd).encode()
    if libc.mount(b"gpufleet-stuck", mnt.encode(), b"fuse", MS_NOSUID | MS_NODEV, opts) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "mount fuse on %s: %s" % (mnt, os.strerror(err)))
    print("mounted %d" % os.getpid(), flush=True)
    while True:
        data = os.read(fd, 1 << 21)
        _len, opcode, unique = IN_HEADER.unpack_from(data)[:3]
        if opcode == FUSE_INIT:
            major, minor, readahead = struct.unpack_from("<III", data, IN_HEADER.size)
            body = struct.pack("<IIIIHHIIHHII", 7, min(minor, 31), readahead, 0, 0, 0, 4096, 1, 0, 0, 0, 0)
            body += b"\0" * (64 - len(body))
            os.write(fd, OUT_HEADER.pack(OUT_HEADER.size + len(body), 0, unique) + body)
            continue
        print("request %d" % opcode, flush=True)  # never answered


def holder(root, gpu, mib, title, mnt):
    import setproctitle
    from simlib import fakegpu
    setproctitle.setproctitle(title)
    fakegpu.hold(root, [int(gpu)], int(mib))
    print(os.getpid(), flush=True)
    os.listdir(mnt)   # blocks for good: the daemon never answers
    print("listed", flush=True)


def pathholder(root, gpu, mib, title, mnt):
    import setproctitle
    from simlib import fakegpu
    setproctitle.setproctitle(title)
    fakegpu.hold(root, [int(gpu)], int(mib))
    held = os.open(mnt, os.O_PATH)  # a file on the mount, open as a model file would be
    print(os.getpid(), flush=True)
    while held:
        signal.pause()


if __name__ == "__main__":
    if sys.argv[1] == "daemon":
        daemon(sys.argv[2])
    elif sys.argv[1] == "pathholder":
        pathholder(*sys.argv[2:7])
    else:
        holder(*sys.argv[2:7])
