"""`simctl gpu ...`: make fake GPU hosts, hold their memory, read their state.

  build OUTDIR                       compile the fake NVML into OUTDIR/libnvidia-ml.so.1
  init ROOT --gpus N [--name NAME] [--memory-mib M] [--reserved-mib R]
                [--driver-version V] [--release-delay-ms D]
  env ROOT                           export lines for LD_LIBRARY_PATH, FAKE_NVML_ROOT,
                                     GPUFLEET_NVIDIA_DEVICES
  hold ROOT --gpu 0[,1..] --mib M [--title T] [--ignore-term|--catch-term] [--exit-delay S] [--detach]
  status ROOT                        JSON per GPU
  fault ROOT hang [N]|lost N|no_v2 [--clear]
  health ROOT GPU [FAULT|KEY=VALUE ...] [--clear]
                                     what GPU reports to gpu_health (fakegpu.HEALTH_FAULTS,
                                     HEALTH_KEYS); no argument: print it
  xid ROOT GPU XID [TEXT]            log an Xid for GPU in ROOT/kernel.log
  load ROOT GPU[,GPU..] LOAD         the GPUs run at LOAD (0 idle .. 1 full batch) from now,
                                     as a simulated server tells them; prints their power files
"""
import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

from simlib import fakegpu

SIMCTL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "simctl")


def _parser():
    p = argparse.ArgumentParser(prog="simctl gpu", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("build")
    s.add_argument("outdir")

    s = sub.add_parser("init")
    s.add_argument("root")
    s.add_argument("--gpus", type=int, default=8)
    s.add_argument("--name", default=fakegpu.DEFAULT_NAME)
    s.add_argument("--memory-mib", type=int, default=fakegpu.DEFAULT_MEMORY_MIB)
    s.add_argument("--reserved-mib", type=int, default=fakegpu.DEFAULT_RESERVED_MIB)
    s.add_argument("--driver-version", default=fakegpu.DEFAULT_DRIVER)
    s.add_argument("--release-delay-ms", type=int, default=fakegpu.DEFAULT_RELEASE_DELAY_MS)

    s = sub.add_parser("env")
    s.add_argument("root")

    s = sub.add_parser("hold")
    s.add_argument("root")
    s.add_argument("--gpu", required=True, help="comma-separated indices")
    s.add_argument("--mib", type=int, required=True)
    s.add_argument("--title", help="the command line the process shows (setproctitle)")
    s.add_argument("--ignore-term", action="store_true", help="SIG_IGN for SIGTERM (shows in SigIgn)")
    s.add_argument("--catch-term", action="store_true",
                   help="a SIGTERM handler that does nothing: the process lives on (shows in SigCgt)")
    s.add_argument("--exit-delay", type=float, default=0.0,
                   help="seconds between SIGTERM and exit")
    s.add_argument("--detach", action="store_true")
    s.add_argument("--daemon-exe", action="store_true",
                   help="run as a root-owned copy of the interpreter named after the title's "
                        "program (ROOT/sbin/NAME): a GPU daemon by its executable")
    s.add_argument("--device-file", help="open and map this path for the (one) GPU instead of "
                                         "ROOT/dev/nvidiaN (a renamed container node, a bind mount)")
    s.add_argument("--open-only", action="store_true",
                   help="open the GPUs' device files but map none (NVML still lists the memory)")
    s.add_argument("--user", help="drop to this user once the memory is held")
    s.add_argument("--comm", help="set /proc/PID/comm (prctl PR_SET_NAME) after the title")
    s.add_argument("--leader-exits", action="store_true",
                   help="hold from a second thread; the main thread exits (the leader turns zombie)")
    s.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)  # detached child's report pipe

    s = sub.add_parser("status")
    s.add_argument("root")

    s = sub.add_parser("fault")
    s.add_argument("root")
    s.add_argument("kind", choices=fakegpu.FAULTS)
    s.add_argument("gpu", nargs="?", type=int, help="GPU index, for 'lost' (and 'hang' of one GPU)")
    s.add_argument("--clear", action="store_true")

    s = sub.add_parser("health")
    s.add_argument("root")
    s.add_argument("gpu", type=int)
    s.add_argument("changes", nargs="*", help="a fault of fakegpu.HEALTH_FAULTS, or KEY=VALUE")
    s.add_argument("--clear", action="store_true", help="healthy again")

    s = sub.add_parser("xid")
    s.add_argument("root")
    s.add_argument("gpu", type=int)
    s.add_argument("xid", type=int)
    s.add_argument("text", nargs="?", default="simulated fault")

    s = sub.add_parser("load")
    s.add_argument("root")
    s.add_argument("gpu", help="comma-separated indices")
    s.add_argument("load", type=float)
    return p


def _health(args):
    if args.clear:
        fakegpu.set_health(args.root, args.gpu, clear=True)
    for change in args.changes:
        key, sep, value = change.partition("=")
        try:
            if sep:
                fakegpu.set_health(args.root, args.gpu, **{key: value})
            else:
                fakegpu.inject_health(args.root, args.gpu, change)
        except ValueError as exc:
            sys.stderr.write("simctl gpu health: %s\n" % exc)
            return 2
    print(json.dumps(fakegpu.read_health(args.root, args.gpu), indent=2, sort_keys=True))
    return 0


def _gpus(text):
    return [int(x) for x in text.split(",") if x.strip()]


