"""Which GPU each rank uses, what NVML says about it, and holding its memory.

Fake GPUs: FAKE_NVML_ROOT names the fake kit's root; the real pynvml (loaded with the
fake libnvidia-ml through LD_LIBRARY_PATH) reads memory, simlib.fakegpu holds it.
Real GPUs (SGLang's --sim-real-gpu): torch allocates on cuda:rank; imported only there.
"""
import os
import sys

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
