"""`nvidia-smi -r` for the fake GPU kit: the GPU reset gpu_release's reset_stuck runs.

Only the reset is simulated (`nvidia-smi -r -i 0[,1...]`, `--gpu-reset --id=...`); any other
use says so and exits 2. FAKE_NVML_ROOT names the kit root. As nvidia-smi(1) describes
the reset, it refuses:

- a GPU that a process uses: one holding memory on it (an allocation of the kit) or having
  its device file open (a monitor);
- a GPU whose NVLink peers are not reset with it, unless it is Hopper or later on an
  NVSwitch fabric (individual reset); before Hopper, every GPU of the fabric counts as a peer.

A reset GPU's stuck memory (fakegpu.stick) is gone. The messages follow the real tool's.
"""
import os
import sys

from simlib import fakegpu

HOPPER = fakegpu.ARCH["hopper"]


def _device_users(root, gpus):
    """{gpu: [pid, ...]} of the processes (this one aside) that have ROOT/dev/nvidiaN open."""
    paths = {os.path.realpath(os.path.join(root, "dev", "nvidia%d" % g)): g for g in gpus}
    users = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            fds = os.listdir("/proc/%s/fd" % entry)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink("/proc/%s/fd/%s" % (entry, fd))
            except OSError:
                continue
            if target in paths:
                users.setdefault(paths[target], []).append(int(entry))
    return users


def peers(root, gpu, count):
    """The GPUs that must be reset together with GPU `gpu` (itself included)."""
    health = fakegpu.read_health(root, gpu)
    if health["nvswitch"]:
        if health["arch"] >= HOPPER:
            return {gpu}
        return {g for g in range(count) if fakegpu.read_health(root, g)["nvswitch"]}
    mask = int(health["nvlink_peers"])
    return {gpu} | {g for g in range(count) if mask >> g & 1}


def _parse(argv):
    reset, ids = False, None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ("-r", "--gpu-reset"):
            reset = True
        elif arg in ("-i", "--id") and args:
            ids = args.pop(0)
        elif arg.startswith("--id="):
            ids = arg.split("=", 1)[1]
        else:
            return None, None
    return reset, ids


def main(argv=None):
    reset, ids = _parse(sys.argv[1:] if argv is None else argv)
    if not reset:
        sys.stderr.write("fake nvidia-smi: only the GPU reset (-r -i N) is simulated\n")
        return 2
    root = os.environ.get("FAKE_NVML_ROOT")
    if not root:
        sys.stderr.write("fake nvidia-smi: FAKE_NVML_ROOT is not set\n")
        return 2
    status = fakegpu.read_status(root)
    count = len(status)
    gpus = list(range(count)) if ids is None else sorted({int(i) for i in ids.split(",")})
    bad = [g for g in gpus if not 0 <= g < count]
    if bad:
        sys.stderr.write("No devices were found matching the ID %s\n" % bad[0])
        return 6
    users = _device_users(root, gpus)
    problems = []
    for gpu in gpus:
        stuck = fakegpu.read_health(root, gpu)["stuck_mib"]
        if status[gpu]["used_mib"] > stuck or users.get(gpu):
            problems.append("GPU %s: In use by another client" % fakegpu.pci_bus_id(gpu))
            continue
        missing = sorted(peers(root, gpu, count) - set(gpus))
        if missing:
            problems.append("GPU %s: the following GPUs with NVLink connections to it must be reset with it: %s"
                            % (fakegpu.pci_bus_id(gpu), ", ".join(fakegpu.pci_bus_id(g) for g in missing)))
    if problems:
        sys.stdout.write("The following GPUs could not be reset:\n  %s\n\n" % "\n  ".join(problems))
        return 255
    fakegpu.reset(root, gpus)
    for gpu in gpus:
        sys.stdout.write("GPU %s was successfully reset.\n" % fakegpu.pci_bus_id(gpu))
    sys.stdout.write("All done.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
