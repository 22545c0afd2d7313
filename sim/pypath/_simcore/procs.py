"""Process plumbing of every engine's tree: spawning children, titles, parent-death signal,
SIGTERM stance."""
import ctypes
import multiprocessing as mp
import os
import signal

PR_SET_PDEATHSIG = 1


def spawn(target, args, name):
    """Start target(*args, conn) in a child made by multiprocessing "spawn" (as SGLang starts
    its schedulers and vLLM its EngineCore and workers); (Process, our end of its pipe)."""
    ctx = mp.get_context("spawn")
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=target, args=tuple(args) + (theirs,), name=name)
    proc.start()
    theirs.close()  # the child's end: EOF here once the child is gone
    return proc, ours


def set_title(title):
    import setproctitle
    setproctitle.setproctitle(title)


def die_with_parent(parent_pid):
    """PR_SET_PDEATHSIG(SIGKILL), as SGLang's schedulers set it; exit if the parent is already gone."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:
        os._exit(1)


def term_stance(hang_on_term):
    """Default SIGTERM kills; --sim-hang-on-term ignores it (the lingering-process case)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN if hang_on_term else signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the main process only


def idle_until_released(conn, orphan):
    """Block until the main process says stop or goes away; an orphan keeps its GPU forever."""
    try:
        while conn.recv() != "stop":
            pass
        return
    except (EOFError, OSError):
        pass
    while orphan:
        signal.pause()
