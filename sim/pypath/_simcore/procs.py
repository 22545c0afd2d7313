"""Process plumbing shared by the workers: titles, parent-death signal, SIGTERM stance."""
import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1


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
