"""Which GPU each rank uses, what NVML says about it, and holding its memory.

Fake GPUs: FAKE_NVML_ROOT names the fake kit's root; the real pynvml (loaded with the
fake libnvidia-ml through LD_LIBRARY_PATH) reads memory, simlib.fakegpu holds it.
Real GPUs (SGLang's --sim-real-gpu): torch allocates on cuda:rank; imported only there.
LoadReporter: the engine's batch load, told to the fake GPUs (they draw power by it).
"""
import os
import sys
import time

MIB = 1024 * 1024


def physical_ids(tp_size):
    """Rank n uses the n-th entry of CUDA_VISIBLE_DEVICES, else GPU n."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if visible:
        ids = [int(x) for x in visible.split(",") if x.strip() != ""]
    else:
        ids = list(range(tp_size))
    if len(ids) < tp_size:
        raise RuntimeError("CUDA error: invalid device ordinal (tp_size=%d, visible GPUs=%s)"
                           % (tp_size, ids))
    return ids[:tp_size]


def fake_root():
    return os.environ.get("FAKE_NVML_ROOT") or None


def _simlib():
    """Import sim/simlib (fakegpu): sim/ is two levels above this package (sim/pypath/_simcore)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sim_dir = os.path.abspath(os.path.join(here, "..", ".."))
    if sim_dir not in sys.path:
        sys.path.insert(0, sim_dir)
    from simlib import fakegpu
    return fakegpu


def memory_mib(gpu):
    """(total, free) MiB of a physical GPU through NVML, or None without GPUs."""
    if not fake_root():
        return None
    import pynvml
    pynvml.nvmlInit()
    try:
        info = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(gpu))
        return info.total // MIB, info.free // MIB
    finally:
        pynvml.nvmlShutdown()


def hold(gpu, mib):
    """Hold MIB on a fake GPU for the life of this process; fakegpu.OutOfMemory if it won't fit."""
    if not fake_root():
        return None
    return _simlib().hold(fake_root(), [gpu], int(mib))


def out_of_memory_types():
    if not fake_root():
        return ()
    return (_simlib().OutOfMemory,)


def hold_real(rank, fraction):
    """--sim-real-gpu: allocate fraction x total on cuda:rank with torch; kept until exit."""
    import torch  # only on a real GPU host
    free, total = torch.cuda.mem_get_info(rank)
    return torch.empty(int(total * fraction), dtype=torch.uint8, device="cuda:%d" % rank)


def _parent(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _in_tree(pid, root_pid):
    for unused in range(64):  # a parent chain is short; a loop guard all the same
        if pid == root_pid:
            return True
        if pid <= 1:
            return False
        pid = _parent(pid)
    return False


class LoadReporter:
    """Tells the fake GPUs this server runs on how loaded it is, so they draw power for it.

    The GPUs are those its own process tree holds memory on (its workers'), as NVML's
    process list shows them; CUDA_VISIBLE_DEVICES until they hold any. Reports go out
    when the load changes, at most every MIN_GAP_S (going idle at once), so the engine's
    step loop pays for a file write a few times a second, not every step.
    """

    MIN_GAP_S = 0.25
    LOOKUP_GAP_S = 2.0

    def __init__(self):
        self.root = fake_root()
        self.gpus = []
        self.last = None
        self.sent_at = 0.0
        self.looked_at = -1e9

    def _lookup(self, now):
        if self.gpus or now - self.looked_at < self.LOOKUP_GAP_S:
            return self.gpus
        self.looked_at = now
        me = os.getpid()
        try:
            status = _simlib().read_status(self.root)
        except OSError:
            return self.gpus
        self.gpus = [g["index"] for g in status if any(_in_tree(h["pid"], me) for h in g["holders"])]
        return self.gpus or [int(x) for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x.strip().isdigit()]

    def report(self, load):
        """LOAD: 0 idle .. 1 a full batch."""
        if not self.root:
            return
        now = time.monotonic()
        load = round(min(max(float(load), 0.0), 1.0), 3)
        if load == self.last or (load > 0 and now - self.sent_at < self.MIN_GAP_S):
            return
        gpus = self._lookup(now)
        if not gpus:
            return
        try:
            _simlib().set_load(self.root, gpus, load)
        except OSError:
            return  # a kit without power files: the GPUs draw nothing, the server runs on
        self.last, self.sent_at = load, now