def _detach(args):
    """Start the holder in its own session and return its PID once it holds memory."""
    rfd, wfd = os.pipe()
    python, env = sys.executable, None
    if args.daemon_exe:
        python, env = daemon_exe(args.root, args.title or "daemon")
    cmd = [python, SIMCTL, "gpu", "hold", args.root, "--gpu", args.gpu,
           "--mib", str(args.mib), "--exit-delay", str(args.exit_delay), "--ready-fd", str(wfd)]
    for flag in ("open_only", "leader_exits"):
        if getattr(args, flag):
            cmd.append("--" + flag.replace("_", "-"))
    for opt in ("device_file", "user", "comm"):
        if getattr(args, opt):
            cmd += ["--" + opt.replace("_", "-"), getattr(args, opt)]
    if args.title:
        cmd += ["--title", args.title]
    if args.ignore_term:
        cmd.append("--ignore-term")
    if args.catch_term:
        cmd.append("--catch-term")
    # stdio to /dev/null: a holder must not keep a caller's capture pipes open.
    proc = subprocess.Popen(cmd, pass_fds=(wfd,), start_new_session=True, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    os.close(wfd)
    with os.fdopen(rfd) as r:
        report = r.read()
    if report.startswith("ok"):
        print(proc.pid, flush=True)
        return 0
    proc.wait()
    msg = report.strip()[len("error "):] if report.startswith("error ") else report.strip()
    sys.stderr.write("simctl gpu hold: %s\n" % (msg or "holder exited (rc %s)" % proc.returncode))
    return 1


def daemon_exe(root, title):
    """A root-owned, root-only-writable copy of this interpreter named like the daemon."""
    name = os.path.basename(title.split(" ")[0])
    sbin = os.path.join(os.path.abspath(root), "sbin")
    os.makedirs(sbin, exist_ok=True)
    path = os.path.join(sbin, name)
    if not os.path.exists(path):
        tmp = path + ".tmp%d" % os.getpid()
        shutil.copyfile(os.path.realpath(sys.executable), tmp)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
    import setproctitle  # the copy finds the stdlib, not this venv's packages
    env = dict(os.environ)
    site = os.path.dirname(os.path.dirname(setproctitle.__file__))
    env["PYTHONPATH"] = site + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return path, env


def _hold_in_thread(args, report):
    """The memory is held by a second thread; the leader thread exits (SYS_exit, not exit_group)."""
    import ctypes
    import threading

    def worker():
        fakegpu.hold(args.root, _gpus(args.gpu), args.mib,
                     device_files=_device_files(args), map_gpus=not args.open_only)
        if report:
            report.write("ok %d\n" % os.getpid())
            report.close()
        while True:
            time.sleep(3600)

    threading.Thread(target=worker, daemon=False).start()  # start() returns once it runs
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall(60 if os.uname().machine == "x86_64" else 93, 0)  # SYS_exit of this thread only


def _device_files(args):
    return {_gpus(args.gpu)[0]: args.device_file} if args.device_file else None


def _hold(args):
    report = os.fdopen(args.ready_fd, "w") if args.ready_fd is not None else None

    def fail(msg):
        if report:
            report.write("error %s\n" % msg)
            report.close()
        sys.stderr.write("simctl gpu hold: %s\n" % msg)
        return 1

    if args.title:
        try:
            import setproctitle
        except ImportError:
            return fail("--title needs setproctitle: run simctl with .venv/bin/python")
        setproctitle.setproctitle(args.title)
    if args.comm:
        import ctypes
        ctypes.CDLL(None).prctl(15, args.comm.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    elif args.catch_term:
        signal.signal(signal.SIGTERM, lambda signum, frame: None)
    elif args.exit_delay > 0:
        def slow_exit(signum, frame):
            # A slow shutdown (a draining server): the memory stays until the exit.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(args.exit_delay)
            os._exit(0)
        signal.signal(signal.SIGTERM, slow_exit)
    if args.leader_exits:
        _hold_in_thread(args, report)
    try:
        fakegpu.hold(args.root, _gpus(args.gpu), args.mib,
                     device_files=_device_files(args), map_gpus=not args.open_only)
    except (fakegpu.OutOfMemory, ValueError, OSError) as exc:
        return fail(exc)
    if args.user:
        import pwd
        account = pwd.getpwnam(args.user)
        os.setgroups([])
        os.setgid(account.pw_gid)
        os.setuid(account.pw_uid)
    if report:
        report.write("ok %d\n" % os.getpid())
        report.close()
    else:
        print(os.getpid(), flush=True)
    while True:
        signal.pause()


def main(argv):
    args = _parser().parse_args(argv)
    if args.cmd == "build":
        print(fakegpu.build(args.outdir))
    elif args.cmd == "init":
        fakegpu.init(args.root, gpus=args.gpus, name=args.name, memory_mib=args.memory_mib,
                     reserved_mib=args.reserved_mib, driver_version=args.driver_version,
                     release_delay_ms=args.release_delay_ms)
    elif args.cmd == "env":
        for key, value in fakegpu.env(args.root).items():
            print("export %s=%s" % (key, shlex.quote(value)))
    elif args.cmd == "hold":
        return _detach(args) if args.detach else _hold(args)
    elif args.cmd == "status":
        print(json.dumps(fakegpu.read_status(args.root), indent=2))
    elif args.cmd == "fault":
        if args.kind == "lost" and args.gpu is None:
            sys.stderr.write("simctl gpu fault: 'lost' needs a GPU index\n")
            return 2
        print(fakegpu.set_fault(args.root, args.kind, args.gpu, clear=args.clear))
    elif args.cmd == "health":
        return _health(args)
    elif args.cmd == "load":
        print(json.dumps(fakegpu.set_load(args.root, _gpus(args.gpu), args.load), indent=2))
        return 0
    elif args.cmd == "xid":
        sys.stdout.write(fakegpu.add_xid(args.root, args.gpu, args.xid, args.text))
    return 0
