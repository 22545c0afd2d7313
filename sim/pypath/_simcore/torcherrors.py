"""Exceptions whose tracebacks read like torch's (the module name is what prints)."""


class OutOfMemoryError(RuntimeError):
    """Printed as `torch.OutOfMemoryError: CUDA out of memory. ...`."""


OutOfMemoryError.__module__ = "torch"


def oom_message(gpu, need_gib, total_gib, free_gib, others_gib=0.0):
    """torch's CUDA OOM wording; names memory held by other processes when there is some."""
    msg = ("CUDA out of memory. Tried to allocate %.2f GiB. GPU %d has a total capacity of "
           "%.2f GiB of which %.2f GiB is free." % (need_gib, gpu, total_gib, max(free_gib, 0.0)))
    if others_gib > 0.05:
        msg += " Other processes have %.2f GiB memory in use." % others_gib
    return msg + (" Including non-PyTorch memory, this process has 0 bytes memory in use. "
                  "Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved "
                  "by PyTorch but unallocated.")
